#pragma once
// Renderings of `sp-opt analyze` (analysis/job_report.h): a one-screen text report, JSON for CI
// (keys documented in docs/analyze.md), a Chrome/Perfetto trace of the simulated step, and one
// self-contained html page. With two reports (BEFORE AFTER) the differences come first.
#include <string>
#include <vector>

#include "analysis/job_report.h"

namespace spopt {

// The headline figures of a report; the compare table lists them side by side.
struct Metric {
  std::string key;    // JSON key
  std::string label;  // text label
  enum Unit { Seconds, Bytes, Flops, Percent, Count } unit = Count;
  double value = 0;
};
std::vector<Metric> headlineMetrics(const JobReport& r);
std::string formatMetric(Metric::Unit unit, double value);
std::string humanSeconds(double s);

struct AnalyzeViewOptions {
  int64_t rank = -1;  // the rank to detail (-1: the slowest simulated rank, else the first)
  size_t top = 5;     // rows of the critical path and largest-items lists
};

std::string renderAnalyzeText(const JobReport& r, const AnalyzeViewOptions& o);
std::string renderAnalyzeCompareText(const JobReport& before, const JobReport& after, const AnalyzeViewOptions& o);
std::string renderAnalyzeJson(const JobReport& r);
std::string renderAnalyzeCompareJson(const JobReport& before, const JobReport& after);
std::string renderAnalyzeHtml(const std::vector<const JobReport*>& reports, const AnalyzeViewOptions& o);
// Chrome trace-event JSON of the simulated step: a process per rank, a thread per stream, complete
// events per op, flow arrows joining the members of each collective.
std::string renderAnalyzeTrace(const JobReport& r);

// The rank a view details.
const RankReport& detailRank(const JobReport& r, const AnalyzeViewOptions& o);
const RankTimeline* timelineOf(const JobReport& r, int64_t rank);

// Critical path grouped by op type and phase, largest first.
struct PathGroup {
  std::string type, phase;
  int64_t count = 0;
  double seconds = 0, wait_s = 0;
};
std::vector<PathGroup> criticalPathGroups(const StepTimeline& t);

}  // namespace spopt
