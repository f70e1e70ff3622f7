#pragma once
// Replay's memory budget: before any buffer is allocated, the peak bytes of the ranks this process
// hosts (analysis/memory.h, from the buffer liveness) must fit the memory the machine has, or the
// limit the user gave. A job declaring a 4 TiB var is refused with the var named, instead of
// dying in the allocator or, worse, being killed by the OOM killer half way through.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace spopt::rt {

struct MemoryBudget {
  int64_t limit = 0;   // bytes; <= 0: no limit
  std::string source;  // how the limit was set, for the message ("--memory-limit", "MemAvailable")
};

// The machine's available memory: MemAvailable of /proc/meminfo, else sysconf's available pages;
// nullopt when neither can be read.
std::optional<int64_t> availableMemory();

// "8G", "512M", "1.5GiB", "4096" (bytes; K/M/G/T suffixes are powers of 1024, an optional "B" or
// "iB" may follow). nullopt when malformed, negative or past int64.
std::optional<int64_t> parseByteSize(std::string_view text);

// "1.5 GiB": bytes with a binary unit, up to EiB.
std::string bytesText(int64_t bytes);

// The bytes replaying `ranks` of `jobs` needs at once: for each rank, the sum over jobs of its
// program's peak (a job whose program for that rank is missing adds nothing).
struct MemoryNeed {
  int64_t total = 0;          // clamped at the int64 maximum
  int64_t worst_rank = -1;    // the rank with the largest peak
  int64_t worst_peak = 0;
  const Var* largest = nullptr;  // the largest buffer live at that rank's peak
  int64_t largest_bytes = 0;
};
MemoryNeed memoryNeed(const std::vector<const Job*>& jobs, const std::vector<int64_t>& ranks);

// Throws InputError (exit 2) naming the rank and its largest var when the need passes the limit;
// returns the need (empty when there are no jobs).
MemoryNeed checkMemoryBudget(const std::vector<const Job*>& jobs, const std::vector<int64_t>& ranks, const MemoryBudget& budget);

}  // namespace spopt::rt
