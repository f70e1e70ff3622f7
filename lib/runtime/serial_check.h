#pragma once
// Serial equivalence (`check SERIAL DIST --serial`): does a distributed program compute what the
// serial one does? Both replay on the same global inputs (inputs.h: every rank's input is its
// slice of one global tensor, so the serial job's inputs ARE the global tensors); then the loss
// and every parameter after the step are compared, the distributed job's shards gathered into
// global tensors by their dist_attr. This is the check an auto-parallel partitioner's CI needs.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/executor.h"
#include "runtime/report.h"

namespace spopt::rt {

// How the distributed loss makes the model's loss: the fetched loss of one rank per distinct
// shard of the program's inputs (a data-parallel batch split, a sequence-parallel split), summed
// (each rank fetches its share, as `gen` writes it) or averaged (each fetches its local mean).
enum class LossReduce { Sum, Mean };

// What a rank sends back for the comparison: its fetched and persistable vars, as JSON (values in
// float64, exact for every replay storage), so that it travels between mpi processes.
std::string encodeKept(const RankRun& run);

struct SerialComparison {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();  // compareTensors rows, loss first
  size_t parameters = 0;
  double loss_serial = 0, loss_dist = 0;
  size_t loss_shards = 0;  // ranks whose losses made the distributed loss
};

// Throws InputError unless `serial` can be the serial side: one program that fetches its loss.
void checkSerialJob(const Job& serial);

// `serial_run`: the serial job's one rank; `dist_kept`: encodeKept of every rank of `dist`.
// Throws InputError (naming `dist_path`) when the jobs cannot be compared: SERIAL with more than
// one program, no fetched loss, a parameter no rank holds or whose shards do not cover it.
SerialComparison compareWithSerial(const Job& serial, const RankRun& serial_run, const Job& dist,
                                   const std::map<int64_t, std::string>& dist_kept, const Tolerance& tol,
                                   LossReduce reduce, const std::string& dist_path);

}  // namespace spopt::rt
