// Pass recompute-activations: selective activation recompute (Korthikanti et al. 2022, Megatron-LM's
// recompute_modules, Paddle's recompute pass with refined_ops_patterns) as a static rewrite. A
// chosen forward segment is copied into backward right before its first backward reader, the
// backward readers read the copies, and the forward outputs die after their forward use: memory
// for FLOPs. Candidates and the rewrite: recompute_segments.h; policies: recompute_policy.h.
//
// No collective is ever recomputed (the catalogue's recompute rule refuses it, and a segment that
// needs one is refused as a whole), so each rank decides alone and every ring keeps its collective
// order untouched. A dropout is recomputed only when a copy draws the same mask (fix_seed: the
// mask is a function of seed, rank and element index), so `check` holds bitwise.
//
// Not in the default pipeline: it trades step time for memory, so it runs only when asked.
#include <algorithm>

#include "analysis/memory.h"
#include "passes/builtin_passes.h"
#include "passes/recompute_policy.h"
#include "support/error.h"

namespace spopt {
namespace {

class RecomputeActivations final : public Pass {
 public:
  struct Options {
    std::string policy = "core-attention";
    int64_t budget = 0;
    std::string ops;
    std::string search = "auto";
    int64_t exact_limit = 16;
  };
  struct Stats {
    Statistic segments, ops_added, bytes_freed, flops_added, peak_before, peak_after;
  };

  explicit RecomputeActivations(Options o) : opts_(std::move(o)) {
    auto bad = [](const std::string& why) { throw InputError("--passes", "", "recompute-activations: " + why); };
    if (opts_.policy == "budget" && opts_.budget <= 0) bad("policy=budget needs budget=BYTES (a positive byte count)");
    if (opts_.policy != "budget" && opts_.budget != 0) bad("budget= is for policy=budget");
    if (opts_.policy == "list" && opts_.ops.empty()) bad("policy=list needs ops=PATTERNS (e.g. ops=softmax>dropout;gelu)");
    if (opts_.policy != "list" && !opts_.ops.empty()) bad("ops= is for policy=list");
    if (opts_.exact_limit < 0 || opts_.exact_limit > 30) bad("exact-limit must be in 0..30, got " + std::to_string(opts_.exact_limit));
    if (opts_.policy == "list") patterns_ = parseOpPatterns(opts_.ops);
  }

  bool run(Job& job, PassContext& ctx) override {
    Stats stats;
    bool changed = false;
    for (auto& p : job.programs) {
      std::vector<char> marks = opts_.policy == "core-attention" ? markCoreAttention(*p)
                                : opts_.policy == "list"          ? markPatternOps(*p, patterns_)
                                                                  : std::vector<char>();
      auto allowed = [&marks](const Op& op) { return marks.empty() || (op.id < marks.size() && marks[op.id]); };
      RankSegments r = findSegments(*p, allowed, ctx.explaining(), opts_.policy == "budget" ? SegmentShape::Budget : SegmentShape::Maximal);
      stats.peak_before.raiseTo(r.peak);
      std::vector<char> chosen = choose(r, ctx);
      report(r, chosen, ctx);
      int64_t ops_added = 0;
      for (size_t k = 0; k < r.segments.size(); ++k) {
        if (!chosen[k]) continue;
        rewriteSegment(r, r.segments[k]);
        stats.segments += 1;
        stats.bytes_freed += r.segments[k].bytes;
        stats.flops_added += int64_t(r.segments[k].flops);
        ops_added += int64_t(r.segments[k].ops.size());
      }
      stats.ops_added += ops_added;
      changed = changed || ops_added > 0;
      stats.peak_after.raiseTo(ops_added ? peakBytes(*p) : r.peak);
    }
    ctx.publish(stats);
    return changed;
  }

 private:
  Options opts_;
  std::vector<OpPattern> patterns_;
  std::map<size_t, std::string> not_chosen_;  // segment -> why the budget left it out

  std::vector<char> choose(const RankSegments& r, PassContext& ctx) {
    not_chosen_.clear();
    if (opts_.policy != "budget") return std::vector<char>(r.segments.size(), 1);
    bool exact = opts_.search == "exact" || (opts_.search == "auto" && int64_t(r.segments.size()) <= opts_.exact_limit);
    if (opts_.search == "exact" && int64_t(r.segments.size()) > opts_.exact_limit)
      throw InputError("--passes", "", "recompute-activations: search=exact over " + std::to_string(r.segments.size()) +
                                   " segments on rank " + std::to_string(r.program->rank) + " exceeds exact-limit=" +
                                   std::to_string(opts_.exact_limit));
    BudgetChoice c = chooseGreedy(r, opts_.budget);
    if (exact) {
      BudgetChoice e = chooseExact(r, opts_.budget);
      if (e.met > c.met || (e.met == c.met && e.flops <= c.flops)) c = std::move(e);
    }
    std::string why = !c.met ? "the budget is out of reach; the search kept it as it does not lower the peak"
                              : "the modelled peak (" + std::to_string(c.peak) + " bytes) is within budget=" +
                                    std::to_string(opts_.budget) + " without it";
    for (size_t k = 0; k < r.segments.size(); ++k) {
      if (c.chosen[k] || !ctx.explaining()) continue;
      not_chosen_[k] = why;
      for (size_t other : r.segments[k].conflicts)
        if (c.chosen[other]) not_chosen_[k] = "it reads what a chosen segment (" + r.segments[other].text + ") recomputes";
    }
    return c.chosen;
  }

