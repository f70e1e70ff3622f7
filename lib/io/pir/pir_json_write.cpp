// Format v1 program -> PIR JSON (see pir_json.h and docs/pir.md). What the reader kept under the
// preserved keys comes back verbatim; what a pass added is given its PIR form from the IR.
#include <charconv>
#include <unordered_map>
#include <unordered_set>

#include "io/pir/pir_json.h"
#include "io/pir/pir_names.h"
#include "ops/op_def.h"
#include "support/error.h"

namespace spopt::pir {
namespace {

using json = nlohmann::json;

json toJson(const ojson& v) { return json::parse(v.dump()); }

class Writer {
 public:
  Writer(const ojson& p, std::string where) : program_(p), where_(std::move(where)) {}

  json write() {
    const ojson& blocks = program_.value("blocks", ojson::array());
    if (blocks.size() != 1)
      fail("", "a program with " + std::to_string(blocks.size()) + " blocks has no PIR JSON form here (one block)");
    ojson pfields = program_.value(kProgramKey, ojson::object());
    const ojson& block = blocks[0];
    numberValues(block);
    json ops = json::array();
    const ojson& op_list = block.value("ops", ojson::array());
    for (size_t i = 0; i < op_list.size(); ++i) ops.push_back(writeOp(op_list[i], i));
    json b = {{"#", pfields.value("block_id", "block_0")}, {"args", json::array()}, {"ops", std::move(ops)}};
    json region = {{"#", pfields.value("region_id", "region_0")}, {"blocks", json::array({std::move(b)})}};
    json base = pfields.contains("base_code") ? toJson(pfields["base_code"])
                                               : json{{"magic", "pir"}, {"trainable", true}, {"version", 1}};
    return {{"base_code", std::move(base)}, {"program", {{"regions", json::array({std::move(region)})}}}};
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(where_, where, what);
  }

  // Values are numbered as they were read (pir_names.h); a var a pass added gets the next free id.
  void numberValues(const ojson& block) {
    static const ojson kNone = ojson::array();
    const ojson& vars = block.contains("vars") ? block.at("vars") : kNone;  // vars_ points into it
    for (const auto& v : vars) vars_[v.value("name", "")] = &v;
    numbers_.emplace(block, 1);
  }
  // The value a var holds now: a var written again (sgd's ParamOut = Param, an in-place
  // all-reduce) is a new SSA value from that op on.
  int64_t idOf(const std::string& name, const std::string& where) const {
    auto n = numbers_->idOf(name);
    if (!n) fail(where, "var \"" + name + "\" is not declared in the block");
    return *n;
  }

