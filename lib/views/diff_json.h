#pragma once
// The diff as JSON for CI scripts. Keys come in a fixed order (nlohmann::ordered_json), values
// of attributes and other raw keys as the JSON values they are; the layout is documented at
// renderDiffJson's definition.
#include <string>

#include "analysis/job_diff.h"

namespace spopt {

std::string renderDiffJson(const JobDiff& diff);

}  // namespace spopt
