#pragma once
// What replay and check say about tensors: summaries (checksum and stats), comparisons with a
// tolerance, .npy dumps and Chrome trace-event JSON. Results travel between processes (mpi) as JSON.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/executor.h"
#include "runtime/tensor.h"

namespace spopt::rt {

// JSON has no NaN or infinity: a double as a JSON number, or "nan" / "inf" / "-inf"; and back.
nlohmann::ordered_json jnum(double v);
double fromJnum(const nlohmann::ordered_json& v);
std::string shapeText(const std::vector<int64_t>& shape);  // "[2,5]"

// FNV-1a 64 over the tensor's stored bytes: equal checksums mean bitwise-equal values.
uint64_t tensorChecksum(const Tensor& t);

// {name, dtype, shape, checksum (16 hex digits), min, max, mean, nan, inf}
nlohmann::ordered_json summarize(const std::string& name, const Tensor& t);
// "  z  float32 [2,5]  checksum 0123456789abcdef  min ... max ... mean ..."
std::string summaryLine(const nlohmann::ordered_json& s, size_t name_width);

struct Tolerance {
  double rtol = 1e-5;  // on the relative norm ||a-b|| / ||b||
  double atol = 1e-6;  // on the largest absolute difference
};
// check's default for a var of dtype `t`: the above for float32 and float64 (reduction-order
// differences are ~1e-7); for float16 and bfloat16, whose stored values are rounded
// (runtime/half.h), an rtol of two units in the last place (2^-9 and 2^-6: a rewrite that sums in
// another order flips some roundings by one unit), same atol. A wrong chunk is off by O(1) in any dtype.
Tolerance defaultTolerance(DType t);
// Compares `after` (a) with `before` (b, the reference). A var passes when its non-finite values
// agree position by position and either ||a-b||/||b|| <= rtol or max |a-b| <= atol.
// {name, ok, problem, max_abs, rel, nonfinite_a, nonfinite_b, first: {index, before, after}}
nlohmann::ordered_json compareTensors(const std::string& name, const Tensor& before, const Tensor& after, const Tolerance& tol);

// DIR/rankR/VAR.npy for every kept var ('/' in a name becomes '%2F').
void dumpRank(const std::string& dir, const RankRun& run);

nlohmann::ordered_json eventsToJson(const std::vector<TraceEvent>& events);
// Chrome trace-event JSON: a process (pid) per rank, a track (tid) per execution stream of it,
// complete events ("ph":"X") per op; collective spans carry their ring and bytes.
std::string chromeTrace(const std::map<int64_t, nlohmann::ordered_json>& events_by_rank);

// Every rank a replay of `job` runs (its programs), checked: every member of a group that a
// program uses must have a program. Throws InputError.
std::vector<int64_t> replayRanks(const Job& job);

}  // namespace spopt::rt