  // One record per saved activation: recomputed (a note), kept by the budget, or why not.
  void report(const RankSegments& r, const std::vector<char>& chosen, PassContext& ctx) {
    std::vector<int64_t> chosen_of(r.saved.size(), -1);
    for (size_t c = 0; c < r.segments.size(); ++c)
      for (size_t ti : r.segments[c].targets)
        if (chosen[c]) chosen_of[ti] = int64_t(c);
    for (const SavedVar& sv : r.saved) {
      ctx.countCandidate();
      if (sv.segment < 0) {
        ctx.refuse(explainRecord(*sv.producer, sv.producer_at, {sv.refusal.code, reasonFor(sv, sv.refusal.reason)}));
        continue;
      }
      // A var may sit in its own segment and in a pair offered as one: whichever was chosen.
      size_t k = chosen_of[size_t(&sv - r.saved.data())] >= 0 ? size_t(chosen_of[size_t(&sv - r.saved.data())]) : size_t(sv.segment);
      const Segment& s = r.segments[k];
      if (!chosen[k]) {
        ctx.refuse(explainRecord(*sv.producer, sv.producer_at, {"kept-in-budget", reasonFor(sv, not_chosen_[size_t(sv.segment)])}));
        continue;
      }
      ctx.countRewritten();
      if (!ctx.explaining()) continue;
      ctx.note(explainRecord(*sv.producer, sv.producer_at,
                             {"recomputed", reasonFor(sv, "made again before op " + std::to_string(s.insert_at) + " by " + s.text +
                                                              " (segment of " + std::to_string(s.bytes) + " bytes, +" +
                                                              std::to_string(int64_t(s.flops)) + " FLOPs)")}));
    }
  }

  static std::string reasonFor(const SavedVar& sv, const std::string& why) {
    if (why.empty()) return why;
    return std::string(sv.var->name) + " (" + std::to_string(varBytes(*sv.var)) + " bytes): " + why;
  }
};

}  // namespace

PassInfo recomputeActivationsPass() {
  using O = RecomputeActivations::Options;
  PassInfo info;
  info.name = "recompute-activations";
  info.description =
      "Recompute chosen forward segments in backward so their outputs die after forward (memory for FLOPs; not in the default "
      "pipeline)";
  info.options = {
      bindOption(&O::policy, "policy",
                 "core-attention: QK^T, scale, softmax, dropout, attention over V in every layer; budget: the fewest extra FLOPs that "
                 "bring every rank's modelled peak within budget=; list: the forward ops matching ops=; all: every saved activation "
                 "that can be made again (the full-recompute end of the budget's range)",
                 false, {"core-attention", "budget", "list", "all"}),
      bindOption(&O::budget, "budget", "policy=budget: the peak memory per rank to reach, in bytes"),
      bindOption(&O::ops, "ops", "policy=list: op patterns, chains of op names joined by '>' and separated by ';' (softmax>dropout;gelu)"),
      bindOption(&O::search, "search", "policy=budget: greedy, exact (every subset), or auto (exact up to exact-limit segments per rank, "
                                       "else greedy; the better of the two)", false, {"auto", "greedy", "exact"}),
      bindOption(&O::exact_limit, "exact-limit", "policy=budget: the most segments per rank the exact search tries (2^n subsets)"),
  };
  using S = RecomputeActivations::Stats;
  info.statistics = {
      bindStatistic(&S::segments, "segments-recomputed", StatUnit::Count, "forward segments copied into backward, all ranks"),
      bindStatistic(&S::ops_added, "ops-recomputed", StatUnit::Count, "ops added to backward, all ranks"),
      bindStatistic(&S::bytes_freed, "activation-bytes-freed", StatUnit::Bytes,
                    "bytes of saved activations that now die after forward, all ranks"),
      bindStatistic(&S::flops_added, "flops-added", StatUnit::Count, "the cost model's FLOPs of the copies, all ranks"),
  };
  for (StatisticSpec& peak : peakBytesStatistics(&S::peak_before, &S::peak_after)) info.statistics.push_back(std::move(peak));
  info.journaled = true;  // edits only through OpBuilder and setInputArg (recompute_rewrite.cpp)
  info.create = [specs = info.options](const OptionValues& v) { return std::make_unique<RecomputeActivations>(v.bind<O>(specs)); };
  return info;
}

}  // namespace spopt
