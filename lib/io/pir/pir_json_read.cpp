// PIR JSON -> format v1 program (see pir_json.h and docs/pir.md).
#include <optional>
#include <unordered_map>

#include "io/pir/pir_json.h"
#include "io/pir/pir_fetch.h"
#include "io/pir/pir_names.h"
#include "io/source.h"
#include "ops/op_def.h"
#include "support/error.h"

namespace spopt::pir {
namespace {

using json = nlohmann::json;

// Dialect ids of compressed op names ("1.add" is pd_op.add), as Paddle's serializer numbers them.
constexpr std::pair<const char*, const char*> kDialects[] = {
    {"0", "builtin"}, {"1", "pd_op"}, {"2", "cf"}, {"3", "custom_op"}, {"4", "dist"}};

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  ojson program(const json& root) {
    object(root, "the document", {"base_code", "program"});
    const json& base = member(root, "base_code");
    {
      Scope s(*this, "base_code");
      object(base, "\"base_code\"", {});
      auto magic = base.find("magic");
      if (magic == base.end() || *magic != "pir") fail("\"magic\" must be \"pir\" (not a PIR JSON file)");
    }
    const json& prog = member(root, "program");
    Scope sp(*this, "program");
    object(prog, "\"program\"", {"regions"});
    const json& region = single(member(prog, "regions"), "regions", "top-level region");
    Scope sr(*this, "regions"), sr0(*this, "0");
    object(region, "a region", {"#", "blocks"});
    std::string region_id = name(region, "a region");
    const json& block = single(member(region, "blocks"), "blocks", "block in the top-level region");
    Scope sb(*this, "blocks"), sb0(*this, "0");
    object(block, "a block", {"#", "args", "ops", "kwargs"});
    std::string block_id = name(block, "a block");
    if (block.contains("kwargs")) at("kwargs", [&] { fail("block keyword arguments are not supported"); });
    const json& args = member(block, "args");
    if (!args.is_array() || !args.empty())
      at("args", [&] { fail("block arguments are not supported (only a program's top-level block)"); });

    ojson vars = ojson::array(), ops = ojson::array(), fetch = ojson::array();
    const json& op_list = member(block, "ops");
    Scope so(*this, "ops");
    if (!op_list.is_array()) fail("\"ops\" must be an array");
    for (size_t i = 0; i < op_list.size(); ++i) {
      Scope si(*this, std::to_string(i));
      ops.push_back(op(op_list[i], vars, fetch));
    }

    ojson out = ojson::object();
    if (!fetch.empty()) out["fetch"] = fetch;
    ojson b = ojson::object();
    b["idx"] = 0;
    b["parent_idx"] = -1;
    b["vars"] = std::move(vars);
    b["ops"] = std::move(ops);
    out["blocks"] = ojson::array({std::move(b)});
    out[kProgramKey] = {{"base_code", ojson::parse(base.dump())},
                        {"region_id", region_id},
                        {"block_id", block_id}};
    nameValues(out, file_, "/program/regions/0/blocks/0/ops");
    restoreFetchList(out, file_, "/program/regions/0/blocks/0/ops");
    return out;
  }

 private:
  // Nested attributes recurse: a hostile file must not exhaust the stack.
  static constexpr int kMaxNesting = 32;
  struct Nest {
    explicit Nest(Reader& r) : r_(r) {
      if (++r_.nesting_ > kMaxNesting) r_.fail("attributes nested more than 32 deep");
    }
    ~Nest() { --r_.nesting_; }
    Reader& r_;
  };
  struct Scope {
    Scope(Reader& r, std::string token) : r_(r) { r_.path_.push_back(std::move(token)); }
    ~Scope() { r_.path_.pop_back(); }
    Reader& r_;
  };
  template <typename F>
  void at(const std::string& token, F f) {
    Scope s(*this, token);
    f();
  }

  [[noreturn]] void fail(const std::string& what) const {
    std::string pointer;
    for (const auto& t : path_) pointer += "/" + pointerToken(t);
    throw InputError(file_, pointer, what);
  }

