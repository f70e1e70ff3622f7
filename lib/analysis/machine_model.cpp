#include "analysis/machine_model.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "support/error.h"

namespace spopt {
namespace {

struct HostCache {
  std::mutex mu;
  HostMeasurer measurer;
  std::map<int, HostMeasurement> by_ranks;
};

HostCache& hostCache() {
  static HostCache c;
  return c;
}

// A number of the link's spelling: finite, >= 0, the whole part.
bool linkNumber(std::string_view part, double& v) {
  std::string s(part);
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && end && !*end && std::isfinite(v) && v >= 0;
}

std::string linkFigureText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string parseLinkSpec(std::string_view text, LinkSpec& out) {
  LinkSpec l;
  if (text.empty()) {
    out = l;
    return "";
  }
  size_t comma = text.find(',');
  if (!linkNumber(text.substr(0, comma), l.gbps)) return "BW_GBPS must be a number >= 0";
  if (l.gbps <= 0) return "BW_GBPS must be > 0";
  if (comma != std::string_view::npos && !linkNumber(text.substr(comma + 1), l.latency_us))
    return "LATENCY_US must be a number >= 0";
  out = l;
  return "";
}

void applyLink(HardwareModel& m, const LinkSpec& link) {
  if (!link.on()) return;
  m.bus_bw = link.gbps * 1e9;
  m.latency_s = link.latency_us * 1e-6;
  m.step_latency_s = 0;
  m.name += " + link " + linkFigureText(link.gbps) + "," + linkFigureText(link.latency_us);
}

void setHostMeasurer(HostMeasurer measurer) {
  HostCache& c = hostCache();
  std::lock_guard lk(c.mu);
  c.measurer = std::move(measurer);
  c.by_ranks.clear();
}

HardwareModel machineModel(std::string_view preset, const LinkSpec& link, int ranks, const std::string& source) {
  HardwareModel m;
  if (preset == "host") {
    HostCache& c = hostCache();
    std::lock_guard lk(c.mu);
    if (!c.measurer) throw InputError(source, "", "preset host needs a measurement of this machine, which this program cannot make");
    auto it = c.by_ranks.find(ranks);
    if (it == c.by_ranks.end()) it = c.by_ranks.emplace(ranks, c.measurer(ranks)).first;
    m = hostModel(it->second);
  } else if (auto p = presetModel(preset)) {
    m = *p;
  } else {
    std::string known;
    for (std::string_view n : presetNames()) known += (known.empty() ? "" : ", ") + std::string(n);
    throw InputError(source, "", "unknown preset \"" + std::string(preset) + "\"; valid presets: " + known);
  }
  applyLink(m, link);
  return m;
}

}  // namespace spopt
