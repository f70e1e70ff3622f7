#pragma once
// The machine a schedule is made for or a step is predicted on: a preset by name (cost_model.h),
// `host` (this machine, measured), and the emulated link that replay's `--link BW_GBPS[,LATENCY_US]`
// adds. One place for the link's spelling and for building the model, so that `analyze --preset
// --link`, replay's `--link` and every pass that schedules against the cost model (`preset=`,
// `link=`; passes/machine_option.h) mean the same machine.
#include <functional>
#include <string>
#include <string_view>

#include "analysis/cost_model.h"

namespace spopt {

// A link as replay emulates it: a collective takes at least latency + wire bytes / bandwidth from
// the moment its last member arrived. Off when gbps is 0.
struct LinkSpec {
  double gbps = 0;  // GB/s (1e9 bytes per second) per rank
  double latency_us = 0;
  bool on() const { return gbps > 0; }
};

// "BW_GBPS[,LATENCY_US]" ("" = off): BW_GBPS > 0, LATENCY_US >= 0. Returns "" and sets `out`, or
// the reason the text is malformed ("BW_GBPS must be > 0"), leaving `out` alone.
std::string parseLinkSpec(std::string_view text, LinkSpec& out);
// The spelling parseLinkSpec reads, for messages and option help.
inline constexpr const char* kLinkSpelling = "BW_GBPS[,LATENCY_US] (GB/s > 0, microseconds >= 0)";

// The model's collectives take the link's time: alpha = its latency, no per-step latency, bus
// bandwidth = its bandwidth (the wire bytes are the model's, the ones replay's link times). A link
// that is off changes nothing. The name gains " + link BW,LAT".
void applyLink(HardwareModel& m, const LinkSpec& link);

// Measures this machine with `ranks` rank threads working at once (runtime/calibrate.h's
// measureHost). The analysis layer cannot measure; the program registers the runtime's measurer
// once at start-up (app/main.cpp), tests register theirs.
using HostMeasurer = std::function<HostMeasurement(int ranks)>;
void setHostMeasurer(HostMeasurer measurer);

// The model `preset` names, measured for `ranks` ranks when it is `host` (once per process and rank
// count: a second pass or command of the same run schedules against the same figures), with `link`
// applied. Throws InputError(source, "", ...) for an unknown preset, and for `host` when no
// measurer is registered.
HardwareModel machineModel(std::string_view preset, const LinkSpec& link, int ranks, const std::string& source);

}  // namespace spopt
