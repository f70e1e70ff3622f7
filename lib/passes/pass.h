#pragma once
// The pass interface (in the manner of MLIR's Pass and XLA's HloPassInterface).
//
// A pass rewrites a whole Job: decisions about collectives must agree across the ranks of a group,
// so a pass sees every rank's program at once. Each pass declares typed options (parsed from the
// textual pipeline, see pipeline.h) and reports what it did through a PassContext: how many
// candidates it looked at, how many it rewrote, why it refused the others, and, when asked, one
// explain record per candidate not rewritten (or rewritten with a caveat).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/ir.h"

namespace spopt {

enum class OptionKind { Bool, Int, String };
const char* optionKindName(OptionKind k);  // "bool", "int", "string"

struct OptionSpec {
  std::string name;
  OptionKind kind = OptionKind::Bool;
  std::string default_text;  // the default, spelled as on the command line
  std::string help;
  bool hidden = false;       // testing aids: parsed as usual, listed only by `sp-opt passes --all`
};

using OptionValue = std::variant<bool, int64_t, std::string>;

// Parses `text` as a value of `kind`; nullopt-like failure is reported through the bool.
bool parseOptionValue(OptionKind kind, std::string_view text, OptionValue& out);
std::string optionValueText(const OptionValue& v);

// The options of one configured pass: every declared option, defaults filled in.
class OptionValues {
 public:
  OptionValues() = default;
  explicit OptionValues(const std::vector<OptionSpec>& specs);  // all defaults
  void set(const std::string& name, OptionValue v) { values_[name] = std::move(v); }
  // Typed getters; asking for an undeclared option or the wrong type is a programming error
  // (std::logic_error), never the user's.
  bool getBool(const std::string& name) const;
  int64_t getInt(const std::string& name) const;
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

struct PassStats {
  size_t candidates = 0;
  size_t rewritten = 0;
  std::map<std::string, size_t> refused;  // code -> count
  std::map<std::string, size_t> notes;    // caveats on rewritten candidates, code -> count
  size_t refusedTotal() const;
};

class PassContext {
 public:
  explicit PassContext(bool collect_explain = false) : collect_explain_(collect_explain) {}
  // Building reason strings costs time on million-op jobs: passes ask before formatting them.
  bool explaining() const { return collect_explain_; }

  void countCandidate() { ++stats.candidates; }
  void countRewritten() { ++stats.rewritten; }
  // Counts a refusal; the record is kept only when explaining (its reason may then be empty).
  void refuse(ExplainRecord r);
  void note(ExplainRecord r);  // a caveat on a rewritten candidate

  PassStats stats;
  std::vector<ExplainRecord> explain;

 private:
  bool collect_explain_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual void run(Job& job, PassContext& ctx) = 0;
};

}  // namespace spopt
