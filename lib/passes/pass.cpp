#include "passes/pass.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "support/parallel.h"

namespace spopt {

const char* optionKindName(OptionKind k) {
  switch (k) {
    case OptionKind::Bool: return "bool";
    case OptionKind::Int: return "int";
    case OptionKind::Float: return "float";
    case OptionKind::String: return "string";
  }
  return "?";
}

bool parseOptionValue(OptionKind kind, std::string_view text, OptionValue& out) {
  switch (kind) {
    case OptionKind::Bool:
      if (text == "true" || text == "1") out = true;
      else if (text == "false" || text == "0") out = false;
      else return false;
      return true;
    case OptionKind::Int: {
      int64_t v = 0;
      const char* end = text.data() + text.size();
      auto r = std::from_chars(text.data(), end, v);
      if (text.empty() || r.ec != std::errc() || r.ptr != end) return false;
      out = v;
      return true;
    }
    case OptionKind::Float: {
      double v = 0;
      const char* end = text.data() + text.size();
      auto r = std::from_chars(text.data(), end, v);
      if (text.empty() || r.ec != std::errc() || r.ptr != end) return false;
      out = v;
      return true;
    }
    case OptionKind::String:
      out = std::string(text);
      return true;
  }
  return false;
}

bool parseOptionValue(const OptionSpec& spec, std::string_view text, OptionValue& out) {
  if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end()) return false;
  if (spec.accepts && !spec.accepts(text)) return false;
  return parseOptionValue(spec.kind, text, out);
}

std::string optionExpectText(const OptionSpec& spec) {
  if (!spec.expect.empty()) return spec.expect;
  switch (spec.kind) {
    case OptionKind::Bool: return "true or false";
    case OptionKind::Int: return "an integer";
    case OptionKind::Float: return "a number";
    case OptionKind::String: break;
  }
  if (spec.choices.empty()) return "a string";
  std::string s = "one of ";
  for (size_t i = 0; i < spec.choices.size(); ++i) s += (i ? ", " : "") + spec.choices[i];
  return s;
}

OptionSpec atLeast(OptionSpec spec, int64_t min) {
  spec.accepts = [min](std::string_view text) {
    OptionValue v;
    return parseOptionValue(OptionKind::Int, text, v) && std::get<int64_t>(v) >= min;
  };
  spec.expect = "an integer >= " + std::to_string(min);
  return spec;
}

std::string optionValueText(const OptionValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, *d);
    return std::string(buf, r.ptr);
  }
  return std::get<std::string>(v);
}

OptionValues::OptionValues(const std::vector<OptionSpec>& specs) {
  for (const auto& s : specs) {
    OptionValue v;
    // A default that does not parse is a bug in the pass's declaration.
    if (!parseOptionValue(s, s.default_text, v))
      throw std::logic_error("option " + s.name + ": bad default '" + s.default_text + "'");
    values_[s.name] = std::move(v);
  }
}

const OptionValue& OptionValues::at(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error("undeclared pass option '" + name + "'");
  return it->second;
}
bool OptionValues::getBool(const std::string& name) const { return std::get<bool>(at(name)); }
int64_t OptionValues::getInt(const std::string& name) const { return std::get<int64_t>(at(name)); }
double OptionValues::getFloat(const std::string& name) const { return std::get<double>(at(name)); }
const std::string& OptionValues::getString(const std::string& name) const { return std::get<std::string>(at(name)); }

const char* statUnitName(StatUnit u) {
  switch (u) {
    case StatUnit::Count: return "count";
    case StatUnit::Bytes: return "bytes";
    case StatUnit::Nanoseconds: return "ns";
  }
  return "?";
}

ExplainRecord explainRecord(const Op& op, size_t op_index, const Refusal& why) {
  ExplainRecord r;
  r.rank = op.block->program->rank;
  r.block_idx = op.block->idx;
  r.op_index = op_index;
  r.op_type = std::string(op.type);
  r.code = why.code;
  r.reason = why.reason;
  return r;
}

size_t PassStats::refusedTotal() const {
  size_t n = 0;
  for (const auto& [code, count] : refused) n += count;
  return n;
}

void PassContext::refuse(ExplainRecord r) {
  countRefusal(r.code);
  r.rewritten = false;
  if (collect_explain_) explain.push_back(std::move(r));
}

void PassContext::note(ExplainRecord r) {
  countNote(r.code);
  r.rewritten = true;
  if (collect_explain_) explain.push_back(std::move(r));
}

void editInParallel(Job& job, size_t n, absl::FunctionRef<void(size_t)> edit) {
  std::vector<Arena*> arenas(n);
  for (Arena*& a : arenas) a = &job.edit_arenas.emplace_back();
  std::vector<EditJournal> journals(n);
  parallelFor(n, [&](size_t i) {
    ThreadEdits edits(job, *arenas[i], &journals[i]);
    edit(i);
  });
  if (job.journal)
    for (EditJournal& j : journals) job.journal->append(std::move(j));
}

}  // namespace spopt
