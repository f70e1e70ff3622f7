#include "views/graph_svg.h"

#include <algorithm>

#include "analysis/collectives.h"
#include "views/describe.h"
#include "views/graph_dot.h"
#include "views/html_page.h"
#include "views/layered_layout.h"

namespace spopt {
namespace {

std::string nodeLabel(const ViewNode& n, const std::string& folded_noun) {
  switch (n.kind) {
    case ViewNode::OpNode: {
      std::string comm = describeCollective(*n.op, false);
      return std::string(n.op->type) + (comm.empty() ? "" : " (" + comm + ")");
    }
    case ViewNode::Folded: return "\u2026 " + std::to_string(n.folded_ops) + " " + folded_noun;
    default: return std::string(n.name);
  }
}

std::string num(double v) { return std::to_string(static_cast<long long>(v)); }

}  // namespace

std::string layeredSvg(const ViewGraph& g, const std::string& title) {
  const uint32_t n = static_cast<uint32_t>(g.nodes.size());
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  edges.reserve(g.edges.size());
  for (const ViewEdge& e : g.edges) edges.emplace_back(e.from, e.to);
  LayeredLayout lay = layoutLayered(n, edges);
  constexpr double kHeight = 26, kGapX = 16, kGapY = 40, kChar = 6.6, kMargin = 20;
  std::vector<std::string> labels(n);
  std::vector<double> width(n), x(n), y(n);
  std::vector<std::vector<uint32_t>> rows(lay.layers);
  for (uint32_t v = 0; v < n; ++v) {
    labels[v] = nodeLabel(g.nodes[v], g.folded_noun);
    width[v] = std::max(60.0, kChar * static_cast<double>(labels[v].size()) + 16);
    rows[lay.layer[v]].push_back(v);
  }
  double max_width = 0;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end(), [&](uint32_t a, uint32_t b) { return lay.order[a] < lay.order[b]; });
    double w = 0;
    for (uint32_t v : row) w += width[v] + kGapX;
    max_width = std::max(max_width, w);
  }
  for (uint32_t l = 0; l < rows.size(); ++l) {
    double w = 0;
    for (uint32_t v : rows[l]) w += width[v] + kGapX;
    double left = kMargin + (max_width - w) / 2;
    for (uint32_t v : rows[l]) {
      x[v] = left;
      y[v] = kMargin + 24 + l * (kHeight + kGapY);
      left += width[v] + kGapX;
    }
  }
  double total_h = kMargin * 2 + 24 + rows.size() * (kHeight + kGapY);
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(max_width + 2 * kMargin) + "\" height=\"" +
                    num(total_h) + "\" font-family=\"Helvetica,Arial,sans-serif\">\n";
  out += "<defs><marker id=\"a\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" "
         "orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#8c8c8c\"/></marker></defs>\n";
  out += "<text x=\"" + num(kMargin) + "\" y=\"" + num(kMargin + 4) + "\" font-size=\"13\">" + escapeHtml(title) +
         " (laid out by sp-opt: Graphviz did not finish in time)</text>\n";
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const ViewEdge& e = g.edges[i];
    double x1 = x[e.from] + width[e.from] / 2, y1 = y[e.from] + kHeight, x2 = x[e.to] + width[e.to] / 2, y2 = y[e.to];
    out += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" stroke=\"" +
           statusStroke(e.status) + "\" marker-end=\"url(#a)\"><title>" + escapeHtml(e.var->name) + "</title></line>\n";
  }
  for (uint32_t v = 0; v < n; ++v) {
    const ViewNode& node = g.nodes[v];
    bool comm = node.kind == ViewNode::OpNode && asCollective(*node.op) && communicates(*asCollective(*node.op));
    out += "<g><rect x=\"" + num(x[v]) + "\" y=\"" + num(y[v]) + "\" width=\"" + num(width[v]) + "\" height=\"" + num(kHeight) +
           "\" rx=\"" + (node.kind == ViewNode::OpNode ? "4" : "12") + "\" fill=\"" + statusFill(node.status) + "\" stroke=\"" +
           statusStroke(node.status) + "\" stroke-width=\"" + (comm ? "2.5" : "1") + "\"/><text x=\"" + num(x[v] + width[v] / 2) +
           "\" y=\"" + num(y[v] + 17) + "\" font-size=\"11\" text-anchor=\"middle\">" + escapeHtml(labels[v]) + "</text></g>\n";
  }
  return out + "</svg>\n";
}

}  // namespace spopt
