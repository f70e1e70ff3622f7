#include "views/graph_page.h"

#include <unordered_map>

#include "analysis/collectives.h"
#include "ir/json_text.h"
#include "views/describe.h"
#include "views/html_page.h"
#include "views/view_graph_internal.h"

namespace spopt {

using view_detail::kNone;

namespace {

// Interns strings and raw JSON texts: attrs and dist attrs repeat across ops (a layer's ops share
// most of them), so each distinct text is embedded once and ops refer to it by index.
class Table {
 public:
  uint32_t id(std::string_view text) {
    auto [it, fresh] = index_.try_emplace(std::string(text), static_cast<uint32_t>(items_.size()));
    if (fresh) items_.push_back(&it->first);
    return it->second;
  }
  // `raw`: each entry is already JSON (a raw attrs object); else entries are quoted as strings.
  void write(std::string& out, bool raw) const {
    out += '[';
    for (size_t i = 0; i < items_.size(); ++i) {
      if (i) out += ',';
      out += raw ? *items_[i] : quoteJson(*items_[i]);
    }
    out += ']';
  }

 private:
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<const std::string*> items_;
};

std::string rawObject(const JsonObject& o) {
  std::string_view compact = o.compactText();
  return compact.empty() ? o.toJson() : std::string(compact);
}

void appendInt(std::string& out, int64_t v) { out += std::to_string(v); }

template <typename T, typename Fn>
void appendArray(std::string& out, const std::vector<T>& items, Fn each) {
  out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    each(items[i]);
  }
  out += ']';
}

class DataWriter {
 public:
  explicit DataWriter(const PageRank& r) : g_(*r.graph), t_(*r.clusters) {}

  std::string write(int64_t rank) {
    op_index_.assign(g_.nodes.size(), kNone);
    std::string ops = "[";
    uint32_t next = 0;
    for (uint32_t v = 0; v < g_.nodes.size(); ++v) {
      if (t_.cluster_of_node[v] == kNone) continue;
      if (next) ops += ",\n";
      op_index_[v] = next++;
      writeOp(ops, g_.nodes[v]);
    }
    ops += "]";
    std::string clusters = "[";
    for (size_t c = 0; c < t_.clusters.size(); ++c) {
      if (c) clusters += ",\n";
      writeCluster(clusters, t_.clusters[c]);
    }
    clusters += "]";
    // Vars last but one: writing them may still add dist-attr texts, so the texts come after.
    std::string vars = "[";
    for (size_t i = 0; i < vars_.size(); ++i) {
      const Var& v = *vars_[i];
      if (i) vars += ",\n";
      vars += "[" + quoteJson(v.name) + "," + quoteJson(describeVarType(v)) + ",";
      appendInt(vars, v.hasDistAttr() ? texts_.id(rawObject(v.dist_attr)) : -1);
      vars += v.persistable ? ",1]" : ",0]";
    }
    vars += "]";
    std::string out = "{\"rank\":" + std::to_string(rank) + ",\n\"strings\":";
    strings_.write(out, false);
    out += ",\n\"texts\":";
    texts_.write(out, true);
    out += ",\n\"vars\":" + vars + ",\n\"ops\":" + ops + ",\n\"clusters\":" + clusters + "}";
    return out;
  }

 private:
  uint32_t varId(const Var* v) {
    auto [it, fresh] = var_index_.try_emplace(v, static_cast<uint32_t>(vars_.size()));
    if (fresh) vars_.push_back(v);
    return it->second;
  }

  void writeSlots(std::string& out, const std::vector<Slot>& slots) {
    out += '[';
    bool first = true;
    for (const Slot& s : slots)
      for (const Arg& a : s.args) {
        if (!a.var) continue;
        if (!first) out += ',';
        first = false;
        appendInt(out, strings_.id(s.name));
        out += ',';
        appendInt(out, varId(a.var));
      }
    out += ']';
  }

  // [type, status, block, position, ins, outs, attrs, dist_attr, collective label, ring, notes]
  void writeOp(std::string& out, const ViewNode& n) {
    const Op& op = *n.op;
    out += '[';
    appendInt(out, strings_.id(op.type));
    out += ',';
    appendInt(out, static_cast<int>(n.status));
    out += ',';
    appendInt(out, op.block ? op.block->idx : 0);
    out += ',';
    appendInt(out, n.position);
    out += ',';
    writeSlots(out, op.inputs);
    out += ',';
    writeSlots(out, op.outputs);
    out += ',';
    appendInt(out, texts_.id(rawObject(op.attrs)));
    out += ',';
    appendInt(out, op.hasDistAttr() ? texts_.id(rawObject(op.dist_attr)) : -1);
    out += ',';
    auto c = asCollective(op);
    bool comm = c && communicates(*c);
    out += comm ? quoteJson(describeCollective(op, g_.bus_factors)) : "\"\"";
    out += ',';
    appendInt(out, comm ? c->ring_id : -2);
    out += ',';
    appendArray(out, n.notes, [&](const std::string& s) { out += quoteJson(s); });
    out += ']';
  }

