#pragma once
// Textual pass pipelines, as on the command line: `a,b{opt=val,opt2=val},c`.
// The empty string is the empty pipeline (rewrite then only loads, verifies and writes back).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "passes/registry.h"

namespace spopt {

// The sequence-parallel chain, in order. Later passes (memory optimisation, overlap) are
// appended here and nowhere else.
inline constexpr std::string_view kDefaultPipeline = "fuse-allreduce-split";

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

}  // namespace spopt
