#pragma once
// STAND-IN until branch host-preset lands (its machine_option.h replaces this file on merge, same
// API): the options of a pass that decides against the cost model, `preset=NAME` and
// `link=BW_GBPS[,LATENCY_US]` (the link replay's --link emulates: latency + bytes / bandwidth).
// Here `host` is refused (measuring needs the runtime, which host-preset's registration provides).
#include <string>
#include <vector>

#include "analysis/cost_model.h"
#include "passes/pass.h"

namespace spopt {

std::vector<std::string> machinePresetChoices();

template <class Opts>
std::vector<OptionSpec> machineOptions(std::string Opts::*preset, std::string Opts::*link) {
  return {bindOption(preset, "preset", "the cost model the pass decides by (docs/analyze.md)", false, machinePresetChoices()),
          bindOption(link, "link", "BW_GBPS[,LATENCY_US]: collectives take the link replay's --link emulates (empty: the preset's own)")};
}

HardwareModel passMachineModel(const Job& job, const std::string& preset, const std::string& link, const std::string& pass);

}  // namespace spopt