  // The var's kept PIR type while its shape and dtype still agree with it, else a dense tensor.
  json valueType(const std::string& name, const std::string& where) const {
    idOf(name, where);  // declared
    const ojson& v = *vars_.at(name);
    ojson kept = v.value(kVarTypeKey, ojson());
    std::string dtype = v.value("dtype", "");
    ojson shape = v.value("shape", ojson::array());
    if (!jsonTypeOfDtype(dtype)) fail(where, "var \"" + name + "\" has dtype \"" + dtype + "\" with no PIR JSON type");
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

  json writeOp(const ojson& o, size_t index) {
    std::string type = o.value("type", "");
    std::string where = "/blocks/0/ops/" + std::to_string(index);
    ojson pir = o.value(kOpKey, ojson::object());
    ojson attrs = o.value("attrs", ojson::object());
    ojson types = pir.value("attr_types", ojson::object());
    addSpoptAttrs(o, vars_, attrs, types);
    // Streams: a pass edits them in dist_attr, where sp-opt keeps them.
    if (o.contains("dist_attr"))
      for (const char* s : kStreamAttrs)
        if (o.at("dist_attr").contains(s)) attrs[s] = o.at("dist_attr").at(s);
    ojson keys = pir.value("keys", ojson::array({"A", "I", "O", "OA"}));
    auto has = [&](const char* k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
    json out = json::object();
    std::string id = pir.value("id", "");
    const ojson& inputs = o.value("inputs", ojson::object());
    const ojson& outputs = o.value("outputs", ojson::object());
    // Paddle writes a parameter in its own compact form ("p"), also one a translation made.
    if (id == "p" || resolveOp(type).def == &opDef("parameter")) return parameterOp(outputs, attrs, types, pir, has, where);

    out["#"] = id.empty() ? compressedName(type) : id;
    if (has("I")) {
      json ins = json::array();
      for (auto it = inputs.begin(); it != inputs.end(); ++it) {
        if (it->size() > 1) fail(where, "input slot \"" + it.key() + "\" holds more than one var (PIR: one value per operand)");
        ins.push_back({{"%", it->empty() ? 0 : idOf((*it)[0].get<std::string>(), where)}});
      }
      out["I"] = std::move(ins);
    }
    if (has("O")) {
      json outs = json::array();
      for (auto it = outputs.begin(); it != outputs.end(); ++it) {
        if (it->size() > 1) fail(where, "output slot \"" + it.key() + "\" must hold one var (PIR: one value per result)");
        if (it->empty()) {  // a result that holds no value: numbered, of the null type
          outs.push_back({{"%", numbers_->nullResult(o, it.key())}, {"TT", {{"#", kNullTypeJsonId}}}});
          continue;
        }
        std::string name = (*it)[0].get<std::string>();
        numbers_->define(name, o, it.key());
        outs.push_back({{"%", idOf(name, where)}, {"TT", valueType(name, where)}});
      }
      out["O"] = std::move(outs);
    }
    // Without "OA" every attribute came from "A", whatever its name (a stop_gradient there stays).
    ojson result_names = has("OA") ? pir.value("result_attrs", ojson::array({"persistable", "stop_gradient"})) : ojson::array();
    ojson attr_names = ojson::array();
    for (auto it = attrs.begin(); it != attrs.end(); ++it)
      if (std::find(result_names.begin(), result_names.end(), it.key()) == result_names.end())
        attr_names.push_back(it.key());
    if (has("A")) out["A"] = attrList(attr_names, attrs, types, where);
    if (has("OA")) out["OA"] = attrList(result_names, attrs, types, where);
    return out;
  }

  template <typename Has>
  json parameterOp(const ojson& outputs, const ojson& attrs, const ojson& types, const ojson& pir, Has has,
                   const std::string& where) {
    json out = {{"#", "p"}};
    if (outputs.size() != 1 || outputs.begin()->size() != 1) fail(where, "a parameter op has one result");
    std::string name = (*outputs.begin())[0].get<std::string>();
    numbers_->define(name, ojson::object(), "");
    out["O"] = {{"%", idOf(name, where)}, {"TT", valueType(name, where)}};
    if (has("A"))
      out["A"] = {flagOf(attrs, "is_distributed"), flagOf(attrs, "is_parameter"), flagOf(attrs, "need_clip"),
                  attrs.value("parameter_name", "")};
    ojson dist_names = pir.value("dist_attrs", ojson::array());
    for (const char* kept : {kResultNamesAttr, kVarDistAttr, kOpDistAttr})  // sp-opt's attributes
      if (attrs.contains(kept)) dist_names.push_back(kept);
    if (has("DA") || !dist_names.empty()) out["DA"] = attrList(dist_names, attrs, types, where);
    if (has("QA")) out["QA"] = attrList(pir.value("quant_attrs", ojson::array()), attrs, types, where);
    if (has("OA"))
      // A parameter's value lives on unless it says otherwise (the readers' default too).
      out["OA"] = {attrs.contains("persistable") ? flagOf(attrs, "persistable") : 1, flagOf(attrs, "stop_gradient"),
                   flagOf(attrs, "trainable")};
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

  const ojson& program_;
  std::string where_;
  std::optional<ValueNumbering> numbers_;
  std::unordered_map<std::string, const ojson*> vars_;
};

}  // namespace

std::string writePirJson(const ojson& program, const std::string& where) {
  return Writer(program, where).write().dump();
}

}  // namespace spopt::pir