  int64_t item(const ClusterItem& i) const { return i.is_cluster ? -static_cast<int64_t>(i.id) - 1 : op_index_[i.id]; }

  // [name, parent, ops, changed, rings, vars in, vars out, sample in, sample out, items, layer,
  //  order, edges [from, to, vars, sample vars, status, reversed]]
  void writeCluster(std::string& out, const Cluster& c) {
    out += '[' + quoteJson(c.name) + ',';
    appendInt(out, c.parent == kNone ? -1 : c.parent);
    out += ',' + std::to_string(c.ops) + ',' + std::to_string(c.changed) + ',';
    out += '[';
    bool first = true;
    for (const auto& [ring, s] : c.rings) {
      if (!first) out += ',';
      first = false;
      std::string bytes = humanBytes(s.bytes) + (s.unknown ? " + " + std::to_string(s.unknown) + " unknown" : "");
      out += '[' + std::to_string(ring) + ',' + std::to_string(s.count) + ',' + quoteJson(bytes) + ']';
    }
    out += "]," + std::to_string(c.vars_in) + ',' + std::to_string(c.vars_out) + ',';
    appendArray(out, c.sample_in, [&](const Var* v) { appendInt(out, varId(v)); });
    out += ',';
    appendArray(out, c.sample_out, [&](const Var* v) { appendInt(out, varId(v)); });
    out += ',';
    appendArray(out, c.items, [&](const ClusterItem& i) { appendInt(out, item(i)); });
    out += ',';
    appendArray(out, c.layout.layer, [&](uint32_t l) { appendInt(out, l); });
    out += ',';
    appendArray(out, c.layout.order, [&](uint32_t o) { appendInt(out, o); });
    out += ",[";
    for (size_t i = 0; i < c.edges.size(); ++i) {
      const ClusterEdge& e = c.edges[i];
      if (i) out += ',';
      out += '[' + std::to_string(e.from) + ',' + std::to_string(e.to) + ',' + std::to_string(e.vars) + ',';
      appendArray(out, e.sample, [&](const Var* v) { appendInt(out, varId(v)); });
      out += ',' + std::to_string(static_cast<int>(e.status)) + ',' + (c.layout.reversed[i] ? "1" : "0") + ']';
    }
    out += "]]";
  }

  const ViewGraph& g_;
  const ClusterTree& t_;
  Table strings_, texts_;
  std::unordered_map<const Var*, uint32_t> var_index_;
  std::vector<const Var*> vars_;
  std::vector<uint32_t> op_index_;
};

// JSON inside <script>: a "<" (only ever inside a string there) is written as \u003c so that no
// "</script>" in a name or attribute can end the element early.
std::string scriptSafe(std::string json) {
  std::string out;
  out.reserve(json.size());
  for (char ch : json) {
    if (ch == '<') out += "\\u003c";
    else out += ch;
  }
  return out;
}

}  // namespace

std::string graphPageData(const PageRank& rank) { return DataWriter(rank).write(rank.rank); }

std::string graphPageSection(const std::vector<PageRank>& ranks, const GraphPageOptions& o) {
  std::string meta = "{\"diff\":" + std::string(o.diff ? "true" : "false") + ",\"openBudget\":" +
                     std::to_string(o.open_budget) + ",\"jobRanks\":";
  appendArray(meta, o.job_ranks, [&](int64_t r) { appendInt(meta, r); });
  meta += ",\"ranks\":[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) meta += ",\n";
    meta += graphPageData(ranks[i]);
  }
  meta += "]}";
  std::string out;
  if (!o.note.empty()) out += "<p class=\"fit\">" + escapeHtml(o.note) + "</p>\n";
  out +=
      "<div class=\"gv-bar\"><label>rank <select id=\"gv-rank\"></select></label> "
      "<input id=\"gv-search\" type=\"search\" placeholder=\"find op or var (Enter)\" size=\"28\"> "
      "<button id=\"gv-fit\" title=\"fit the view (0)\">fit</button> "
      "<button id=\"gv-collapse\" title=\"collapse every cluster\">collapse all</button> "
      "<span id=\"gv-status\" class=\"fit\"></span>"
      "<span class=\"fit\"> drag or arrow keys: pan; wheel or +/\u2212: zoom; click a box: open or close it; "
      "click an op: details</span></div>\n"
      "<div class=\"gv-wrap\"><svg id=\"gv-svg\" xmlns=\"http://www.w3.org/2000/svg\" tabindex=\"0\">"
      "<g id=\"gv-root\"></g></svg><div id=\"gv-panel\" class=\"gv-panel\"></div></div>\n";
  out += "<script type=\"application/json\" id=\"gv-data\">" + scriptSafe(std::move(meta)) + "</script>\n";
  out += std::string("<script>\n") + kGraphPageScript + "</script>\n";
  return out;
}

}  // namespace spopt
