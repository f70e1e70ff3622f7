#pragma once
// Builds a format-v1 job from programs the PIR readers made (the job assembler of `sp-opt import`
// does this for users; the unit tests need it without the CLI).
#include <string>
#include <utility>
#include <vector>

#include "io/loader.h"
#include "io/pir/pir_common.h"

namespace spopt::test {

inline std::string pirJobText(const std::vector<pir::ojson>& programs,
                              const std::vector<std::pair<int64_t, std::vector<int64_t>>>& rings = {}) {
  pir::ojson job = {{"format", "sp-opt.program"}, {"version", 1}, {"world_size", programs.size()}};
  job["process_groups"] = pir::ojson::array();
  for (const auto& [id, ranks] : rings) job["process_groups"].push_back({{"ring_id", id}, {"ranks", ranks}});
  job["programs"] = pir::ojson::array();
  for (size_t r = 0; r < programs.size(); ++r) {
    pir::ojson p = {{"rank", r}};
    for (auto it = programs[r].begin(); it != programs[r].end(); ++it) p[it.key()] = it.value();
    job["programs"].push_back(std::move(p));
  }
  return job.dump();
}

}  // namespace spopt::test
