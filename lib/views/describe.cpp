#include "views/describe.h"

#include <cstdio>

#include "analysis/comm_stats.h"

namespace spopt {

std::string humanBytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

namespace {
void appendSlots(std::string& out, const std::vector<Slot>& slots) {
  bool first = true;
  for (const Slot& s : slots) {
    if (s.args.empty()) continue;
    if (!first) out += ' ';
    first = false;
    out += s.name;
    out += '=';
    for (size_t i = 0; i < s.args.size(); ++i) {
      if (i) out += ',';
      out += s.args[i].name;
    }
  }
}
}  // namespace

std::string describeSlots(const Op& op) {
  std::string out;
  appendSlots(out, op.inputs);
  out += out.empty() ? "-> " : " -> ";
  appendSlots(out, op.outputs);
  return out;
}

std::string describeCollective(const Op& op, bool bus_factors) {
  auto c = asCollective(op);
  if (!c || !communicates(*c)) return "";
  auto bytes = collectiveBytes(op, *c, *op.block->program->job, bus_factors);
  return "ring " + std::to_string(c->ring_id) + ", " + (bytes ? humanBytes(*bytes) : std::string("? B"));
}

std::string describeVarType(const Var& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(v.shape[i]);
  }
  out += "] ";
  out += dtypeName(v.dtype);
  return out;
}

std::string describeOpPlace(const Op& op, uint32_t position) {
  if (op.block->idx == 0) return "op " + std::to_string(position);
  return "op " + std::to_string(op.block->idx) + "." + std::to_string(position);
}

}  // namespace spopt
