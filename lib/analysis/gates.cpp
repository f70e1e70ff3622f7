#include "analysis/gates.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "support/error.h"

namespace spopt {
namespace {

using Json = nlohmann::json;

bool isBytes(Figure f) { return f == Figure::PeakMemory || f == Figure::ActivationMemory; }

struct Unit {
  const char* name;
  double scale;
};
constexpr Unit kByteUnits[] = {{"B", 1},      {"KB", 1e3},           {"MB", 1e6},           {"GB", 1e9},
                               {"TB", 1e12},  {"KiB", 1024.0},       {"MiB", 1048576.0},    {"GiB", 1073741824.0},
                               {"TiB", 1099511627776.0}};
constexpr Unit kTimeUnits[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};

// "40 GiB" -> (40, "GiB"); nullopt when the text does not start with a number.
std::optional<std::pair<double, std::string>> splitNumber(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) return std::nullopt;
  std::string unit(end);
  size_t a = unit.find_first_not_of(' '), b = unit.find_last_not_of(' ');
  unit = a == std::string::npos ? "" : unit.substr(a, b - a + 1);
  return std::make_pair(v, unit);
}

double jsonFigure(const Json& j, const std::string& pointer, const std::string& path) {
  Json::json_pointer ptr(pointer);
  if (!j.contains(ptr) || !j.at(ptr).is_number())
    throw InputError(path, pointer, "a saved analyze report needs a number here (write it with sp-opt analyze --format json)");
  return j.at(ptr).get<double>();
}

}  // namespace

const char* figureName(Figure f) {
  switch (f) {
    case Figure::PeakMemory: return "peak_memory";
    case Figure::ActivationMemory: return "activation_memory";
    case Figure::ExposedComm: return "exposed_comm";
    case Figure::StepTime: return "step_time";
  }
  return "?";
}

bool isPerRank(Figure f) { return f != Figure::StepTime; }

std::string figureValueText(Figure f, double v) {
  char buf[48];
  if (isBytes(f)) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (std::fabs(v) >= 1024 && u < 4) v /= 1024, ++u;
    std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  } else if (std::fabs(v) >= 1) {
    std::snprintf(buf, sizeof buf, "%.3f s", v);
  } else if (std::fabs(v) >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3f ms", v * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f us", v * 1e6);
  }
  return buf;
}

const RankFigures* JobFigures::rank(int64_t r) const {
  for (const RankFigures& f : ranks)
    if (f.rank == r) return &f;
  return nullptr;
}

JobFigures figuresOf(const JobReport& r) {
  JobFigures f;
  f.simulated = r.simulated;
  f.step_time = r.simulated ? r.timeline.step_s : 0;
  for (const RankReport& rr : r.ranks) {
    RankFigures rf;
    rf.rank = rr.rank;
    rf.value[size_t(Figure::PeakMemory)] = double(rr.memory.peak_bytes);
    rf.value[size_t(Figure::ActivationMemory)] = double(rr.activations.total_bytes);
    for (const RankTimeline& t : r.timeline.ranks)
      if (t.rank == rr.rank) {
        rf.value[size_t(Figure::ExposedComm)] = t.total.exposed_s;
        rf.value[size_t(Figure::StepTime)] = t.end_s;
      }
    f.ranks.push_back(rf);
  }
  return f;
}

JobFigures figuresOfAnalyzeJson(const std::string& path, const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw InputError(path, "", "not a JSON object");
  if (j.value("format", "") != "sp-opt.analyze")
    throw InputError(path, "/format", "a baseline is a job (format \"sp-opt.program\") or a report of sp-opt analyze --format json (format \"sp-opt.analyze\")");
  JobFigures f;
  f.simulated = j.contains("step");
  if (f.simulated) f.step_time = jsonFigure(j, "/step/step_s", path);
  if (!j.contains("ranks") || !j["ranks"].is_array()) throw InputError(path, "/ranks", "a saved analyze report needs its ranks array");
  for (size_t i = 0; i < j["ranks"].size(); ++i) {
    std::string at = "/ranks/" + std::to_string(i);
    RankFigures rf;
    rf.rank = int64_t(jsonFigure(j, at + "/rank", path));
    rf.value[size_t(Figure::PeakMemory)] = jsonFigure(j, at + "/memory/peak_bytes", path);
    rf.value[size_t(Figure::ActivationMemory)] = jsonFigure(j, at + "/activations/total_bytes", path);
    f.ranks.push_back(rf);
  }
  if (f.simulated && j["step"].contains("ranks") && j["step"]["ranks"].is_array())
    for (size_t i = 0; i < j["step"]["ranks"].size(); ++i) {
      std::string at = "/step/ranks/" + std::to_string(i);
      int64_t rank = int64_t(jsonFigure(j, at + "/rank", path));
      for (RankFigures& rf : f.ranks)
        if (rf.rank == rank) {
          rf.value[size_t(Figure::ExposedComm)] = jsonFigure(j, at + "/exposed_comm_s", path);
          rf.value[size_t(Figure::StepTime)] = jsonFigure(j, at + "/end_s", path);
        }
    }
  return f;
}

