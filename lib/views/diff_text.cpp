#include "views/diff_text.h"

#include "views/describe.h"
#include "views/html_page.h"

namespace spopt {
namespace {

class Printer {
 public:
  explicit Printer(const TextStyle& s) : style_(s) {}
  enum Tone { Plain, Bold, Red, Green, Yellow };
  void line(Tone tone, const std::string& text) {
    static const char* codes[] = {"", "\033[1m", "\033[31m", "\033[32m", "\033[33m"};
    static const char* classes[] = {"", "hdr", "del", "add", "chg"};
    if (style_.html) {
      if (tone != Plain) out_ += std::string("<span class=\"") + classes[tone] + "\">";
      out_ += escapeHtml(text);
      if (tone != Plain) out_ += "</span>";
      out_ += '\n';
    } else if (style_.color && tone != Plain) {
      out_ += codes[tone];
      out_ += text;
      out_ += "\033[0m\n";
    } else {
      out_ += text;
      out_ += '\n';
    }
  }
  std::string take() { return std::move(out_); }

 private:
  const TextStyle& style_;
  std::string out_;
};

std::string valueText(const std::optional<std::string>& v) { return v ? *v : "(absent)"; }

void changeLines(Printer& p, const std::vector<ValueChange>& changes, const char* indent) {
  for (const ValueChange& c : changes)
    p.line(Printer::Yellow, indent + c.what + ": " + valueText(c.before) + " -> " + valueText(c.after));
}

std::string opLine(char sign, const Op& op, uint32_t position, bool bus_factors) {
  std::string s = "  ";
  s += sign;
  s += ' ';
  s += describeOpPlace(op, position);
  s += "  ";
  s += op.type;
  s += "  ";
  s += describeSlots(op);
  std::string comm = describeCollective(op, bus_factors);
  if (!comm.empty()) s += "  (" + comm + ")";
  return s;
}

std::string varsSummary(const RankDiff& r) {
  int64_t n[3] = {0, 0, 0};
  for (const VarEntry& v : r.vars) ++n[v.kind];
  std::string out;
  const char signs[3] = {'-', '+', '~'};
  for (int k = 0; k < 3; ++k)
    if (n[k]) out += std::string(out.empty() ? "" : " ") + signs[k] + std::to_string(n[k]);
  return out;
}

std::string commLine(const RankDiff& r) {
  std::string s = "  collectives: " + std::to_string(r.comm_before.count) + " -> " + std::to_string(r.comm_after.count);
  auto bytes = [](const CommStats& c, int64_t CommStats::*figure) {
    std::string t = humanBytes(c.*figure);
    if (c.unknown_size) t += " + " + std::to_string(c.unknown_size) + " of unknown size";
    return t;
  };
  s += ", payload: " + bytes(r.comm_before, &CommStats::payload_bytes) + " -> " + bytes(r.comm_after, &CommStats::payload_bytes);
  s += ", ring traffic: " + bytes(r.comm_before, &CommStats::ring_bytes) + " -> " + bytes(r.comm_after, &CommStats::ring_bytes);
  return s;
}

void renderRank(Printer& p, const RankDiff& r, bool bus_factors, bool summary) {
  std::string header = "rank " + std::to_string(r.rank) + ":";
  std::string ops = summarizeCounts(r.countsByType());
  std::string vars = varsSummary(r);
  if (!ops.empty()) header += " " + ops;
  if (!vars.empty()) header += (ops.empty() ? " vars " : "; vars ") + vars;
  if (ops.empty() && vars.empty()) header += " program changes only";
  p.line(Printer::Bold, header);
  if (summary) {
    p.line(Printer::Plain, commLine(r));
    return;
  }
  for (const ValueChange& c : r.program_changes)
    p.line(Printer::Yellow, "  ~ " + c.what + ": " + valueText(c.before) + " -> " + valueText(c.after));
  for (const OpEntry& e : r.ops) {
    if (e.kind == OpEntry::Removed) {
      const OpSlot& s = r.before_order->ops[e.before];
      p.line(Printer::Red, opLine('-', *s.op, s.position, bus_factors));
    } else if (e.kind == OpEntry::Added) {
      const OpSlot& s = r.after_order->ops[e.after];
      p.line(Printer::Green, opLine('+', *s.op, s.position, bus_factors));
    } else {
      const OpSlot& s = r.after_order->ops[e.after];
      p.line(Printer::Yellow, opLine('~', *s.op, s.position, bus_factors));
      if (e.moved)
        p.line(Printer::Yellow, "      moved: was " + describeOpPlace(*r.before_order->ops[e.before].op,
                                                                      r.before_order->ops[e.before].position));
      changeLines(p, e.changes, "      ");
    }
  }
  for (const VarEntry& v : r.vars) {
    if (v.kind == VarEntry::Removed)
      p.line(Printer::Red, "  - var " + std::string(v.before->name) + "  " + describeVarType(*v.before));
    else if (v.kind == VarEntry::Added)
      p.line(Printer::Green, "  + var " + std::string(v.after->name) + "  " + describeVarType(*v.after));
    else {
      p.line(Printer::Yellow, "  ~ var " + std::string(v.after->name));
      changeLines(p, v.changes, "      ");
    }
  }
  p.line(Printer::Plain, commLine(r));
}

}  // namespace

std::string renderDiffText(const JobDiff& diff, const TextStyle& style) {
  Printer p(style);
  p.line(Printer::Bold, "--- " + diff.before->path);
  p.line(Printer::Bold, "+++ " + diff.after->path);
  if (!diff.job_changes.empty()) {
    p.line(Printer::Bold, "job:");
    for (const ValueChange& c : diff.job_changes)
      p.line(Printer::Yellow, "  ~ " + c.what + ": " + valueText(c.before) + " -> " + valueText(c.after));
  }
  size_t differing = 0, ops = 0;
  for (const RankDiff& r : diff.ranks) {
    ops += r.after_order->ops.size();
    if (r.same()) continue;
    ++differing;
    renderRank(p, r, diff.bus_factors, style.summary);
  }
  std::string ranks = std::to_string(diff.ranks.size()) + (diff.ranks.size() == 1 ? " rank" : " ranks");
  if (diff.same()) {
    p.line(Printer::Plain, "no differences (" + ranks + ", " + std::to_string(ops) + " ops)");
  } else {
    std::string total = summarizeCounts(diff.totalCountsByType());
    p.line(Printer::Bold, std::to_string(differing) + " of " + ranks + (differing == 1 ? " differs" : " differ") + (total.empty() ? "" : ": " + total));
  }
  return p.take();
}

}  // namespace spopt