  void object(const json& v, const char* what, std::initializer_list<const char*> allowed) {
    if (!v.is_object()) fail(std::string(what) + " must be an object");
    if (allowed.size() == 0) return;
    for (auto it = v.begin(); it != v.end(); ++it) {
      bool ok = false;
      for (const char* k : allowed) ok = ok || it.key() == k;
      if (!ok) at(it.key(), [&] { fail("unknown key \"" + it.key() + "\" in " + what); });
    }
  }
  const json& member(const json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end()) fail(std::string("missing key \"") + key + "\"");
    return *it;
  }
  const json& single(const json& arr, const char* key, const char* what) {
    Scope s(*this, key);
    if (!arr.is_array()) fail(std::string("\"") + key + "\" must be an array");
    if (arr.size() != 1)
      fail("exactly one " + std::string(what) + " is supported, found " + std::to_string(arr.size()));
    return arr[0];
  }
  std::string name(const json& obj, const char* what) {
    const json& id = member(obj, "#");
    if (!id.is_string()) at("#", [&] { fail(std::string("the \"#\" of ") + what + " must be a string"); });
    return id.get<std::string>();
  }
  int64_t integer(const json& v, const char* what) {
    if (!v.is_number_integer()) fail(std::string(what) + " must be an integer");
    return v.get<int64_t>();
  }

  // An attribute {"AT": {"#": id, "D": data}, "N": name}: its plain value and type descriptor.
  ojson attrValue(const json& at_json, ojson& type) {
    Nest nest(*this);
    object(at_json, "an attribute value", {"#", "D"});
    const json& id = member(at_json, "#");
    if (!id.is_string()) at("#", [&] { fail("an attribute type id must be a string"); });
    const json& data = member(at_json, "D");
    Scope s(*this, "D");
    if (id == "0.a_array") {
      if (!data.is_array()) fail("the data of an array attribute must be an array");
      ojson values = ojson::array(), types = ojson::array();
      for (size_t i = 0; i < data.size(); ++i) {
        Scope se(*this, std::to_string(i));
        ojson t;
        values.push_back(attrValue(data[i], t));
        types.push_back(std::move(t));
      }
      type = arrayTypeDescriptor(types);
      return values;
    }
    type = attrTypeOfJsonId(id.get<std::string>());
    return ojson::parse(data.dump());
  }

  // A list of named attributes into attrs/types; returns the names in order.
  ojson attrList(const json& list, const char* key, ojson& attrs, ojson& types) {
    Scope s(*this, key);
    if (!list.is_array()) fail(std::string("\"") + key + "\" must be an array of attributes");
    ojson names = ojson::array();
    for (size_t i = 0; i < list.size(); ++i) {
      Scope si(*this, std::to_string(i));
      object(list[i], "an attribute", {"AT", "N"});
      const json& name = member(list[i], "N");
      if (!name.is_string()) at("N", [&] { fail("an attribute name must be a string"); });
      const std::string& n = name.get_ref<const std::string&>();
      if (attrs.contains(n)) at("N", [&] { fail("attribute \"" + n + "\" given twice"); });
      ojson type;
      {
        Scope sa(*this, "AT");
        attrs[n] = attrValue(member(list[i], "AT"), type);
      }
      types[n] = std::move(type);
      names.push_back(n);
    }
    return names;
  }

