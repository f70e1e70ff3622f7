#pragma once
// Budgets as CI gates: the figures of a job that CI holds a line on (peak memory and activation
// memory per rank, exposed communication per rank, step time), the budgets file that states the
// lines, and the comparison against limits and against a baseline's figures.
//
// Budgets file (JSON, conventionally JOB.budgets.json next to the job, as size-limit keeps
// .size-limit.json next to a bundle):
//   { "peak_memory": "40 GiB", "activation_memory": "12 GiB", "exposed_comm": "2 ms",
//     "step_time": "180 ms", "baseline": "main.analyze.json", "max_regression": "5%",
//     "preset": "h100-nvlink" }
// Every key is optional. Sizes: a number of bytes or "N B|KB|MB|GB|KiB|MiB|GiB|TiB"; times: a
// number of seconds or "N s|ms|us|ns"; max_regression: "N%" or a number of percent. A baseline
// path is relative to the budgets file.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/job_report.h"

namespace spopt {

enum class Figure { PeakMemory, ActivationMemory, ExposedComm, StepTime };
inline constexpr std::array<Figure, 4> kFigures{Figure::PeakMemory, Figure::ActivationMemory, Figure::ExposedComm, Figure::StepTime};
const char* figureName(Figure f);  // "peak_memory", ...
bool isPerRank(Figure f);          // every figure but step_time
std::string figureValueText(Figure f, double value);  // "1.50 GiB", "2.31 ms"

struct RankFigures {
  int64_t rank = 0;
  std::array<double, 4> value{};  // by Figure (step_time: the rank's end)
};
struct JobFigures {
  double step_time = 0;
  bool simulated = false;  // exposed_comm and step_time known
  std::vector<RankFigures> ranks;
  const RankFigures* rank(int64_t r) const;
};
JobFigures figuresOf(const JobReport& r);
// The figures of a saved `sp-opt analyze --format json` report (format "sp-opt.analyze").
// Throws InputError naming `path` and the JSON pointer of a missing or mistyped figure.
JobFigures figuresOfAnalyzeJson(const std::string& path, const std::string& text);

struct Budgets {
  std::array<std::optional<double>, 4> limit;  // by Figure
  std::optional<double> max_regression;        // a fraction: 0.05 for 5%
  std::string baseline;                        // a job or a saved analyze report
  std::string preset;                          // hardware model; empty: the command's default
};
// A budgets file's text. Throws InputError naming `path` and the JSON pointer of a bad key.
Budgets parseBudgets(const std::string& path, const std::string& text);
// One value as the file or the command line writes it: "40 GiB", "2 ms", "5%". `where` names
// the option or JSON pointer in the error. Throws InputError.
double parseFigureValue(Figure f, const std::string& text, const std::string& file, const std::string& where);
double parsePercent(const std::string& text, const std::string& file, const std::string& where);

struct GateResult {
  Figure figure = Figure::PeakMemory;
  int64_t rank = -1;  // -1: the job (step_time)
  bool regression = false;  // against the baseline; else against the budget
  double value = 0, limit = 0, baseline = 0;
  bool breached = false;
  std::string message;  // "peak_memory rank 1: 1.20 GiB over the budget 1.00 GiB"
};
// Every gate the budgets and the baseline set, in figure order, then rank order.
std::vector<GateResult> evaluateGates(const JobFigures& now, const Budgets& budgets, const JobFigures* baseline);

}  // namespace spopt