double parseFigureValue(Figure f, const std::string& text, const std::string& file, const std::string& where) {
  auto split = splitNumber(text);
  std::string kind = isBytes(f) ? "a size (bytes, or N KB|MB|GB|KiB|MiB|GiB|TiB)" : "a time (seconds, or N s|ms|us|ns)";
  if (!split || split->first < 0) throw InputError(file, where, "\"" + text + "\" is not " + kind);
  if (split->second.empty()) return split->first;
  if (isBytes(f)) {
    for (const Unit& u : kByteUnits)
      if (split->second == u.name) return split->first * u.scale;
  } else {
    for (const Unit& u : kTimeUnits)
      if (split->second == u.name) return split->first * u.scale;
  }
  throw InputError(file, where, "\"" + text + "\": unknown unit \"" + split->second + "\"; " + figureName(f) + " is " + kind);
}

double parsePercent(const std::string& text, const std::string& file, const std::string& where) {
  auto split = splitNumber(text);
  if (!split || split->first < 0 || !(split->second.empty() || split->second == "%"))
    throw InputError(file, where, "\"" + text + "\" is not a percentage (\"5%\" or 5)");
  return split->first / 100;
}

Budgets parseBudgets(const std::string& path, const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InputError(path, "", "not valid JSON");
  if (!j.is_object()) throw InputError(path, "", "a budgets file is a JSON object");
  Budgets b;
  auto textOf = [&](const std::string& key) {
    const Json& v = j[key];
    if (v.is_number()) return v.dump();
    if (v.is_string()) return v.get<std::string>();
    throw InputError(path, "/" + key, "must be a number or a string such as \"40 GiB\", \"2 ms\" or \"5%\"");
  };
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    bool known = false;
    for (Figure f : kFigures)
      if (key == figureName(f)) {
        b.limit[size_t(f)] = parseFigureValue(f, textOf(key), path, "/" + key);
        known = true;
      }
    if (known) continue;
    if (key == "max_regression") b.max_regression = parsePercent(textOf(key), path, "/" + key);
    else if (key == "baseline" || key == "preset") {
      if (!it->is_string()) throw InputError(path, "/" + key, "must be a string");
      (key == "baseline" ? b.baseline : b.preset) = it->get<std::string>();
    } else
      throw InputError(path, "/" + key, "unknown key; a budgets file has peak_memory, activation_memory, exposed_comm, step_time, baseline, max_regression, preset");
  }
  return b;
}

std::vector<GateResult> evaluateGates(const JobFigures& now, const Budgets& budgets, const JobFigures* baseline) {
  std::vector<GateResult> out;
  auto who = [](Figure f, int64_t rank) { return std::string(figureName(f)) + (rank >= 0 ? " rank " + std::to_string(rank) : ""); };
  // A time below a nanosecond is the simulator's rounding, not a regression.
  auto slack = [](Figure f) { return isBytes(f) ? 0.0 : 1e-9; };
  // base_rank: the rank's baseline figures (null for step_time); has_base: the baseline has the figure.
  auto add = [&](Figure f, int64_t rank, double value, const RankFigures* base_rank, bool has_base) {
    if (auto limit = budgets.limit[size_t(f)]) {
      GateResult g{f, rank, false, value, *limit, 0, value > *limit + slack(f), ""};
      g.message = who(f, rank) + ": " + figureValueText(f, value) + (g.breached ? " over the budget " : " within the budget ") +
                  figureValueText(f, *limit);
      out.push_back(g);
    }
    if (has_base && budgets.max_regression) {
      double base = rank < 0 ? baseline->step_time : base_rank->value[size_t(f)];
      double limit = base * (1 + *budgets.max_regression);
      GateResult g{f, rank, true, value, limit, base, value > limit + slack(f), ""};
      char change[64];
      if (base > 0) std::snprintf(change, sizeof change, "%+.1f%%", 100 * (value - base) / base);
      else std::snprintf(change, sizeof change, "%s", value > base ? "up from nothing" : "+0.0%");
      char allowed[32];
      std::snprintf(allowed, sizeof allowed, "%g%%", 100 * *budgets.max_regression);
      g.message = who(f, rank) + ": " + figureValueText(f, value) + ", baseline " + figureValueText(f, base) + " (" + change +
                  (g.breached ? ", over the " : ", within the ") + allowed + " allowed regression)";
      out.push_back(g);
    }
  };
  for (Figure f : kFigures) {
    if ((f == Figure::ExposedComm || f == Figure::StepTime) && !now.simulated) continue;
    bool base_ok = baseline && (isBytes(f) || baseline->simulated);
    if (!isPerRank(f)) {
      add(f, -1, now.step_time, nullptr, base_ok);
      continue;
    }
    for (const RankFigures& r : now.ranks) {
      const RankFigures* base_rank = base_ok ? baseline->rank(r.rank) : nullptr;
      add(f, r.rank, r.value[size_t(f)], base_rank, base_rank != nullptr);
    }
  }
  return out;
}

}  // namespace spopt
