#pragma once
// The options of a pass that schedules against the cost model, declared alike by each such pass
// (overlap-collectives, decompose-collective-matmul): `preset=NAME` (a cost_model.h preset, or
// `host`: this machine, measured, as `analyze --preset host` models replay) and `link=BW_GBPS[,
// LATENCY_US]` (the link replay's --link emulates; analysis/machine_model.h). A CPU replay with
// --link is then scheduled for the machine it runs on.
//
// In a pass file:
//   struct Options { std::string preset = "h100-nvlink", link; ... };
//   info.options = machineOptions(&Options::preset, &Options::link);  // then the pass's own
//   HardwareModel model = passMachineModel(job, opts.preset, opts.link, "overlap-collectives");
#include <string>
#include <vector>

#include "analysis/cost_model.h"
#include "passes/pass.h"

namespace spopt {

// Every preset name, host included.
std::vector<std::string> machinePresetChoices();
// Gives a string option the link's grammar: a malformed value is a one-line parse error.
OptionSpec asLinkOption(OptionSpec spec);

template <class Opts>
std::vector<OptionSpec> machineOptions(std::string Opts::*preset, std::string Opts::*link) {
  return {bindOption(preset, "preset",
                     "the cost model the pass decides by: a GPU preset, or host (this machine, measured, as replay runs; "
                     "docs/analyze.md)",
                     false, machinePresetChoices()),
          asLinkOption(bindOption(link, "link",
                                  "BW_GBPS[,LATENCY_US]: collectives take the link replay's --link emulates (empty: the "
                                  "preset's own)"))};
}

// The model the options name, for `job`: host is measured with as many rank threads as the job
// has programs (replay's local backend runs them so). Options were checked when parsed; an error
// left (host unmeasurable here) is InputError("--passes", "", "PASS: ...").
HardwareModel passMachineModel(const Job& job, const std::string& preset, const std::string& link, const std::string& pass);

}  // namespace spopt
