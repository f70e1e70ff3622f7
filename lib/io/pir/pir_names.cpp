#include "io/pir/pir_names.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "ops/op_def.h"
#include "support/error.h"

namespace spopt::pir {

std::optional<int64_t> ValueNumbering::numberInName(std::string_view name) {
  if (name.size() < 2 || name.size() > 19 || name[0] != 'v') return std::nullopt;
  int64_t id = 0;
  auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), id);
  if (ec != std::errc() || end != name.data() + name.size() || id < 0) return std::nullopt;
  return id;
}

namespace {

std::optional<int64_t> keptNumber(const ojson& holder, const char* key) {
  auto it = holder.find(key);
  if (it == holder.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::optional<int64_t> resultHint(const ojson& op, const std::string& slot) {
  auto pir = op.find(kOpKey);
  if (pir == op.end() || !pir->is_object()) return std::nullopt;
  auto kept = pir->find(kResultValuesKey);
  if (kept == pir->end() || !kept->is_object()) return std::nullopt;
  return keptNumber(*kept, slot.c_str());
}

const ojson& listOf(const ojson& holder, const char* key) {
  static const ojson kNone = ojson::array();
  auto it = holder.find(key);
  return it == holder.end() ? kNone : *it;
}

}  // namespace

ValueNumbering::ValueNumbering(const ojson& block, int64_t first) : next_(first) {
  const ojson& vars = listOf(block, "vars");
  // Numbers claimed by what was read: fresh numbers start after all of them.
  auto claim = [&](std::optional<int64_t> n) {
    if (n && *n >= first) next_ = std::max(next_, *n + 1);
  };
  for (const auto& v : vars) {
    claim(numberInName(v.value("name", "")));
    claim(keptNumber(v, kVarValueKey));
  }
  for (const auto& op : listOf(block, "ops"))
    for (auto it = listOf(op, "outputs").begin(); it != listOf(op, "outputs").end(); ++it) claim(resultHint(op, it.key()));
  auto take = [&](std::optional<int64_t> n) {
    return n && *n >= first && used_.insert(*n).second;
  };
  std::vector<const ojson*> unnumbered;
  for (const auto& v : vars) {
    std::string name = v.value("name", "");
    if (auto n = numberInName(name); take(n)) ids_[name] = *n;
    else unnumbered.push_back(&v);
  }
  for (const ojson* v : unnumbered) {
    std::string name = v->value("name", "");
    if (auto n = keptNumber(*v, kVarValueKey); take(n)) ids_[name] = *n;
    else ids_[name] = next_, used_.insert(next_++);
  }
}

std::optional<int64_t> ValueNumbering::idOf(const std::string& name) const {
  if (auto r = rebound_.find(name); r != rebound_.end()) return r->second;
  auto it = ids_.find(name);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void ValueNumbering::define(const std::string& name, const ojson& op, const std::string& slot) {
  if (defined_.insert(name).second) return;
  auto hint = resultHint(op, slot);
  if (hint && used_.insert(*hint).second) rebound_[name] = *hint;
  else rebound_[name] = next_, used_.insert(next_++);
}

int64_t ValueNumbering::nullResult(const ojson& op, const std::string& slot) {
  auto hint = resultHint(op, slot);
  if (hint && used_.insert(*hint).second) return *hint;
  used_.insert(next_);
  return next_++;
}

void dropPirVarKeys(Job& job) {
  for (auto& program : job.programs)
    for (auto& block : program->blocks)
      for (auto& v : block->vars) {
        dropField(v->fields, kVarTypeKey);
        dropField(v->fields, kVarValueKey);
      }
}

namespace {
// kResultNamesAttr for `op`: each result's var name where import would not find it otherwise
// ("" for a "vN" var and for a parameter or data op's own name).
std::optional<ojson> resultNames(const ojson& op, const ojson& attrs) {
  std::string own;
  for (const char* key : {"parameter_name", "name"})
    if (attrs.contains(key) && attrs[key].is_string()) own = attrs[key].get<std::string>();
  ojson out = ojson::array();
  bool any = false;
  for (const auto& [slot, args] : listOf(op, "outputs").items())
    for (const auto& a : args) {
      std::string n = a.is_string() ? a.get<std::string>() : "";
      bool implied = ValueNumbering::numberInName(n) || n == own;
      out.push_back(implied ? "" : n);
      any = any || !implied;
    }
  if (!any) return std::nullopt;
  return out;
}
}  // namespace

void addSpoptAttrs(const ojson& op, const std::unordered_map<std::string, const ojson*>& vars, ojson& attrs, ojson& types) {
  if (auto names = resultNames(op, attrs)) {
    attrs[kResultNamesAttr] = *names;
    types[kResultNamesAttr] = "array<str>";
  }
  auto varOf = [&](const std::string& n) -> const ojson* {
    auto v = vars.find(n);
    return v == vars.end() ? nullptr : v->second;
  };
  if (auto dist = resultDistAttrs(op, varOf)) {
    attrs[kVarDistAttr] = *dist;
    types[kVarDistAttr] = "array<str>";
  }
  auto dist = op.find("dist_attr");
  if (dist == op.end() || !dist->is_object()) return;
  bool more = false, added = false;
  for (const auto& [k, v] : dist->items()) {
    if (!isStreamAttr(k)) more = true;
    else if (!attrs.contains(k)) added = true;
  }
  // Streams alone that are attributes already (a Paddle op as read) need no more; streams a pass
  // set only in the dist_attr must come back out of the attributes on import.
  if (!more && !added) return;
  attrs[kOpDistAttr] = ojson{{"dist_attr", *dist}, {"stream_attrs_added", added}}.dump();
  types[kOpDistAttr] = "str";
}

namespace {

struct Renamer {
  ojson& block;
  const std::string& file;
  const std::string& ops_pointer;
  std::unordered_map<std::string, size_t> index;           // var name -> position in vars
  std::unordered_map<std::string, size_t> last_read;       // var name as read -> last op reading it
  std::unordered_map<std::string, std::string> renamed;    // "vN" -> its name now
  std::unordered_set<std::string> taken;
  std::vector<bool> dropped;

  Renamer(ojson& b, const std::string& f, const std::string& p) : block(b), file(f), ops_pointer(p) {
    ojson& vars = block["vars"];
    for (size_t i = 0; i < vars.size(); ++i) {
      std::string n = vars[i].value("name", "");
      index.emplace(n, i);
      taken.insert(n);
    }
    dropped.assign(vars.size(), false);
    const ojson& ops = listOf(block, "ops");
    for (size_t i = 0; i < ops.size(); ++i)
      for (const auto& [slot, args] : listOf(ops[i], "inputs").items())
        for (const auto& a : args)
          if (a.is_string()) last_read[a.get<std::string>()] = i;
  }

  std::string current(const std::string& n) const {
    auto it = renamed.find(n);
    return it == renamed.end() ? n : it->second;
  }
  ojson* var(const std::string& n) {
    auto it = index.find(n);
    return it == index.end() ? nullptr : &block["vars"][it->second];
  }
  static const std::string* soleArg(ojson& op, const char* side, const char* slot) {
    auto s = op.find(side);
    if (s == op.end() || !s->is_object()) return nullptr;
    auto a = s->find(slot);
    if (a == s->end() || !a->is_array() || a->size() != 1 || !(*a)[0].is_string()) return nullptr;
    return &(*a)[0].get_ref<const std::string&>();
  }

  // A parameter's or data op's result takes the name Paddle gave it.
  void nameResult(ojson& op, const std::string& name) {
    const std::string* out = soleArg(op, "outputs", "out0");
    if (out && !taken.count(name)) bindResult(op, "out0", 0, name);
  }

  // Result `slot` (its arg `k`, a "vN" var) becomes the var `name`. A name not yet in the block
  // renames the var; a name already there is that var written again (a legacy program's second
  // write of a var), taken only when the types agree. Returns whether it bound.
  bool bindResult(ojson& op, const std::string& slot, size_t k, const std::string& name) {
    ojson& arg = op["outputs"][slot][k];
    std::string out = arg.get<std::string>();
    auto n = ValueNumbering::numberInName(out);
    if (!n || name.empty() || ValueNumbering::numberInName(name) || !var(out)) return false;
    if (!taken.count(name)) {
      ojson& v = *var(out);
      v["name"] = name;
      v[kVarValueKey] = *n;
      taken.insert(name);
      index.emplace(name, index.at(out));
    } else {
      ojson *tv = var(current(name)), *ov = var(out);
      if (!tv || !ov) return false;
      for (const char* key : {"shape", "dtype", kVarTypeKey})
        if (tv->value(key, ojson()) != ov->value(key, ojson())) return false;
      dropped[index.at(out)] = true;
      op[kOpKey][kResultValuesKey][slot] = *n;
    }
    renamed[out] = name;
    arg = name;
    return true;
  }

  // The results' names, from the attribute sp-opt's writers add (pir_names.h).
  void takeResultNames(ojson& op, size_t i) {
    auto attrs = op.find("attrs");
    if (attrs == op.end() || !attrs->is_object() || !attrs->contains(kResultNamesAttr)) return;
    std::string at = ops_pointer + "/" + std::to_string(i) + "/attrs/" + kResultNamesAttr;
    ojson list = takeAttr(op, kResultNamesAttr);
    std::vector<std::pair<std::string, size_t>> results;
    for (const auto& [slot, args] : listOf(op, "outputs").items())
      for (size_t k = 0; k < args.size(); ++k) results.emplace_back(slot, k);
    if (!list.is_array() || list.size() != results.size())
      throw InputError(file, at, "must hold one string per result (" + std::to_string(results.size()) + ")");
    for (size_t k = 0; k < results.size(); ++k) {
      if (!list[k].is_string()) throw InputError(file, at + "/" + std::to_string(k), "must be a string");
      const std::string& name = list[k].get_ref<const std::string&>();
      if (!name.empty() && !bindResult(op, results[k].first, results[k].second, name))
        throw InputError(file, at + "/" + std::to_string(k),
                         "\"" + name + "\" names a var of another type, or a result that is not a fresh value");
    }
  }

  // An in-place op's first result is its first operand's buffer: the same var, written again. Only
  // for state that outlives the step (a parameter, an optimizer moment): its update must land in
  // the var of its name. A temporary stays a fresh value, so that the passes see SSA (an in-place
  // all-reduce + split still fuses).
  void aliasInPlace(ojson& op, size_t i) {
    const std::string* in = soleArg(op, "inputs", "in0");
    const std::string* out = soleArg(op, "outputs", "out0");
    if (!in || !out || *in == *out) return;
    auto n = ValueNumbering::numberInName(*out);
    auto read_later = last_read.find(*in);  // the operand's old value, as the file names it
    if (!n || (read_later != last_read.end() && read_later->second > i)) return;
    std::string target = current(*in);
    ojson *tv = var(target), *ov = var(*out);
    if (!tv || !ov || !tv->value("persistable", false)) return;
    for (const char* k : {"shape", "dtype", kVarTypeKey})
      if (tv->value(k, ojson()) != ov->value(k, ojson())) return;
    dropped[index.at(*out)] = true;
    renamed[*out] = target;
    op[kOpKey][kResultValuesKey]["out0"] = *n;
    op["outputs"]["out0"][0] = target;
  }

  // Removes attribute `key` (present) with its type and its place in a parameter's "DA" list.
  static ojson takeAttr(ojson& op, const char* key) {
    ojson value = std::move(op["attrs"][key]);
    op["attrs"].erase(key);
    if (auto pir = op.find(kOpKey); pir != op.end() && pir->is_object()) {
      if (pir->contains("attr_types")) (*pir)["attr_types"].erase(key);
      if (auto da = pir->find("dist_attrs"); da != pir->end() && da->is_array()) {
        ojson kept = ojson::array();
        for (auto& n : *da)
          if (n != key) kept.push_back(n);
        *da = std::move(kept);
      }
    }
    return value;
  }

  // The results' dist_attr, from the attribute sp-opt's writers add (pir_names.h).
  void takeDistAttrs(ojson& op, size_t i) {
    auto attrs = op.find("attrs");
    if (attrs == op.end() || !attrs->is_object() || !attrs->contains(kVarDistAttr)) return;
    std::string at = ops_pointer + "/" + std::to_string(i) + "/attrs/" + kVarDistAttr;
    auto fail = [&](const std::string& where, const std::string& what) { throw InputError(file, where, what); };
    ojson list = takeAttr(op, kVarDistAttr);
    std::vector<std::string> results;
    for (const auto& [slot, args] : listOf(op, "outputs").items())
      for (const auto& a : args) results.push_back(a.is_string() ? a.get<std::string>() : "");
    if (!list.is_array() || list.size() != results.size())
      fail(at, "must hold one string per result (" + std::to_string(results.size()) + ")");
    for (size_t k = 0; k < results.size(); ++k) {
      if (!list[k].is_string()) fail(at + "/" + std::to_string(k), "must be a string");
      const std::string& text = list[k].get_ref<const std::string&>();
      if (text.empty()) continue;
      ojson dist = ojson::parse(text, nullptr, false);
      if (!dist.is_object()) fail(at + "/" + std::to_string(k), "not a JSON object: " + text);
      if (ojson* v = var(results[k])) (*v)["dist_attr"] = std::move(dist);
    }
  }

  // The op's own dist_attr, from kOpDistAttr.
  void takeOpDistAttr(ojson& op, size_t i) {
    auto attrs = op.find("attrs");
    if (attrs == op.end() || !attrs->is_object() || !attrs->contains(kOpDistAttr)) return;
    std::string at = ops_pointer + "/" + std::to_string(i) + "/attrs/" + kOpDistAttr;
    ojson text = takeAttr(op, kOpDistAttr);
    ojson kept = text.is_string() ? ojson::parse(text.get<std::string>(), nullptr, false) : ojson();
    if (!kept.is_object() || !kept.contains("dist_attr") || !kept["dist_attr"].is_object())
      throw InputError(file, at, "must be a JSON string {\"dist_attr\": {...}, \"stream_attrs_added\": bool}");
    if (kept.value("stream_attrs_added", false))
      for (const char* s : kStreamAttrs) attrs->erase(s);
    op["dist_attr"] = std::move(kept["dist_attr"]);
  }

  void run() {
    ojson& ops = block["ops"];
    for (size_t i = 0; i < ops.size(); ++i) {
      ojson& op = ops[i];
      takeDistAttrs(op, i);
      takeOpDistAttr(op, i);
      takeResultNames(op, i);
      if (op.contains("inputs"))
        for (auto& [slot, args] : op["inputs"].items())
          for (auto& a : args)
            if (a.is_string()) a = current(a.get<std::string>());
      ResolvedOp r = resolveOp(op.value("type", ""));
      if (!r) continue;
      const ojson& attrs = listOf(op, "attrs");
      auto stringAttr = [&](const char* k) { return attrs.is_object() && attrs.contains(k) && attrs[k].is_string() ? attrs[k].get<std::string>() : ""; };
      if (r.def == &opDef("parameter")) nameResult(op, stringAttr("parameter_name"));
      else if (r.def == &opDef("data")) nameResult(op, stringAttr("name"));
      else if (r.spelling->inplace) aliasInPlace(op, i);
    }
    ojson& vars = block["vars"];
    ojson kept = ojson::array();
    for (size_t i = 0; i < vars.size(); ++i)
      if (!dropped[i]) kept.push_back(std::move(vars[i]));
    vars = std::move(kept);
  }
};

}  // namespace

void nameValues(ojson& program, const std::string& file, const std::string& ops_pointer) {
  if (!program.contains("blocks")) return;
  std::unordered_map<std::string, std::string> renamed;
  for (ojson& block : program["blocks"]) {
    if (!block.contains("vars") || !block.contains("ops")) continue;
    Renamer r(block, file, ops_pointer);
    r.run();
    renamed.insert(r.renamed.begin(), r.renamed.end());
  }
  if (program.contains("fetch"))
    for (auto& f : program["fetch"])
      if (f.is_string())
        if (auto it = renamed.find(f.get<std::string>()); it != renamed.end()) f = it->second;
}

}  // namespace spopt::pir