  // A value's type: shape and dtype of the var it becomes.
  void valueType(const json& tt, ojson& var) {
    Scope s(*this, "TT");
    object(tt, "a value type", {"#", "D"});
    const json& id = member(tt, "#");
    if (id == "0.t_dtensor") {
      const json& d = member(tt, "D");
      Scope sd(*this, "D");
      if (!d.is_array() || d.size() != 5) fail("a dense tensor type must be [dtype, dims, layout, lod, offset]");
      var["shape"] = dims(d[1]);
      var["dtype"] = elementType(d[0]);
    } else if (id == "0.t_vec") {
      const json& d = member(tt, "D");
      Scope sd(*this, "D");
      if (!d.is_array()) fail("a vector type's data must be an array of types");
      // A vector of tensors is one var: shape [element count], dtype of the elements.
      std::string dtype = "float32";
      for (size_t i = 0; i < d.size(); ++i) {
        Scope se(*this, std::to_string(i));
        object(d[i], "a vector element type", {"#", "D"});
        if (member(d[i], "#") != "0.t_dtensor") fail("only vectors of dense tensors are supported");
        Scope sed(*this, "D");
        if (!d[i]["D"].is_array() || d[i]["D"].size() != 5) fail("a dense tensor type must be [dtype, dims, layout, lod, offset]");
        dims(d[i]["D"][1]);
        std::string t = elementType(d[i]["D"][0]);
        if (i == 0) dtype = t;
      }
      var["shape"] = ojson::array({static_cast<int64_t>(d.size())});
      var["dtype"] = dtype;
    } else {
      at("#", [&] { fail("value type " + id.dump() + " is not supported (dense tensors and vectors of them)"); });
    }
    var[kVarTypeKey] = ojson::parse(tt.dump());
  }
  ojson dims(const json& d) {
    Scope s(*this, "1");
    if (!d.is_array()) fail("dims must be an array of integers");
    for (size_t i = 0; i < d.size(); ++i)
      if (!d[i].is_number_integer() || d[i].get<int64_t>() < -1)
        at(std::to_string(i), [&] { fail("a dimension must be an integer >= -1"); });
    return ojson::parse(d.dump());
  }
  std::string elementType(const json& t) {
    Scope s(*this, "0");
    object(t, "an element type", {"#"});
    const json& id = member(t, "#");
    auto dt = id.is_string() ? dtypeOfJsonType(id.get<std::string>()) : std::nullopt;
    if (!dt)
      at("#", [&] { fail("element type " + id.dump() + " has no format v1 dtype (f32 f64 f16 bf16 i32 i64 bool ui8)"); });
    return *dt;
  }

  // A result of the null type (kNullTypeJsonId): its value id (0: none), recorded as defined.
  std::optional<int64_t> nullResult(const json& result) {
    if (!result.is_object() || !result.contains("TT") || !result["TT"].is_object()) return std::nullopt;
    const json& tt = result["TT"];
    auto id = tt.find("#");
    if (id == tt.end() || *id != kNullTypeJsonId) return std::nullopt;
    object(result, "a result", {"%", "TT"});
    Scope s(*this, "%");
    int64_t v = integer(member(result, "%"), "a value id");
    if (v < 0) fail("a result must have a positive value id (0 is the null value, negative ids are block arguments)");
    if (v > 0 && defined_.count(v)) fail("value %" + std::to_string(v) + " is defined twice");
    if (v > 0) defined_.emplace(v, "");
    return v;
  }

  std::string defineValue(const json& result, ojson& vars, bool persistable) {
    object(result, "a result", {"%", "TT"});
    int64_t id;
    {
      Scope s(*this, "%");
      id = integer(member(result, "%"), "a value id");
      if (id <= 0) fail("a result must have a positive value id (0 is the null value, negative ids are block arguments)");
      if (defined_.count(id)) fail("value %" + std::to_string(id) + " is defined twice");
    }
    std::string name = valueVarName(std::to_string(id));
    defined_.emplace(id, name);
    ojson var = {{"name", name}};
    valueType(member(result, "TT"), var);
    var["persistable"] = persistable;
    ojson ordered = {{"name", name}, {"shape", var["shape"]}, {"dtype", var["dtype"]},
                     {"persistable", persistable}, {kVarTypeKey, var[kVarTypeKey]}};
    vars.push_back(std::move(ordered));
    return name;
  }

  static bool flag(const ojson& attrs, const char* name, size_t i, bool dflt) {
    auto it = attrs.find(name);
    if (it == attrs.end() || !it->is_array() || i >= it->size() || !(*it)[i].is_boolean()) return dflt;
    return (*it)[i].get<bool>();
  }

