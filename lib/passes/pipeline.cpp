#include "passes/pipeline.h"

#include <vector>

#include "support/error.h"

namespace spopt {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool validName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  return true;
}

// Sets a declared option of `cp` from its text, as written in the pass's braces.
void giveOption(ConfiguredPass& cp, const OptionSpec& spec, std::string_view value, const std::string& source) {
  OptionValue parsed;
  if (!parseOptionValue(spec, value, parsed))
    throw InputError(source, "", "option " + spec.name + " of pass " + cp.info->name + " takes " + optionExpectText(spec) +
                                     ", got \"" + std::string(value) + "\"");
  cp.options.set(spec.name, std::move(parsed));
  cp.given.emplace_back(spec.name, std::string(value));
}

class Parser {
 public:
  Parser(std::string_view text, const PassRegistry& reg, const std::string& source)
      : text_(text), reg_(reg), source_(source) {}

  Pipeline run() {
    Pipeline out;
    if (trim(text_).empty()) return out;
    // Split at commas outside braces; each piece is one pass with its optional options.
    size_t start = 0;
    int depth = 0;
    for (size_t i = 0; i <= text_.size(); ++i) {
      char c = i < text_.size() ? text_[i] : ',';
      if (c == '{') {
        if (++depth > 1) fail("'{' inside options at offset " + std::to_string(i));
      } else if (c == '}') {
        if (--depth < 0) fail("'}' without '{' at offset " + std::to_string(i));
      } else if (c == ',' && depth == 0) {
        std::string_view piece = text_.substr(start, i - start);
        if (const PipelineAlias* a = findPipelineAlias(trim(piece))) {
          // An alias expands in place; its own text holds no alias, so this recursion is one deep.
          Pipeline sub = Parser(a->expansion, reg_, source_).run();
          out.insert(out.end(), sub.begin(), sub.end());
        } else {
          out.push_back(element(piece, start));
        }
        start = i + 1;
      }
    }
    if (depth != 0) fail("missing '}'");
    return out;
  }

 private:
  std::string_view text_;
  const PassRegistry& reg_;
  const std::string& source_;

  [[noreturn]] void fail(const std::string& message) const {
    throw InputError(source_, "", message + " in pipeline \"" + std::string(text_) + "\"");
  }

  ConfiguredPass element(std::string_view piece, size_t offset) {
    std::string_view name = piece, opts;
    bool has_opts = false;
    if (size_t b = piece.find('{'); b != std::string_view::npos) {
      size_t e = piece.rfind('}');
      if (!trim(piece.substr(e + 1)).empty()) fail("text after '}' of pass \"" + std::string(trim(piece.substr(0, b))) + "\"");
      name = piece.substr(0, b);
      opts = piece.substr(b + 1, e - b - 1);
      if (opts.find_first_of("{}") != std::string_view::npos) fail("two option lists for pass \"" + std::string(trim(name)) + "\"");
      has_opts = true;
    }
    name = trim(name);
    if (findPipelineAlias(name)) fail("alias \"" + std::string(name) + "\" takes no options");
    if (name.empty()) fail("empty pass name at offset " + std::to_string(offset));
    const PassInfo* info = reg_.find(std::string(name));
    if (!info) {
      std::string what = validName(name) ? "unknown pass \"" + std::string(name) + "\"" : "bad pass name \"" + std::string(name) + "\"";
      throw InputError(source_, "", what + "; valid passes: " + reg_.namesText());
    }
    ConfiguredPass cp{info, OptionValues(info->options), {}};
    if (has_opts && !trim(opts).empty()) {
      // A piece with no '=' that names no option continues the value before it: a value may hold
      // commas (link=0.02,100, spelled as replay's --link).
      std::vector<std::string_view> items;
      size_t s = 0;
      for (size_t i = 0; i <= opts.size(); ++i) {
        if (i < opts.size() && opts[i] != ',') continue;
        std::string_view piece = opts.substr(s, i - s), word = trim(piece);
        bool continues = !items.empty() && items.back().find('=') != std::string_view::npos && !word.empty() &&
                         word.find('=') == std::string_view::npos && !info->option(std::string(word));
        if (continues) items.back() = std::string_view(items.back().data(), size_t(opts.data() + i - items.back().data()));
        else items.push_back(piece);
        s = i + 1;
      }
      for (std::string_view item : items) option(cp, item);
    }
    return cp;
  }

  void option(ConfiguredPass& cp, std::string_view item) {
    const PassInfo& info = *cp.info;
    size_t eq = item.find('=');
    std::string key(trim(item.substr(0, eq)));
    if (key.empty()) fail("empty option of pass " + info.name);
    const OptionSpec* spec = info.option(key);
    if (!spec) {
      std::string valid;
      for (const auto& o : info.options)
        if (!o.hidden) valid += (valid.empty() ? "" : ", ") + o.name;
      throw InputError(source_, "", "pass " + info.name + " has no option \"" + key + "\"; valid options: " +
                                        (valid.empty() ? "(none)" : valid));
    }
    if (eq == std::string_view::npos)
      throw InputError(source_, "", "option " + key + " of pass " + info.name + " needs a value (" + key + "=...)");
    for (const auto& [k, v] : cp.given)
      if (k == key) throw InputError(source_, "", "option " + key + " of pass " + info.name + " is given twice");
    giveOption(cp, *spec, trim(item.substr(eq + 1)), source_);
  }
};

}  // namespace

const PipelineAlias* findPipelineAlias(std::string_view name) {
  for (const PipelineAlias& a : kPipelineAliases)
    if (a.name == name) return &a;
  return nullptr;
}

std::string ConfiguredPass::text() const {
  std::string s = info->name;
  if (given.empty()) return s;
  s += '{';
  for (size_t i = 0; i < given.size(); ++i) s += (i ? "," : "") + given[i].first + "=" + given[i].second;
  return s + '}';
}

Pipeline parsePipeline(std::string_view text, const PassRegistry& registry, const std::string& source) {
  return Parser(text, registry, source).run();
}

size_t setPipelineOption(Pipeline& p, const std::string& name, std::string_view value, const std::string& source) {
  size_t set = 0;
  for (ConfiguredPass& cp : p) {
    const OptionSpec* spec = cp.info->option(name);
    if (!spec) continue;
    bool given = false;
    for (const auto& [k, v] : cp.given) given |= k == name;
    if (!given) giveOption(cp, *spec, value, source), ++set;
  }
  return set;
}

std::string pipelineText(const Pipeline& p) {
  std::string s;
  for (size_t i = 0; i < p.size(); ++i) s += (i ? "," : "") + p[i].text();
  return s;
}

}  // namespace spopt
