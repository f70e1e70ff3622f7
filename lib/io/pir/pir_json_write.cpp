// Format v1 program -> PIR JSON (see pir_json.h and docs/pir.md). What the reader kept under the
// preserved keys comes back verbatim; what a pass added is given its PIR form from the IR.
#include <charconv>
#include <unordered_map>

#include "io/atomic_file.h"
#include "io/pir/pir_json.h"
#include "io/writer.h"
#include "support/error.h"

namespace spopt::pir {
namespace {

using json = nlohmann::json;

json toJson(const ojson& v) { return json::parse(v.dump()); }

class Writer {
 public:
  Writer(const Program& p, std::string file) : program_(p), file_(std::move(file)) {}

  json write() {
    if (program_.blocks.size() != 1)
      fail("", "a program with " + std::to_string(program_.blocks.size()) + " blocks has no PIR JSON form here (one block)");
    ojson pfields = programPir();
    const Block& block = *program_.blocks[0];
    numberValues(block);
    json ops = json::array();
    for (const Op& op : block.ops) ops.push_back(writeOp(op));
    json b = {{"#", pfields.value("block_id", "block_0")}, {"args", json::array()}, {"ops", std::move(ops)}};
    json region = {{"#", pfields.value("region_id", "region_0")}, {"blocks", json::array({std::move(b)})}};
    json base = pfields.contains("base_code") ? toJson(pfields["base_code"])
                                               : json{{"magic", "pir"}, {"trainable", true}, {"version", 1}};
    return {{"base_code", std::move(base)}, {"program", {{"regions", json::array({std::move(region)})}}}};
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(file_, where, what);
  }

  ojson programPir() const {
    for (const Field& f : program_.fields)
      if (f.key == kProgramKey && !f.known()) return ojson::parse(f.raw);
    return ojson::object();
  }
  static ojson unknownField(const Fields& fields, std::string_view key) {
    for (const Field& f : fields)
      if (f.key == key && !f.known()) return ojson::parse(f.raw);
    return nullptr;
  }

  // Value ids: "vN" keeps N; a var a pass added gets the next id after the largest.
  void numberValues(const Block& block) {
    int64_t next = 1;
    for (const auto& v : block.vars) {
      if (auto id = idOfName(v->name)) next = std::max(next, *id + 1);
    }
    for (const auto& v : block.vars) {
      if (v->removed) continue;
      auto id = idOfName(v->name);
      ids_[v.get()] = id ? *id : next++;
    }
  }
  static std::optional<int64_t> idOfName(std::string_view name) {
    if (name.size() < 2 || name[0] != 'v') return std::nullopt;
    int64_t id = 0;
    auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), id);
    if (ec != std::errc() || end != name.data() + name.size() || id <= 0) return std::nullopt;
    return id;
  }
  int64_t idOf(const Var* v) const {
    auto it = ids_.find(v);
    return it == ids_.end() ? 0 : it->second;
  }

  // The var's kept PIR type while its shape and dtype still agree with it, else a dense tensor.
  json valueType(const Var& v) const {
    ojson kept = unknownField(v.fields, kVarTypeKey);
    std::string dtype(dtypeName(v.dtype));
    ojson shape = v.shape;
    if (kept.is_object() && kept.value("#", "") == "0.t_dtensor" && kept["D"].is_array() && kept["D"].size() == 5 &&
        kept["D"][1] == shape && kept["D"][0].value("#", "") == jsonTypeOfDtype(dtype).value_or(""))
      return toJson(kept);
    if (kept.is_object() && kept.value("#", "") == "0.t_vec" && kept["D"].is_array() && shape.size() == 1 &&
        shape[0] == kept["D"].size())
      return toJson(kept);
    std::string layout = kept.is_object() && kept["D"].is_array() && kept["D"].size() == 5 && kept["D"][2].is_string()
                             ? kept["D"][2].get<std::string>()
                             : "NCHW";
    return {{"#", "0.t_dtensor"}, {"D", {{{"#", *jsonTypeOfDtype(dtype)}}, toJson(shape), layout, json::array(), 0}}};
  }

  static ojson inferType(const ojson& value) {
    if (value.is_boolean()) return "bool";
    if (value.is_number_integer()) return "int32";
    if (value.is_number_float()) return "float32";
    if (value.is_string()) return "str";
    if (value.is_array()) {
      ojson types = ojson::array();
      for (const auto& e : value) types.push_back(inferType(e));
      return arrayTypeDescriptor(types);
    }
    return "str";
  }
  json attr(const ojson& value, const ojson& type, const std::string& where) const {
    if (type.is_array() || (type.is_string() && type.get<std::string>().rfind("array", 0) == 0)) {
      if (!value.is_array()) fail(where, "attribute typed " + type.dump() + " must hold an array");
      json data = json::array();
      for (size_t i = 0; i < value.size(); ++i) {
        auto et = arrayElementType(type, i);
        if (!et) fail(where, "array attribute has more elements than its type " + type.dump());
        data.push_back(attr(value[i], *et, where));
      }
      return {{"#", "0.a_array"}, {"D", std::move(data)}};
    }
    if (!type.is_string()) fail(where, "bad attribute type " + type.dump());
    return {{"#", jsonIdOfAttrType(type.get<std::string>())}, {"D", toJson(value)}};
  }
  json attrList(const ojson& names, const ojson& attrs, const ojson& types, const std::string& where) const {
    json list = json::array();
    for (const auto& n : names) {
      const std::string& name = n.get_ref<const std::string&>();
      if (!attrs.contains(name)) continue;  // a pass removed it
      ojson type = types.contains(name) ? types[name] : inferType(attrs[name]);
      list.push_back({{"AT", attr(attrs[name], type, where + "/attrs/" + name)}, {"N", name}});
    }
    return list;
  }
  static int flagOf(const ojson& attrs, const char* name) {
    auto it = attrs.find(name);
    return it != attrs.end() && it->is_array() && !it->empty() && (*it)[0] == true ? 1 : 0;
  }

