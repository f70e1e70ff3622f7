#include "runtime/report.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <algorithm>
#include <set>

#include "analysis/collectives.h"
#include "io/atomic_file.h"
#include "ir/json_pointer.h"
#include "runtime/npy.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

}  // namespace

nlohmann::ordered_json jnum(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

double fromJnum(const nlohmann::ordered_json& v) {
  if (v.is_number()) return v.get<double>();
  std::string s = v.is_string() ? v.get<std::string>() : "nan";
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();
}

std::string shapeText(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

uint64_t tensorChecksum(const Tensor& t) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const unsigned char*>(t.raw());
  for (size_t i = 0, n = t.bytes(); i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

nlohmann::ordered_json summarize(const std::string& name, const Tensor& t) {
  double mn = std::numeric_limits<double>::infinity(), mx = -mn, sum = 0;
  int64_t nan = 0, inf = 0, finite = 0;
  // Typed loops (a replay summarises every persistable var: per-element valueAt was a tenth of a
  // ResNet replay's CPU time); the same values and summation order.
  auto scan = [&](const auto* p) {
    for (int64_t i = 0, n = t.numel(); i < n; ++i) {
      double v = double(p[i]);
      if (std::isnan(v)) ++nan;
      else if (std::isinf(v)) ++inf;
      else {
        mn = std::min(mn, v);
        mx = std::max(mx, v);
        sum += v;
        ++finite;
      }
    }
  };
  if (t.numel() > 0) switch (t.storage()) {
      case Storage::F32: scan(t.data<float>()); break;
      case Storage::F64: scan(t.data<double>()); break;
      case Storage::I64: scan(t.data<int64_t>()); break;
      case Storage::U8: scan(t.data<uint8_t>()); break;
    }
  nlohmann::ordered_json j;
  j["name"] = name;
  j["dtype"] = std::string(dtypeName(t.dtype()));
  j["shape"] = t.shape();
  j["checksum"] = hex64(tensorChecksum(t));
  j["min"] = finite ? jnum(mn) : nlohmann::ordered_json();
  j["max"] = finite ? jnum(mx) : nlohmann::ordered_json();
  j["mean"] = finite ? jnum(sum / double(finite)) : nlohmann::ordered_json();
  j["nan"] = nan;
  j["inf"] = inf;
  return j;
}

std::string summaryLine(const nlohmann::ordered_json& s, size_t name_width) {
  std::string name = s["name"].get<std::string>();
  std::string line = "  " + name + std::string(name_width > name.size() ? name_width - name.size() : 0, ' ');
  line += "  " + s["dtype"].get<std::string>() + " " + shapeText(s["shape"].get<std::vector<int64_t>>());
  line += "  checksum " + s["checksum"].get<std::string>();
  auto stat = [](const nlohmann::ordered_json& v) { return v.is_number() ? num(v.get<double>()) : v.is_null() ? "-" : v.get<std::string>(); };
  line += "  min " + stat(s["min"]) + "  max " + stat(s["max"]) + "  mean " + stat(s["mean"]);
  if (s["nan"].get<int64_t>() || s["inf"].get<int64_t>())
    line += "  nan " + std::to_string(s["nan"].get<int64_t>()) + "  inf " + std::to_string(s["inf"].get<int64_t>());
  return line;
}

Tolerance defaultTolerance(DType t) {
  Tolerance tol;
  if (t == DType::BFloat16) tol.rtol = 0x1.0p-6;
  if (t == DType::Float16) tol.rtol = 0x1.0p-9;
  return tol;
}

nlohmann::ordered_json compareTensors(const std::string& name, const Tensor& before, const Tensor& after, const Tolerance& tol) {
  nlohmann::ordered_json r;
  r["name"] = name;
  auto finish = [&](bool ok, std::string problem) {
    r["ok"] = ok;
    r["problem"] = std::move(problem);
    return r;
  };
  if (before.shape() != after.shape())
    return finish(false, "shape " + shapeText(after.shape()) + " differs from " + shapeText(before.shape()));
  if (before.dtype() != after.dtype())
    return finish(false, "dtype " + std::string(dtypeName(after.dtype())) + " differs from " + std::string(dtypeName(before.dtype())));
  double max_abs = 0, diff2 = 0, ref2 = 0;
  int64_t nonfinite_a = 0, nonfinite_b = 0, nonfinite_mismatch = 0, first = -1, argmax = -1;
  for (int64_t i = 0; i < before.numel(); ++i) {
    double b = before.valueAt(i), a = after.valueAt(i);
    bool fa = std::isfinite(a), fb = std::isfinite(b);
    nonfinite_a += !fa;
    nonfinite_b += !fb;
    if (!fa || !fb) {
      bool same = (std::isnan(a) && std::isnan(b)) || a == b;
      if (!same) {
        ++nonfinite_mismatch;
        if (first < 0) first = i;
      }
      continue;
    }
    double d = std::fabs(a - b);
    if (argmax < 0 || d > max_abs) {
      max_abs = d;
      argmax = i;
    }
    diff2 += d * d;
    ref2 += b * b;
    if (first < 0 && d > tol.atol + tol.rtol * std::fabs(b)) first = i;
  }
  double rel = std::sqrt(diff2) / (ref2 > 0 ? std::sqrt(ref2) : 1.0);
  if (ref2 == 0 && diff2 == 0) rel = 0;
  r["max_abs"] = max_abs;
  r["rel"] = rel;
  r["nonfinite_before"] = nonfinite_b;
  r["nonfinite_after"] = nonfinite_a;
  bool ok = nonfinite_mismatch == 0 && (rel <= tol.rtol || max_abs <= tol.atol);
  if (!ok) {
    int64_t at = first >= 0 ? first : argmax;
    if (at >= 0) r["first"] = {{"index", at}, {"before", jnum(before.valueAt(at))}, {"after", jnum(after.valueAt(at))}};
  }
  return finish(ok, nonfinite_mismatch ? std::to_string(nonfinite_mismatch) + " NaN/Inf values differ" : ok ? "" : "values differ");
}

void dumpRank(const std::string& dir, const RankRun& run) {
  std::filesystem::path folder = std::filesystem::path(dir) / ("rank" + std::to_string(run.rank));
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw InputError(dir, "", "cannot create dump folder: " + ec.message());
  for (const auto& [name, t] : run.kept) {
    std::string file;
    for (char c : name) file += c == '/' ? std::string("%2F") : std::string(1, c);
    writeNpy((folder / (file + ".npy")).string(), t);
  }
}

nlohmann::ordered_json eventsToJson(const std::vector<TraceEvent>& events) {
  auto arr = nlohmann::ordered_json::array();
  for (const auto& e : events) {
    nlohmann::ordered_json j{{"name", e.name}, {"op", e.index}, {"ts", e.start_us}, {"dur", e.dur_us}};
    if (e.stream != "default") j["stream"] = e.stream;
    if (e.collective) {
      j["ring"] = e.ring;
      j["bytes"] = e.bytes;
    }
    arr.push_back(std::move(j));
  }
  return arr;
}

std::string chromeTrace(const std::map<int64_t, nlohmann::ordered_json>& events_by_rank) {
  nlohmann::ordered_json out;
  auto& ev = out["traceEvents"] = nlohmann::ordered_json::array();
  for (const auto& [rank_key, events] : events_by_rank) {
    const int64_t rank = rank_key;  // captured below: clang 14 (the fuzz build) cannot capture a binding
    // A process per rank, a thread (track) per execution stream: the default stream keeps tid =
    // rank, stream k > 0 of the rank (in order of first op) gets rank + 1000 k.
    const std::string who = "rank " + std::to_string(rank);
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"tid", rank}, {"args", {{"name", who}}}});
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", rank}, {"args", {{"name", who}}}});
    std::map<std::string, int64_t> tids{{"default", rank}};
    auto tidOf = [&](const nlohmann::ordered_json& e) {
      std::string stream = e.contains("stream") ? e["stream"].get<std::string>() : "default";
      auto [it, fresh] = tids.try_emplace(stream, rank + 1000 * int64_t(tids.size()));
      if (fresh)
        ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", it->second},
                      {"args", {{"name", who + " stream " + stream}}}});
      return it->second;
    };
    for (const auto& e : events) {
      const int64_t tid = tidOf(e);
      bool coll = e.contains("ring");
      nlohmann::ordered_json args{{"op", e["op"]}};
      if (coll) {
        args["ring"] = e["ring"];
        args["bytes"] = e["bytes"];
      }
      ev.push_back({{"name", e["name"]}, {"cat", coll ? "collective" : "compute"}, {"ph", "X"}, {"pid", rank}, {"tid", tid},
                    {"ts", e["ts"]}, {"dur", e["dur"]}, {"args", args}});
    }
  }
  out["displayTimeUnit"] = "ms";
  return out.dump() + "\n";
}

std::vector<int64_t> replayRanks(const Job& job) {
  std::vector<int64_t> ranks;
  for (const auto& p : job.programs) ranks.push_back(p->rank);
  std::sort(ranks.begin(), ranks.end());
  std::set<int64_t> have(ranks.begin(), ranks.end());
  for (const auto& p : job.programs)
    for (const auto& [ring, ops] : collectivesByRing(*p)) {
      const ProcessGroup* g = job.group(ring);
      if (!g) continue;  // reported by the executor with the op's position
      for (int64_t r : g->ranks)
        if (!have.count(r))
          throw InputError(job.path, programPointer(p->position),
                           "rank " + std::to_string(p->rank) + " uses ring " + std::to_string(ring) + ", whose member rank " +
                               std::to_string(r) + " has no program in this file; replay needs every member");
    }
  if (ranks.empty()) throw InputError(job.path, "/programs", "the job has no programs to replay");
  return ranks;
}

}  // namespace spopt::rt
