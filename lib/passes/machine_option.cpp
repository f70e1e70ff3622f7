#include "passes/machine_option.h"

#include <algorithm>

#include "analysis/machine_model.h"
#include "support/error.h"

namespace spopt {

std::vector<std::string> machinePresetChoices() {
  std::vector<std::string> out;
  for (std::string_view n : presetNames()) out.emplace_back(n);
  return out;
}

OptionSpec asLinkOption(OptionSpec spec) {
  spec.accepts = [](std::string_view text) {
    LinkSpec l;
    return parseLinkSpec(text, l).empty();
  };
  spec.expect = kLinkSpelling;
  return spec;
}

HardwareModel passMachineModel(const Job& job, const std::string& preset, const std::string& link, const std::string& pass) {
  LinkSpec l;
  if (std::string why = parseLinkSpec(link, l); !why.empty())
    throw InputError("--passes", "", pass + ": link=" + link + ": " + why);
  try {
    return machineModel(preset, l, int(std::max<size_t>(job.programs.size(), 1)), "--passes");
  } catch (const InputError& e) {
    throw InputError("--passes", "", pass + ": " + e.diagnostic().message);
  }
}

}  // namespace spopt
