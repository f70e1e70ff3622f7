#pragma once
// The pass interface (in the manner of MLIR's Pass and XLA's HloPassInterface).
//
// A pass rewrites a whole Job: decisions about collectives must agree across the ranks of a group,
// so a pass sees every rank's program at once. Each pass declares typed options (parsed from the
// textual pipeline, see pipeline.h) and reports what it did through a PassContext: how many
// candidates it looked at, how many it rewrote, why it refused the others, and, when asked, one
// explain record per candidate not rewritten (or rewritten with a caveat), and its declared
// statistics (statistic.h).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <absl/functional/function_ref.h>

#include "analysis/ring_order.h"
#include "ir/ir.h"
#include "passes/pipeline_facts.h"
#include "passes/refusal.h"
#include "passes/statistic.h"

namespace spopt {

enum class OptionKind { Bool, Int, Float, String };
const char* optionKindName(OptionKind k);  // "bool", "int", "float", "string"

using OptionValue = std::variant<bool, int64_t, double, std::string>;

struct OptionSpec {
  std::string name;
  OptionKind kind = OptionKind::Bool;
  std::string default_text;  // the default, spelled as on the command line
  std::string help;
  bool hidden = false;       // testing aids: parsed as usual, listed only by `sp-opt passes --all`
  std::vector<std::string> choices = {};  // String options: the only values accepted (empty: any)
  // Options with a grammar or a range (link=BW_GBPS[,LATENCY_US], an integer >= 1): whether a
  // value is well formed, and what one looks like (for the one-line error); null: any value.
  std::function<bool(std::string_view)> accepts = nullptr;
  std::string expect = {};
  // Stores a parsed value into the pass's options struct (set by bindOption; null for specs
  // written by hand, whose pass reads OptionValues itself).
  std::function<void(void* options, const OptionValue&)> assign = nullptr;
};

// Parses `text` as a value of `spec`'s kind (and one of its choices); false when it does not parse.
bool parseOptionValue(const OptionSpec& spec, std::string_view text, OptionValue& out);
bool parseOptionValue(OptionKind kind, std::string_view text, OptionValue& out);
std::string optionValueText(const OptionValue& v);
// What a value of `spec` must look like, for messages: "true or false", "an integer", "one of a, b".
std::string optionExpectText(const OptionSpec& spec);

namespace detail {
template <class T> constexpr OptionKind optionKindOf() {
  if constexpr (std::is_same_v<T, bool>) return OptionKind::Bool;
  else if constexpr (std::is_integral_v<T>) return OptionKind::Int;
  else if constexpr (std::is_floating_point_v<T>) return OptionKind::Float;
  else return OptionKind::String;
}
}  // namespace detail

// Declares a pass option bound to a member of the pass's options struct: the option's name is
// written once, here; its kind comes from the member's type and its default from the struct's
// default member initialiser. Example (in a pass file):
//   struct Options { bool reshard_only = false; int64_t max_fusions = -1; };
//   bindOption(&Options::reshard_only, "reshard-only", "help text")
template <class Opts, class T>
OptionSpec bindOption(T Opts::*member, std::string name, std::string help, bool hidden = false,
                      std::vector<std::string> choices = {}) {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.kind = detail::optionKindOf<T>();
  spec.help = std::move(help);
  spec.hidden = hidden;
  spec.choices = std::move(choices);
  const Opts defaults{};
  spec.default_text = optionValueText(OptionValue(static_cast<std::conditional_t<
      std::is_same_v<T, bool>, bool, std::conditional_t<std::is_integral_v<T>, int64_t,
      std::conditional_t<std::is_floating_point_v<T>, double, std::string>>>>(defaults.*member)));
  spec.assign = [member](void* options, const OptionValue& v) {
    auto& field = static_cast<Opts*>(options)->*member;
    std::visit([&](const auto& x) {
      using X = std::decay_t<decltype(x)>;
      if constexpr (std::is_convertible_v<X, T>) field = static_cast<T>(x);
    }, v);
  };
  return spec;
}

// `spec`, an Int option, accepting only values >= `min` (a bad one is the usual one-line error).
OptionSpec atLeast(OptionSpec spec, int64_t min);

// The options of one configured pass: every declared option, defaults filled in.
class OptionValues {
 public:
  // Fills an options struct from these values through each spec's binding (see bindOption).
  template <class Opts>
  Opts bind(const std::vector<OptionSpec>& specs) const {
    Opts o{};
    for (const OptionSpec& s : specs)
      if (s.assign) s.assign(&o, at(s.name));
    return o;
  }
  OptionValues() = default;
  explicit OptionValues(const std::vector<OptionSpec>& specs);  // all defaults
  void set(const std::string& name, OptionValue v) { values_[name] = std::move(v); }
  // Typed getters; asking for an undeclared option or the wrong type is a programming error
  // (std::logic_error), never the user's.
  bool getBool(const std::string& name) const;
  int64_t getInt(const std::string& name) const;
  double getFloat(const std::string& name) const;
  const std::string& getString(const std::string& name) const;
  const std::map<std::string, OptionValue>& all() const { return values_; }