  std::string opName(const std::string& id) {
    auto dot = id.find('.');
    std::string prefix = id.substr(0, dot == std::string::npos ? 0 : dot);
    for (const auto& [num, name] : kDialects) {
      if (prefix == num) return name + id.substr(dot);
      if (prefix == name) return id;  // written uncompressed: kept (and so written back)
    }
    at("#", [&] { fail("unknown dialect in op name \"" + id + "\" (known ids 0-4: builtin pd_op cf custom_op dist)"); });
    return {};
  }

  ojson op(const json& o, ojson& vars, ojson& fetch) {
    object(o, "an op", {"#", "A", "I", "O", "OA", "DA", "QA", "regions"});
    const json& id = member(o, "#");
    if (!id.is_string()) at("#", [&] { fail("an op name must be a string"); });
    if (o.contains("regions"))
      at("regions", [&] { fail("ops with regions (control flow: pd_op.if, pd_op.while) are not supported"); });
    ojson keys = ojson::array();
    for (auto it = o.begin(); it != o.end(); ++it)
      if (it.key() != "#") keys.push_back(it.key());
    ojson attrs = ojson::object(), types = ojson::object(), pir = ojson::object();
    ojson out = ojson::object();
    if (id == "p") return parameterOp(o, keys, vars);
    for (const char* k : {"DA", "QA"})
      if (o.contains(k)) at(k, [&] { fail(std::string("\"") + k + "\" belongs to parameter ops (\"#\": \"p\") only"); });
    std::string type = opName(id.get<std::string>());
    out["type"] = type;
    ojson inputs = ojson::object(), outputs = ojson::object();
    if (o.contains("I")) {
      Scope s(*this, "I");
      const json& ins = o["I"];
      if (!ins.is_array()) fail("\"I\" must be an array of operands");
      for (size_t i = 0; i < ins.size(); ++i) {
        Scope si(*this, std::to_string(i));
        object(ins[i], "an operand", {"%"});
        Scope sv(*this, "%");
        int64_t v = integer(member(ins[i], "%"), "a value id");
        ojson args = ojson::array();
        if (v != 0) {
          auto d = defined_.find(v);
          if (d == defined_.end()) fail("dangling value %" + std::to_string(v) + ": no op before this one defines it");
          if (!d->second.empty()) args.push_back(d->second);  // a result holding no value: a null operand
        }
        inputs[slotName("in", i)] = std::move(args);
      }
    }
    ojson result_attrs, null_results = ojson::object();
    if (o.contains("A")) attrList(o["A"], "A", attrs, types);
    if (o.contains("OA")) result_attrs = attrList(o["OA"], "OA", attrs, types);
    if (o.contains("O")) {
      Scope s(*this, "O");
      const json& outs = o["O"];
      if (!outs.is_array()) fail("\"O\" must be an array of results");
      for (size_t i = 0; i < outs.size(); ++i) {
        Scope si(*this, std::to_string(i));
        if (auto n = nullResult(outs[i])) {  // holds no value: an empty slot; its number is kept
          outputs[slotName("out", i)] = ojson::array();
          if (*n > 0) null_results[slotName("out", i)] = *n;
          continue;
        }
        std::string name = defineValue(outs[i], vars, flag(attrs, "persistable", i, false));
        outputs[slotName("out", i)] = ojson::array({name});
        if (const OpDef* def = resolveOp(type).def; def && def->has(trait::Sink)) fetch.push_back(name);
      }
    }
    out["inputs"] = std::move(inputs);
    out["outputs"] = std::move(outputs);
    out["attrs"] = attrs;
    ojson dist = ojson::object();
    for (const char* s : kStreamAttrs)
      if (attrs.contains(s)) dist[s] = attrs[s];
    if (!dist.empty()) out["dist_attr"] = std::move(dist);
    pir["keys"] = std::move(keys);
    if (id.get<std::string>() != compressedName(type)) pir["id"] = id;  // written uncompressed
    pir["attr_types"] = std::move(types);
    if (!result_attrs.is_null()) pir["result_attrs"] = std::move(result_attrs);
    if (!null_results.empty()) pir[kResultValuesKey] = std::move(null_results);
    out[kOpKey] = std::move(pir);
    return out;
  }

