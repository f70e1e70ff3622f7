#pragma once
// A pass's statistics, declared once with their type and unit (as MLIR's Pass::Statistic): the
// declaration is what `sp-opt passes` lists and what `--stats` / `--report` print under, so one
// quantity has one name whichever pass measures it (the worst rank's peak memory is
// `peak-bytes-before` / `peak-bytes-after` in every pass, see peakBytesStatistics).
//
// In a pass file:
//   struct Stats { Statistic regathers; Statistic peak_before, peak_after; };
//   info.statistics = {bindStatistic(&Stats::regathers, "regathers", StatUnit::Count, "help"), ...};
//   ... in run(): stats.regathers += n; ctx.publish(stats);
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <vector>

namespace spopt {

enum class StatUnit { Count, Bytes, Nanoseconds };
const char* statUnitName(StatUnit u);  // "count", "bytes", "ns"

// One measured quantity of a pass: reported only once measured, so a pass that found nothing to
// measure prints no figure rather than a misleading zero.
class Statistic {
 public:
  Statistic& operator=(int64_t v) {
    value_ = v;
    return *this;
  }
  Statistic& operator+=(int64_t v) {
    value_ = value_.value_or(0) + v;
    return *this;
  }
  void raiseTo(int64_t v) { value_ = std::max(value_.value_or(v), v); }  // the maximum seen
  const std::optional<int64_t>& value() const { return value_; }

 private:
  std::optional<int64_t> value_;
};

struct StatisticSpec {
  std::string name;           // lower-case-with-dashes: the key in --stats and --report
  const char* type = "int";   // every statistic is a 64-bit integer (bytes, counts, nanoseconds)
  StatUnit unit = StatUnit::Count;
  std::string help;
  // The statistics struct the binding reads (PassContext::publish checks it) and the reader.
  std::type_index owner = typeid(void);
  std::function<const Statistic&(const void* stats)> read = nullptr;
};

// Declares a statistic bound to a member of the pass's statistics struct: its name, unit and
// description are written once, here.
template <class Stats>
StatisticSpec bindStatistic(Statistic Stats::*member, std::string name, StatUnit unit, std::string help) {
  StatisticSpec spec;
  spec.name = std::move(name);
  spec.unit = unit;
  spec.help = std::move(help);
  spec.owner = typeid(Stats);
  spec.read = [member](const void* stats) -> const Statistic& { return static_cast<const Stats*>(stats)->*member; };
  return spec;
}

// The worst rank's peak memory (analysis/memory.h's profileMemory) before and after a pass: the
// declaration every pass that measures it shares.
template <class Stats>
std::vector<StatisticSpec> peakBytesStatistics(Statistic Stats::*before, Statistic Stats::*after) {
  return {bindStatistic(before, "peak-bytes-before", StatUnit::Bytes, "the worst rank's peak memory before the pass"),
          bindStatistic(after, "peak-bytes-after", StatUnit::Bytes, "the worst rank's peak memory after the pass")};
}

}  // namespace spopt