 private:
  const OptionValue& at(const std::string& name) const;
  std::map<std::string, OptionValue> values_;
};

// Why a candidate was not rewritten, or a caveat about one that was. Positions are those of the
// input to the pass (computed before it changed anything), so the user can find the op in the file.
struct ExplainRecord {
  int64_t rank = 0;
  int64_t block_idx = 0;
  size_t op_index = 0;
  std::string op_type;
  bool rewritten = false;  // false: refused; true: rewritten, `reason` is a caveat
  std::string code;        // short stable key, also the key of PassStats::refused / notes
  std::string reason;      // plain words
};
// The record of `op`, at `op_index` of its block in the pass's input, refused (or noted) for `why`.
ExplainRecord explainRecord(const Op& op, size_t op_index, const Refusal& why);

struct PassStats {
  size_t candidates = 0;
  size_t rewritten = 0;
  std::map<std::string, size_t> refused;  // code -> count
  std::map<std::string, size_t> notes;    // caveats on rewritten candidates, code -> count
  // The pass's declared statistics (statistic.h) that it measured, by name; printed by --stats and
  // written by --report only when not empty.
  std::map<std::string, int64_t> figures;
  size_t refusedTotal() const;
};

// Facts about the job that one pass measured and the next may reuse instead of walking the job
// again (MLIR's analysis manager and preserved analyses, for the one analysis two passes of the
// chain share): each program's peak bytes (analysis/memory.h, peakBytes with the default
// options), by program position. The pass manager hands a pass what the job as it arrives is
// known to have: what the previous pass recorded as it left the job, and, when that pass changed
// nothing, what it received itself.
// Also each ring's issue order on every program, where the verifier kept it (IssueOrders):
// what RingOrder would walk every op for.
struct KnownAnalyses {
  std::vector<std::optional<int64_t>> peak_bytes;  // [program position]
  std::function<IssueLists()> issue_lists;  // read on request: most passes build no RingOrder
  void setPeakBytes(size_t position, int64_t bytes) {
    if (peak_bytes.size() <= position) peak_bytes.resize(position + 1);
    peak_bytes[position] = bytes;
  }
};

class PassContext {
 public:
  // `statistics`: the pass's declared statistics (PassInfo::statistics); publish() reports them.
  // `collect_statistics`: whether anyone reads the figures (--stats, --report).
  explicit PassContext(bool collect_explain = false, const std::vector<StatisticSpec>* statistics = nullptr,
                       bool collect_statistics = true)
      : collect_explain_(collect_explain), collect_statistics_(collect_statistics), statistics_(statistics) {}
  // Building reason strings costs time on million-op jobs: passes ask before formatting them.
  bool explaining() const { return collect_explain_; }
  // A statistic that costs work of its own (a whole-job simulation before the pass) is computed
  // only when its figures are read, as LLVM's passes ask AreStatisticsEnabled().
  bool collectingStatistics() const { return collect_statistics_; }

  void countCandidate() { ++stats.candidates; }
  void countRewritten() { ++stats.rewritten; }
  // Counts a refusal; the record is kept only when explaining (its reason may then be empty).
  void refuse(ExplainRecord r);
  void note(ExplainRecord r);  // a caveat on a rewritten candidate
  // The counts alone, for a pass that is not explaining: no record built. A pass refuses tens of
  // thousands of candidates on a big job, in runs of one code.
  void countRefusal(std::string_view code) { ++counter(stats.refused, last_refused_, code); }
  void countNote(std::string_view code) { ++counter(stats.notes, last_noted_, code); }

