#pragma once
// The text form of a job: one op per line, in the spirit of Paddle's program printout and XLA's HLO
// text, for people (reading a rewrite, writing a pass test) rather than for exporters.
//
//   sp-opt.program text 1
//   world_size 2
//   group ring_id=0 ranks=[0,1]
//   mesh #mp = {"shape":[2],"process_ids":[0,1],"dim_names":["mp"]}
//   dist #default = {process_mesh=#mp, chunk_id=0, execution_stream="default"}
//
//   rank 0 fetch=[z] {
//     block 0 parent=-1 {
//       var y : float32[8,4] dist={process_mesh=#mp, dims_mapping=[-1,-1], chunk_id=0}
//       {Out=[y_sum]} = c_allreduce_sum(X=[y]) {ring_id=0, op_role=0} dist=#default
//     }
//   }
//
// Attribute and dist-attribute values are compact JSON (ints stay ints, 1.0 stays 1.0). `#name`
// aliases stand for a process mesh (any dist value named process_mesh) or for a whole op dist_attr
// that several ops share; the writer names them after the mesh's dim_names and the stream. The
// grammar, the reader and what survives: docs/text-format.md. Unknown JSON keys of the job, groups,
// programs, blocks, vars and ops are not shown (attrs and dist_attrs are shown whole).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/ir.h"

namespace spopt {

class AtomicFile;

// The first line of every text job (then the format version): how loaders tell it from JSON.
inline constexpr std::string_view kTextMagic = "sp-opt.program text";

struct TextWriteOptions {
  std::optional<int64_t> rank;  // print only this rank's program (the header stays whole)
  bool fold_ranks = false;      // consecutive ranks with the same program as one `rank A..B`
};

std::string jobToText(const Job& job, const TextWriteOptions& opts = {});
// Into an output the caller commits (OutputTransaction).
void writeJobText(const Job& job, AtomicFile& out, const TextWriteOptions& opts = {});
// Atomic (temp + rename); "-" = stdout.
void writeJobTextFile(const Job& job, const std::string& path, const TextWriteOptions& opts = {});
// True when `path` names a text job by its extension (.sptxt).
bool isTextJobPath(std::string_view path);

// A name, key or op type the text spells without quotes: [A-Za-z0-9_.@-]+.
bool isTextWord(std::string_view s);
bool isTextWordChar(char c);

}  // namespace spopt
