#include "runtime/memory_budget.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "analysis/memory.h"
#include "ir/json_pointer.h"
#include "support/checked_size.h"
#include "support/error.h"

namespace spopt::rt {

std::optional<int64_t> availableMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return checkedMul(kib, 1024);
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return checkedMul(pages, page);
  return std::nullopt;
}

std::optional<int64_t> parseByteSize(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  std::string number(text.substr(0, i));
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string_view unit = text.substr(i);
  double scale = 1;
  if (!unit.empty()) {
    const std::string_view prefixes = "KMGTPE";
    size_t p = prefixes.find(char(unit[0] & ~0x20));
    if (p != std::string_view::npos) {
      scale = std::ldexp(1.0, 10 * int(p + 1));
      unit.remove_prefix(1);
      if (unit == "i" || unit == "iB" || unit == "ib") unit = {};
    }
    if (unit == "B" || unit == "b") unit = {};
    if (!unit.empty()) return std::nullopt;
  }
  double bytes = std::floor(value * scale);
  if (bytes >= std::ldexp(1.0, 63)) return std::nullopt;
  return int64_t(bytes);
}

std::string bytesText(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double b = double(bytes);
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

MemoryNeed memoryNeed(const std::vector<const Job*>& jobs, const std::vector<int64_t>& ranks) {
  MemoryNeed need;
  for (int64_t rank : ranks) {
    int64_t peak = 0;
    const Var* largest = nullptr;
    int64_t largest_bytes = -1;
    for (const Job* job : jobs) {
      const Program* p = job->program(rank);
      if (!p || p->blocks.empty()) continue;
      MemoryProfile m = profileMemory(*p, 1);
      peak = saturatingAdd(peak, m.peak_bytes);
      if (!m.largest_at_peak.empty() && m.largest_at_peak.front().second > largest_bytes)
        std::tie(largest, largest_bytes) = m.largest_at_peak.front();
    }
    need.total = saturatingAdd(need.total, peak);
    if (need.worst_rank < 0 || peak > need.worst_peak) {
      need.worst_rank = rank;
      need.worst_peak = peak;
      need.largest = largest;
      need.largest_bytes = largest_bytes;
    }
  }
  return need;
}

MemoryNeed checkMemoryBudget(const std::vector<const Job*>& jobs, const std::vector<int64_t>& ranks, const MemoryBudget& budget) {
  if (jobs.empty()) return {};
  MemoryNeed need = memoryNeed(jobs, ranks);
  if (budget.limit <= 0 || need.total <= budget.limit) return need;
  std::string what = "replay needs " + bytesText(need.total) + " for " + std::to_string(ranks.size()) +
                     (ranks.size() == 1 ? " rank" : " ranks") + " (rank " + std::to_string(need.worst_rank) + " peaks at " +
                     bytesText(need.worst_peak);
  std::string pointer;
  if (need.largest) {
    std::string shape;
    for (int64_t d : need.largest->shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    what += "; its largest buffer, var \"" + std::string(need.largest->name) + "\" " + std::string(dtypeName(need.largest->dtype)) +
            "[" + shape + "], is " + bytesText(need.largest_bytes);
    pointer = varPointer(*need.largest);
  }
  what += "), over the memory limit of " + bytesText(budget.limit) + " (" + budget.source + ")";
  const Job* job = need.largest ? need.largest->block->program->job : jobs.front();
  throw InputError(job->path, pointer, what);
}

}  // namespace spopt::rt