  // Copies every measured statistic of `s` into stats.figures under its declared name (nothing
  // when the context was made without declarations). Publishing a struct the declarations do not
  // bind is a programming error (std::logic_error).
  template <class Stats>
  void publish(const Stats& s) {
    if (!statistics_) return;
    for (const StatisticSpec& spec : *statistics_) {
      if (spec.owner != typeid(Stats)) throw std::logic_error("statistic " + spec.name + " is not declared on this struct");
      if (const auto& v = spec.read(&s).value()) stats.figures[spec.name] = *v;
    }
  }

  // The peak bytes of `p` as this pass received the job, when the previous pass measured it;
  // valid only until this pass edits `p`.
  std::optional<int64_t> receivedPeakBytes(const Program& p) const {
    return p.position < received_.peak_bytes.size() ? received_.peak_bytes[p.position] : std::nullopt;
  }
  // Records the peak bytes of `p` as this pass leaves the job: measured after its last edit of `p`.
  void leavePeakBytes(const Program& p, int64_t bytes) { left.setPeakBytes(p.position, bytes); }
  void receive(KnownAnalyses known) { received_ = std::move(known); }  // by the pass manager
  // Every op's facts (analysis/op_facts.h) as the job is now, read once for the whole pipeline
  // (PipelineFacts: the pass manager's, or the context's own). Asked before the pass's first
  // erase; the pass then forgets or reads again the ops it edits, as with a cache of its own
  // (what other threads may read: op_facts.h).
  OpFactsCache& facts(const Job& job) { return facts_->current(job); }
  // facts(job) with the pass's own edits so far read in.
  OpFactsCache& factsAfterEdits(const Job& job) { return facts_->afterOwnEdits(job); }
  void shareFacts(PipelineFacts* facts) { facts_ = facts; }  // by the pass manager
  // The rings' issue orders of the job as this pass received it: from what the verifier kept (the
  // collectives' signatures then from facts(job)), or a walk of every op. Asked, as facts(job),
  // before the pass's first erase; valid until this pass edits a collective.
  RingOrder receivedRingOrder(const Job& job) const {
    return received_.issue_lists ? RingOrder(job, received_.issue_lists(), &facts_->current(job)) : RingOrder(job);
  }

  PassStats stats;
  std::vector<ExplainRecord> explain;
  KnownAnalyses left;  // what the pass recorded of the job it leaves (leavePeakBytes)

 private:
  KnownAnalyses received_;
  PipelineFacts own_facts_;
  PipelineFacts* facts_ = &own_facts_;
  // The last code counted in a map: its key (the node's, stable) and its count.
  struct LastCounter {
    std::string_view code;
    size_t* count = nullptr;
  };
  static size_t& counter(std::map<std::string, size_t>& counts, LastCounter& last, std::string_view code) {
    if (!last.count || last.code != code) {
      auto it = counts.try_emplace(std::string(code), 0).first;
      last = {it->first, &it->second};
    }
    return *last.count;
  }
  LastCounter last_refused_, last_noted_;
  bool collect_explain_;
  bool collect_statistics_;
  const std::vector<StatisticSpec>* statistics_;
};

// Runs edit(i) for every i in [0, n) on threads (support/parallel.h), as MLIR's pass manager runs a
// pass on isolated functions: edit(i) edits only what no other index edits (its own program) and
// reads only what no other index edits. Each index's edits store their text in an arena of their
// own and record into a journal of their own (ThreadEdits, ir/ir.h), appended to the job's in
// index order once every call has returned: the verifier then reads what a serial run would have
// recorded.
void editInParallel(Job& job, size_t n, absl::FunctionRef<void(size_t)> edit);

class Pass {
 public:
  virtual ~Pass() = default;
  // Rewrites the job; returns whether it changed anything (the pass manager reports it, and
  // --print-after prints only a changed job).
  virtual bool run(Job& job, PassContext& ctx) = 0;
};

}  // namespace spopt