  json writeOp(const Op& op) {
    ojson o = ojson::parse(opToJson(op));
    std::string where = "op " + std::to_string(op.block->opPosition(&op)) + " (" + std::string(op.type) + ")";
    ojson pir = o.contains(kOpKey) ? o[kOpKey] : ojson::object();
    ojson attrs = o.value("attrs", ojson::object());
    ojson types = pir.value("attr_types", ojson::object());
    // Streams: a pass edits them in dist_attr, where sp-opt keeps them.
    if (o.contains("dist_attr"))
      for (const char* s : kStreamAttrs)
        if (o["dist_attr"].contains(s)) attrs[s] = o["dist_attr"][s];
    ojson keys = pir.value("keys", ojson::array({"A", "I", "O", "OA"}));
    auto has = [&](const char* k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
    json out = json::object();
    std::string id = pir.value("id", "");
    if (id == "p") return parameterOp(op, attrs, types, pir, has, where);

    out["#"] = id.empty() ? compressedName(std::string(op.type)) : id;
    if (has("I")) {
      json ins = json::array();
      for (const Slot& s : op.inputs) {
        if (s.args.size() > 1) fail(where, "input slot \"" + std::string(s.name) + "\" holds more than one var");
        ins.push_back({{"%", s.args.empty() ? 0 : idOf(s.args[0].var)}});
      }
      out["I"] = std::move(ins);
    }
    if (has("O")) {
      json outs = json::array();
      for (const Slot& s : op.outputs) {
        if (s.args.size() != 1) fail(where, "output slot \"" + std::string(s.name) + "\" must hold one var");
        outs.push_back({{"%", idOf(s.args[0].var)}, {"TT", valueType(*s.args[0].var)}});
      }
      out["O"] = std::move(outs);
    }
    ojson result_names = pir.value("result_attrs", ojson::array({"persistable", "stop_gradient"}));
    ojson attr_names = ojson::array();
    for (auto it = attrs.begin(); it != attrs.end(); ++it)
      if (std::find(result_names.begin(), result_names.end(), it.key()) == result_names.end())
        attr_names.push_back(it.key());
    if (has("A")) out["A"] = attrList(attr_names, attrs, types, where);
    if (has("OA")) out["OA"] = attrList(result_names, attrs, types, where);
    return out;
  }

  template <typename Has>
  json parameterOp(const Op& op, const ojson& attrs, const ojson& types, const ojson& pir, Has has,
                   const std::string& where) {
    json out = {{"#", "p"}};
    if (op.outputs.size() != 1 || op.outputs[0].args.size() != 1) fail(where, "a parameter op has one result");
    const Var& v = *op.outputs[0].args[0].var;
    out["O"] = {{"%", idOf(&v)}, {"TT", valueType(v)}};
    if (has("A"))
      out["A"] = {flagOf(attrs, "is_distributed"), flagOf(attrs, "is_parameter"), flagOf(attrs, "need_clip"),
                  attrs.value("parameter_name", "")};
    if (has("DA")) out["DA"] = attrList(pir.value("dist_attrs", ojson::array()), attrs, types, where);
    if (has("QA")) out["QA"] = attrList(pir.value("quant_attrs", ojson::array()), attrs, types, where);
    if (has("OA"))
      out["OA"] = {flagOf(attrs, "persistable"), flagOf(attrs, "stop_gradient"), flagOf(attrs, "trainable")};
    return out;
  }

  static std::string compressedName(const std::string& type) {
    static const std::pair<const char*, const char*> kDialects[] = {
        {"builtin", "0"}, {"pd_op", "1"}, {"cf", "2"}, {"custom_op", "3"}, {"dist", "4"}};
    auto dot = type.find('.');
    std::string prefix = type.substr(0, dot);
    for (const auto& [name, num] : kDialects)
      if (dot != std::string::npos && prefix == name) return num + type.substr(dot);
    return type;
  }

  const Program& program_;
  std::string file_;
  std::unordered_map<const Var*, int64_t> ids_;
};

}  // namespace

std::string writePirJson(const Program& program, const std::string& display_name) {
  return Writer(program, display_name).write().dump();
}

void writePirJsonFile(const Program& program, const std::string& path) {
  std::string text = writePirJson(program, path);
  writeFileAtomic(path, text);
}

}  // namespace spopt::pir