  static std::string compressedName(const std::string& type) {
    auto dot = type.find('.');
    std::string prefix = type.substr(0, dot);
    for (const auto& [num, name] : kDialects)
      if (prefix == name) return num + type.substr(dot);
    return type;
  }

  // Paddle writes builtin.parameter compressed: "A" [is_distributed, is_parameter, need_clip,
  // parameter_name] (0/1 flags), "OA" [persistable, stop_gradient, trainable], "DA" (op_dist_attr,
  // op_role) and "QA" (struct_name) as attribute lists, "O" one result object.
  ojson parameterOp(const json& o, const ojson& keys, ojson& vars) {
    ojson attrs = ojson::object(), types = ojson::object(), pir = ojson::object();
    auto flags = [&](const char* key, std::initializer_list<const char*> names, size_t extra) {
      Scope s(*this, key);
      const json& a = member(o, key);
      if (!a.is_array() || a.size() != names.size() + extra)
        fail("a parameter op's \"" + std::string(key) + "\" must have " + std::to_string(names.size() + extra) + " entries");
      size_t i = 0;
      for (const char* n : names) {
        Scope si(*this, std::to_string(i));
        if (a[i] != 0 && a[i] != 1) fail(std::string("flag \"") + n + "\" must be 0 or 1");
        attrs[n] = ojson::array({a[i] == 1});
        types[n] = "array<bool>";
        ++i;
      }
      return &a;
    };
    const json* a = flags("A", {"is_distributed", "is_parameter", "need_clip"}, 1);
    if (!(*a)[3].is_string()) at("A", [&] { at("3", [&] { fail("parameter_name must be a string"); }); });
    attrs["parameter_name"] = (*a)[3].get<std::string>();
    types["parameter_name"] = "str";
    if (o.contains("DA")) pir["dist_attrs"] = attrList(o["DA"], "DA", attrs, types);
    if (o.contains("QA")) pir["quant_attrs"] = attrList(o["QA"], "QA", attrs, types);
    if (o.contains("OA")) flags("OA", {"persistable", "stop_gradient", "trainable"}, 0);
    if (o.contains("I") || o.contains("regions")) fail("a parameter op has no operands or regions");
    std::string name;
    {
      Scope s(*this, "O");
      name = defineValue(member(o, "O"), vars, flag(attrs, "persistable", 0, true));
    }
    ojson out = {{"type", "builtin.parameter"}, {"inputs", ojson::object()},
                 {"outputs", {{"out0", ojson::array({name})}}}, {"attrs", attrs}};
    pir["keys"] = keys;
    pir["id"] = "p";
    pir["attr_types"] = std::move(types);
    out[kOpKey] = std::move(pir);
    return out;
  }

  std::string file_;
  std::vector<std::string> path_;
  std::unordered_map<int64_t, std::string> defined_;
  int nesting_ = 0;
};

}  // namespace

// nlohmann's dump and comparisons recurse: depth is bounded before anything is parsed.
static void checkDepth(std::string_view text, const std::string& display_name) {
  constexpr int kMaxDepth = 128;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) throw InputError(display_name, "byte " + std::to_string(i + 1), "JSON nested more than 128 deep");
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

ojson pirJsonToProgram(std::string_view text, const std::string& display_name) {
  checkDepth(text, display_name);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    std::string why = e.what();
    size_t at = why.find("syntax error");
    throw InputError(display_name, "byte " + std::to_string(e.byte),
                     "malformed JSON" + (at == std::string::npos ? std::string() : ": " + why.substr(at)));
  } catch (const json::out_of_range& e) {  // a number past double's range: 1e999
    std::string why = e.what();
    size_t at = why.find("number overflow");
    throw InputError(display_name, "", "malformed JSON: " + (at == std::string::npos ? why : why.substr(at)));
  }
  return Reader(display_name).program(root);
}

ojson readPirJson(const std::string& path) {
  return pirJsonToProgram(readInputFile(path), path);
}

}  // namespace spopt::pir
