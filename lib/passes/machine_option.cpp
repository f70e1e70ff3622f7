// STAND-IN until branch host-preset lands: see machine_option.h.
#include "passes/machine_option.h"

#include <cstdlib>

#include "support/error.h"

namespace spopt {

std::vector<std::string> machinePresetChoices() {
  std::vector<std::string> out;
  for (std::string_view n : presetNames()) out.emplace_back(n);
  return out;
}

HardwareModel passMachineModel(const Job&, const std::string& preset, const std::string& link, const std::string& pass) {
  auto model = presetModel(preset);
  if (!model) throw InputError("--passes", "", pass + ": preset " + preset + " is not available in this build");
  if (link.empty()) return *model;
  char* end = nullptr;
  double gbps = std::strtod(link.c_str(), &end);
  double latency_us = *end == ',' ? std::strtod(end + 1, &end) : 0;
  if (!(gbps > 0) || *end) throw InputError("--passes", "", pass + ": link=" + link + ": expected BW_GBPS[,LATENCY_US]");
  model->bus_bw = gbps * 1e9;
  model->latency_s = latency_us * 1e-6;
  model->step_latency_s = 0;
  return *model;
}

}  // namespace spopt
