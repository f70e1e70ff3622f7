#include "views/diff_html.h"

#include <algorithm>
#include <map>

#include "views/diff_text.h"
#include "views/graph_page.h"
#include "views/html_page.h"

namespace spopt {
namespace {

// "rank 3", "ranks 0–3, 6".
std::string rankList(const std::vector<int64_t>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? ", " : "–") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string GraphDrawing::tooLargeMessage() const {
  return "the graph has " + std::to_string(nodes) + " nodes, more than --max-nodes " + std::to_string(max_nodes) +
         ", which Graphviz would take long to lay out; narrow it (--only comm, --fold N, --rank R) or raise --max-nodes";
}

namespace {

// The built graphs of the embedded ranks; the page refers into them while it is written.
struct Embedded {
  std::vector<ViewGraph> graphs;
  std::vector<ClusterTree> trees;
  std::vector<PageRank> ranks;
  void add(ViewGraph g) {
    graphs.push_back(std::move(g));
    trees.push_back(buildClusters(graphs.back()));
  }
  const std::vector<PageRank>& pages(const std::vector<int64_t>& rank_ids) {
    for (size_t i = 0; i < graphs.size(); ++i) ranks.push_back({rank_ids[i], &graphs[i], &trees[i]});
    return ranks;
  }
};

size_t opCount(const Program* p) {
  size_t n = 0;
  if (p)
    for (const auto& b : p->blocks) n += b->ops.size();
  return n;
}

std::string embeddedNote(size_t embedded, size_t total, size_t max_ops) {
  if (embedded == total) return "";
  return "Only this rank is embedded: the job has more than " + std::to_string(max_ops) +
         " ops over all ranks; --rank R draws another.";
}

}  // namespace

std::string renderDiffHtml(const JobDiff& diff, const RankDiff& drawn, const HtmlGraphOptions& options) {
  std::string title = "sp-opt diff: " + diff.before->path + " \u2192 " + diff.after->path;
  std::string out = htmlHead(title, kGraphPageCss);
  out += "<h1>sp-opt diff <span class=\"verdict " + std::string(diff.same() ? "same\">same" : "differ\">different") +
         "</span></h1>\n";
  out += "<p class=\"files\">\u2212 " + escapeHtml(diff.before->path) + "<br>+ " + escapeHtml(diff.after->path) + "</p>\n";
  // Ranks with the same summary share a line, so that a wide job stays one screen.
  std::vector<std::pair<std::string, std::vector<int64_t>>> lines;
  for (const RankDiff& r : diff.ranks) {
    std::string s = summarizeCounts(r.countsByType());
    if (s.empty()) s = r.same() ? "no changes" : "vars or program keys changed";
    auto it = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == s; });
    if (it == lines.end()) lines.push_back({s, {r.rank}});
    else it->second.push_back(r.rank);
  }
  out += "<ul class=\"summary\">\n";
  for (const auto& [summary, ranks] : lines)
    out += "<li>" + rankList(ranks) + ": " + escapeHtml(summary) + "</li>\n";
  out += "</ul>\n";

  out += "<h2>Rank " + std::to_string(drawn.rank) + " data flow</h2>\n";
  if (diff.ranks.size() > 1 && !diff.same())
    out += "<p class=\"fit\">The first rank that differs; <code>--rank R</code> draws another.</p>\n";
  out += graphLegend(true, true);
  // The drawn rank first; the others too while the whole job is small enough.
  size_t total_ops = 0;
  std::vector<int64_t> job_ranks, rank_ids;
  for (const RankDiff& r : diff.ranks) {
    job_ranks.push_back(r.rank);
    total_ops += opCount(r.before) + opCount(r.after);
  }
  Embedded embedded;
  bool all = total_ops <= options.all_ranks_max_ops;
  embedded.add(buildDiffGraph(drawn, options.bus_factors));
  rank_ids.push_back(drawn.rank);
  for (const RankDiff& r : diff.ranks)
    if (all && &r != &drawn) {
      embedded.add(buildDiffGraph(r, options.bus_factors));
      rank_ids.push_back(r.rank);
    }
  GraphPageOptions page;
  page.diff = true;
  page.job_ranks = job_ranks;
  page.open_budget = options.open_budget;
  page.note = embeddedNote(rank_ids.size(), job_ranks.size(), options.all_ranks_max_ops);
  out += graphPageSection(embedded.pages(rank_ids), page);

  out += "<h2>Collectives and bytes moved per rank</h2>\n";
  std::vector<CommRow> rows;
  for (const RankDiff& r : diff.ranks) rows.push_back({"rank " + std::to_string(r.rank), r.comm_before, r.comm_after});
  out += commTable(rows, true);

  // The list is for reading: past a few thousand lines (a rewrite of every layer of a big model)
  // it only makes the page slow to open; the text format has all of it.
  std::string changes = renderDiffText(diff, TextStyle{false, true});
  size_t cut = 0, shown_lines = 0;
  while (cut < changes.size() && shown_lines < options.max_change_lines) {
    cut = changes.find('\n', cut);
    cut = cut == std::string::npos ? changes.size() : cut + 1;
    ++shown_lines;
  }
  size_t more = static_cast<size_t>(std::count(changes.begin() + static_cast<std::ptrdiff_t>(cut), changes.end(), '\n'));
  changes.resize(cut);
  out += "<h2>Changes</h2>\n<pre class=\"changes\">" + changes + "</pre>\n";
  if (more)
    out += "<p class=\"note\">" + std::to_string(more) + " more lines not shown; <code>sp-opt diff " + escapeHtml(diff.before->path) +
           " " + escapeHtml(diff.after->path) + "</code> prints them all.</p>\n";
  return out + htmlTail();
}

std::string renderGraphHtml(const Job& job, int64_t rank, const std::string& title, const HtmlGraphOptions& options) {
  const Program& p = *job.program(rank);
  std::string out = htmlHead(title, kGraphPageCss);
  out += "<h1>" + escapeHtml(title) + "</h1>\n" + graphLegend(false, true);
  size_t total_ops = 0;
  std::vector<int64_t> job_ranks, rank_ids{rank};
  for (const auto& q : job.programs) {
    job_ranks.push_back(q->rank);
    total_ops += opCount(q.get());
  }
  Embedded embedded;
  embedded.add(buildProgramGraph(p, options.bus_factors));
  if (total_ops <= options.all_ranks_max_ops)
    for (const auto& q : job.programs)
      if (q->rank != rank) {
        embedded.add(buildProgramGraph(*q, options.bus_factors));
        rank_ids.push_back(q->rank);
      }
  GraphPageOptions page;
  page.job_ranks = job_ranks;
  page.note = embeddedNote(rank_ids.size(), job_ranks.size(), options.all_ranks_max_ops);
  out += graphPageSection(embedded.pages(rank_ids), page);

  // Per ring: how much this rank communicates on it.
  std::map<int64_t, CommStats> by_ring;
  for (const auto& [ring, ops] : collectivesByRing(p)) {
    CommStats& s = by_ring[ring];
    for (const Op* op : ops) s.add(*op, *asCollective(*op), *p.job);
  }
  std::vector<CommRow> rows(by_ring.size() + 1);
  size_t i = 0;
  for (const auto& [ring, s] : by_ring) {
    rows[i].label = "ring " + std::to_string(ring);
    rows[i++].after = s;
  }
  rows[i].label = "all rings";
  rows[i].after = commStats(p);
  out += "<h2>Collectives and bytes moved</h2>\n";
  out += commTable(rows, false);
  return out + htmlTail();
}

}  // namespace spopt
