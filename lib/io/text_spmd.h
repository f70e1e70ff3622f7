#pragma once
// The SPMD shorthand of the text form (docs/text-format.md, "SPMD shorthand"): a section
// `rank A..B { ... }` is read once per rank of the range, and what differs between ranks is said
// where it differs: `$rank` (the rank's number, in a value or inside a name), `$rank{R: X, *: X}`
// (a choice per rank) and a line prefix `rank R, S..T: LINE` (a var or op only on those ranks).
// Kept apart from the reader so that io/text_reader.cpp stays about the job; the reader expands
// the shorthand into ordinary per-rank programs, so nothing after loading knows it was used.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/text_lexer.h"

namespace spopt::text {

struct RankRange {
  int64_t first = 0, last = 0;
  bool contains(int64_t r) const { return r >= first && r <= last; }
  std::string text() const { return first == last ? std::to_string(first) : std::to_string(first) + ".." + std::to_string(last); }
};

class SpmdLexer : public Lexer {
 public:
  using Lexer::Lexer;

 protected:
  // The most ranks one `rank A..B` section expands to: the body is read once per rank, so an
  // absurd range would be a hang, not a job.
  static constexpr int64_t kMaxSectionRanks = 65536;
  static constexpr int64_t kMaxRankNumber = 1 << 24;  // as world_size
  // The most text all sections together expand to (a rank's body counted once per rank).
  static constexpr size_t kMaxExpandedBytes = size_t(4) << 20;
  size_t expanded_ = 0;

  std::optional<int64_t> rank_;  // the rank whose program is being read; none outside rank sections
  RankRange section_;            // the ranks of the section being read

  // True when a rank range (`A..B`) starts here, as opposed to one rank number.
  bool rangeAhead() {
    size_t i = here();
    while (i < s_.size() && isDigit(s_[i])) ++i;
    return i > p_ && s_.substr(i, 2) == "..";
  }
  // `A` or `A..B` (A <= B), ranks counted from 0.
  RankRange rankRange(const std::string& what) {
    size_t at = here();
    RankRange r;
    r.first = r.last = rankNumber(what);
    if (s_.substr(p_, 2) == "..") {
      p_ += 2;
      if (p_ >= s_.size() || !isDigit(s_[p_])) fail("expected a rank number after \"..\", found " + describe(p_));
      r.last = rankNumber("after \"..\"");
      if (r.last < r.first) failAt(at, "empty rank range " + r.text() + " (the first rank comes first)");
    }
    return r;
  }
  // Inside a block, after the word `rank`: a rank list then ":" makes a line prefix.
  bool rankPrefixAhead() const {
    size_t i = p_;
    while (i < s_.size() && (isDigit(s_[i]) || s_[i] == '.' || s_[i] == ',' || s_[i] == ' ' || s_[i] == '\t')) ++i;
    return i > p_ && i < s_.size() && s_[i] == ':';
  }
  // `R, S..T:` after the word `rank`: whether the line that follows is on the rank being read.
  bool rankPrefix() {
    bool on_this_rank = false;
    do {
      size_t at = here();
      RankRange r = rankRange("in \"rank ...:\"");
      if (r.first < section_.first || r.last > section_.last)
        failAt(at, "rank " + r.text() + " is not in this section (rank " + section_.text() + ")");
      on_this_rank |= r.contains(*rank_);
    } while (eat(','));
    expect(':', "after the ranks of a \"rank ...:\" line");
    return on_this_rank;
  }

  // At "$": `$rank`, the rank's number, or `$rank{R: X, S..T: X, *: X}`, the entry for the rank
  // (a listed rank wins over "*"). `read` reads one entry's value as text (a JSON value or a name).
  template <class ReadValue>
  std::string rankSubstitution(ReadValue read) {
    size_t at = p_++;
    size_t end = p_;
    while (end < s_.size() && isTextWordChar(s_[end])) ++end;
    if (s_.substr(p_, end - p_) != "rank")
      failAt(at, "unknown \"$" + std::string(s_.substr(p_, end - p_)) + "\" (the shorthand has $rank and $rank{R: X, *: X})");
    p_ = end;
    if (!rank_) failAt(at, "$rank is only defined inside a rank section");
    if (p_ >= s_.size() || s_[p_] != '{') return std::to_string(*rank_);
    // One level: a choice inside a choice says nothing more, and unbounded nesting would recurse.
    if (in_choice_) failAt(at, "$rank{...} inside $rank{...}");
    in_choice_ = true;
    ++p_;
    std::optional<std::string> chosen, fallback;
    do {
      size_t key_at = here();
      bool star = eat('*');
      RankRange keys;
      if (!star) keys = rankRange("or \"*\" as a key of $rank{...}");
      expect(':', "after a key of $rank{...}");
      std::string value = read();
      if (star) {
        if (fallback) failAt(key_at, "\"*\" is given twice in $rank{...}");
        fallback = std::move(value);
      } else if (keys.contains(*rank_)) {
        if (chosen) failAt(key_at, "rank " + std::to_string(*rank_) + " has two entries in $rank{...}");
        chosen = std::move(value);
      }
    } while (eat(','));
    expect('}', "to close $rank{...}");
    in_choice_ = false;
    if (chosen) return *chosen;
    if (fallback) return *fallback;
    failAt(at, "$rank{...} has no entry for rank " + std::to_string(*rank_) + " (add \"*: ...\" for the others)");
  }

 private:
  bool in_choice_ = false;

  int64_t rankNumber(const std::string& what) {
    size_t at = here();
    size_t end = p_;
    while (end < s_.size() && isDigit(s_[end])) ++end;
    int64_t v = -1;
    auto [ptr, ec] = std::from_chars(s_.data() + p_, s_.data() + end, v);
    if (ec != std::errc() || v > kMaxRankNumber)
      failAt(at, end == p_ ? "expected a rank number " + what + ", found " + describe(at) : "rank number out of range");
    p_ = end;
    return v;
  }
};

}  // namespace spopt::text
