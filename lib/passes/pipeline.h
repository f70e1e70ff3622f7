#pragma once
// Textual pass pipelines, as on the command line: `a,b{opt=val,opt2=val},c`.
// The empty string is the empty pipeline (rewrite then only loads, verifies and writes back).
// A value may hold commas: a piece with no '=' that names no option continues the value before
// it (`overlap-collectives{preset=host,link=0.02,100}`).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "passes/registry.h"

namespace spopt {

// The seed's whole chain, in order: (1) fuse all-reduce + split into reduce-scatter, (2) trade
// communication for memory (re-gather column inputs in backward), (3) overlap communication with
// computation: the forward's, which nothing else is independent of, by cutting an all-gather or
// reduce-scatter next to a matmul into a ring of chunks where the cost model says it pays
// (decompose-collective-matmul, as XLA's windowed einsum and PyTorch's async TP), then the
// backward's by scheduling (overlap-collectives). Also the alias `sequence-parallel`, and the
// default pipeline.
inline constexpr std::string_view kSequenceParallelPipeline =
    "fuse-allreduce-split,regather-activations,decompose-collective-matmul,overlap-collectives";
inline constexpr std::string_view kDefaultPipeline = kSequenceParallelPipeline;

// A name that stands for a whole pipeline, usable wherever a pass name is (without options):
// `--passes=sequence-parallel,verify-x` expands in place.
struct PipelineAlias {
  std::string_view name;
  std::string_view expansion;
  std::string_view description;
};
inline constexpr PipelineAlias kPipelineAliases[] = {
    {"sequence-parallel", kSequenceParallelPipeline,
     "the sequence-parallel chain, under the name of Paddle's auto_parallel_sequence_parallel_optimization pass"},
};
const PipelineAlias* findPipelineAlias(std::string_view name);  // null when not an alias

struct ConfiguredPass {
  const PassInfo* info = nullptr;
  OptionValues options;                              // every declared option, defaults filled
  std::vector<std::pair<std::string, std::string>> given;  // as written, in order
  std::string text() const;                          // canonical: name{opt=val,...}
};
using Pipeline = std::vector<ConfiguredPass>;

// Throws InputError(source, "", message) on an unknown pass or option, a bad value, or bad syntax;
// the message lists the valid names. `source` names where the text came from ("--passes").
Pipeline parsePipeline(std::string_view text, const PassRegistry& registry,
                       const std::string& source = "--passes");
std::string pipelineText(const Pipeline& p);
// Gives every pass of `p` that declares option `name`, and was not given it in its braces, `value`
// as if written there (rewrite's --preset and --link: the whole chain scheduled for one machine).
// Returns how many passes it set; a bad value throws InputError(source, "", ...).
size_t setPipelineOption(Pipeline& p, const std::string& name, std::string_view value, const std::string& source);

}  // namespace spopt
