#include "views/graph_dot.h"

#include <algorithm>

#include "analysis/collectives.h"
#include "views/describe.h"

namespace spopt {

const char* statusFill(ViewStatus s) {
  switch (s) {
    case ViewStatus::Unchanged: return "#eeeeee";
    case ViewStatus::Changed: return "#ffe08a";
    case ViewStatus::Added: return "#b8ecb8";
    case ViewStatus::Removed: return "#f5b8b8";
  }
  return "#ffffff";
}

const char* statusStroke(ViewStatus s) {
  switch (s) {
    case ViewStatus::Unchanged: return "#8c8c8c";
    case ViewStatus::Changed: return "#d08700";
    case ViewStatus::Added: return "#1e8c1e";
    case ViewStatus::Removed: return "#c81e1e";
  }
  return "#000000";
}

namespace {

// A dot double-quoted string: quotes and backslashes escaped, line breaks as dot's "\n".
std::string dotQuoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  return out + "\"";
}

constexpr size_t kMaxNotes = 3;

std::string opLabel(const ViewNode& n, bool bus_factors) {
  std::string label(n.op->type);
  std::string comm = describeCollective(*n.op, bus_factors);
  if (!comm.empty()) label += "\n" + comm;
  for (size_t i = 0; i < n.notes.size() && i < kMaxNotes; ++i) label += "\n~ " + n.notes[i];
  if (n.notes.size() > kMaxNotes) label += "\n~ " + std::to_string(n.notes.size() - kMaxNotes) + " more";
  return label;
}

void node(std::string& out, size_t id, const ViewNode& n, const ViewGraph& g) {
  out += "  n" + std::to_string(id) + " [";
  std::string fill = statusFill(n.status), stroke = statusStroke(n.status);
  switch (n.kind) {
    case ViewNode::OpNode: {
      auto c = asCollective(*n.op);
      bool comm = c && communicates(*c);
      out += "label=" + dotQuoted(opLabel(n, g.bus_factors));
      out += ", tooltip=" + dotQuoted(describeOpPlace(*n.op, n.position) + ": " + std::string(n.op->type) + " " + describeSlots(*n.op));
      if (comm) out += ", shape=hexagon, style=\"filled,bold\", penwidth=2";
      break;
    }
    case ViewNode::Input:
    case ViewNode::Fetch:
      out += "label=" + dotQuoted(n.name) + ", shape=ellipse, style=filled, fontsize=9";
      if (n.kind == ViewNode::Fetch) out += ", peripheries=2";
      if (n.status == ViewStatus::Unchanged) fill = "#ffffff";
      break;
    case ViewNode::Folded:
      out += "label=" + dotQuoted("\u2026 " + std::to_string(n.folded_ops) + " " + g.folded_noun +
                               (n.folded_collectives ? "\n(" + std::to_string(n.folded_collectives) + " collective" +
                                                           (n.folded_collectives > 1 ? "s)" : ")")
                                                     : std::string())) +
             ", style=\"dashed,filled,rounded\", fillcolor=\"#f7f7f7\"";
      fill.clear();
      break;
  }
  if (!fill.empty()) out += ", fillcolor=\"" + fill + "\"";
  out += ", color=\"" + stroke + "\"];\n";
}

void edge(std::string& out, const ViewEdge& e) {
  std::string label = std::string(e.var->name) + "\n" + describeVarType(*e.var);
  if (e.more_vars) label = std::string(e.var->name) + "\n+" + std::to_string(e.more_vars) + " more var" + (e.more_vars > 1 ? "s" : "");
  out += "  n" + std::to_string(e.from) + " -> n" + std::to_string(e.to) + " [label=" + dotQuoted(label);
  if (e.more_vars) out += ", penwidth=" + std::to_string(std::min<size_t>(1 + e.more_vars / 2, 4));
  if (e.status != ViewStatus::Unchanged) {
    out += ", color=\"" + std::string(statusStroke(e.status)) + "\", fontcolor=\"" + statusStroke(e.status) + "\"";
    if (e.status == ViewStatus::Removed) out += ", style=dashed";
    else if (!e.more_vars) out += ", penwidth=1.5";
  }
  out += "];\n";
}

}  // namespace

std::string graphToDot(const ViewGraph& g, const std::string& title) {
  std::string out = "digraph " + dotQuoted(title) + " {\n";
  out += "  graph [rankdir=TB, label=" + dotQuoted(title) +
         ", labelloc=t, fontname=\"Helvetica\", fontsize=12, nodesep=0.3, ranksep=0.35];\n";
  out += "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10, margin=\"0.12,0.04\"];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#8c8c8c\", fontcolor=\"#555555\", arrowsize=0.6];\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) node(out, i, g.nodes[i], g);
  for (const ViewEdge& e : g.edges) edge(out, e);
  out += "}\n";
  return out;
}

}  // namespace spopt
