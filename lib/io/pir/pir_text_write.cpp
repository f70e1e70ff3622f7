// Format v1 program -> PIR text, as Paddle prints a program (see pir_text.h, docs/pir.md).
#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "io/pir/pir_names.h"
#include "io/pir/pir_text.h"
#include "support/error.h"

namespace spopt::pir {
namespace {

class TextWriter {
 public:
  TextWriter(const ojson& p, std::string where) : program_(p), where_(std::move(where)) {}

  std::string write() {
    const ojson& blocks = program_.value("blocks", ojson::array());
    if (blocks.size() != 1)
      throw InputError(where_, "", "a program with " + std::to_string(blocks.size()) + " blocks has no PIR text form here (one block)");
    const ojson& block = blocks[0];
    if (block.contains("vars"))
      for (const auto& v : block.at("vars")) vars_[v.value("name", "")] = &v;
    // Values are numbered as they were read (pir_names.h); a var a pass or a translation added
    // takes the next free number, so Paddle's parser (and import) read the text back.
    numbers_.emplace(block, 0);
    std::string out = "{\n";
    if (block.contains("ops"))
      for (size_t i = 0; i < block.at("ops").size(); ++i) out += "    " + op(block.at("ops")[i], i) + "\n";
    return out + "}\n";
  }

 private:
  [[noreturn]] void fail(size_t i, const std::string& what) const {
    throw InputError(where_, "/blocks/0/ops/" + std::to_string(i), what);
  }
  std::string value(const std::string& name) const {
    auto n = numbers_->idOf(name);
    return "%" + (n ? std::to_string(*n) : name);
  }
  std::string type(const std::string& name, size_t i) const {
    auto it = vars_.find(name);
    if (it == vars_.end()) fail(i, "var \"" + name + "\" is not declared in the block");
    const ojson& v = *it->second;
    std::string dtype = v.value("dtype", "");
    ojson shape = v.value("shape", ojson::array());
    ojson kept = v.value(kVarTypeKey, ojson());
    std::string fresh = tensorType(shape, dtype, i);
    // A kept spelling holds while it agrees with the var: the same <dims x dtype> (pd_op.tensor<...>
    // stays as written), or a vec whose element count is the var's shape.
    if (kept.is_string()) {
      const std::string& k = kept.get_ref<const std::string&>();
      if (k.rfind("vec[", 0) == 0 && shape.size() == 1) return k;
      size_t lt = k.find('<');
      if (lt != std::string::npos && k.substr(lt) == fresh.substr(fresh.find('<'))) return k;
    }
    return fresh;
  }
  std::string tensorType(const ojson& shape, const std::string& dtype, size_t i) const {
    std::optional<std::string> t = textTypeOfDtype(dtype);
    if (!t) fail(i, "dtype \"" + dtype + "\" has no PIR text spelling");
    std::string out = "builtin.tensor<";
    for (const auto& d : shape) out += d.dump() + "x";
    return out + *t + ">";
  }

  static ojson inferType(const ojson& v) {
    if (v.is_boolean()) return "bool";
    if (v.is_number_integer()) return "int32";
    if (v.is_number_float()) return "float32";
    if (v.is_array()) {
      ojson types = ojson::array();
      for (const auto& e : v) types.push_back(inferType(e));
      return arrayTypeDescriptor(types);
    }
    return "str";
  }
  static std::string attr(const ojson& v, const ojson& type) {
    if (v.is_array() && (type.is_array() || type.get<std::string>().rfind("array", 0) == 0)) {
      std::string out = "[";
      for (size_t k = 0; k < v.size(); ++k) {
        auto et = arrayElementType(type, k);
        out += (k ? "," : "") + attr(v[k], et ? *et : inferType(v[k]));
      }
      return out + "]";
    }
    std::string t = type.is_string() ? type.get<std::string>() : "str";
    if (t == "bool") return v.dump();
    if (t == "str") return "\"" + escape(v.is_string() ? v.get<std::string>() : v.dump()) + "\"";
    std::string kind = textKindOfAttrType(t);
    std::string body = v.is_string() ? v.get<std::string>() : v.dump();
    if (t == "place") body = "Place(" + body + ")";
    return "(" + kind + ")" + body;
  }
  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\', out += c;
      else if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c == '\r') out += "\\r";
      else out += c;
    }
    return out;
  }

  std::string op(const ojson& o, size_t i) const {
    std::string results, operands, in_types, out_types;
    const ojson outputs = o.value("outputs", ojson::object());
    const ojson inputs = o.value("inputs", ojson::object());
    bool first = true;
    for (auto it = inputs.begin(); it != inputs.end(); ++it) {
      if (it->size() > 1) fail(i, "input slot \"" + it.key() + "\" holds more than one var (PIR: one value per operand)");
      std::string sep = first ? "" : ", ";
      first = false;
      if (it->empty()) {
        operands += sep + "<<NULL VALUE>>";
        in_types += sep + kNullTypeText;
        continue;
      }
      std::string name = (*it)[0].get<std::string>();
      operands += sep + value(name);
      in_types += sep + type(name, i);
    }
    // Results after operands: a var written again (sgd_'s ParamOut = Param) is a new SSA value
    // from here on.
    for (auto it = outputs.begin(); it != outputs.end(); ++it) {
      if (it->size() > 1) fail(i, "output slot \"" + it.key() + "\" must hold one var (PIR: one value per result)");
      std::string sep = results.empty() ? "" : ", ";
      if (it->empty()) {  // a result that holds no value (adamw_'s moment2_max_out): a value of no type
        results += sep + "%" + std::to_string(numbers_->nullResult(o, it.key()));
        out_types += sep + kNullTypeText;
        continue;
      }
      std::string name = (*it)[0].get<std::string>();
      numbers_->define(name, o, it.key());
      results += sep + value(name);
      out_types += sep + type(name, i);
    }
    ojson attrs = o.value("attrs", ojson::object());
    ojson types = o.value(kOpKey, ojson::object()).value("attr_types", ojson::object());
    addSpoptAttrs(o, vars_, attrs, types);
    if (o.contains("dist_attr"))
      for (const char* s : kStreamAttrs)
        if (o.at("dist_attr").contains(s)) attrs[s] = o.at("dist_attr").at(s);
    std::string a;
    for (auto it = attrs.begin(); it != attrs.end(); ++it)
      a += (a.empty() ? "" : ",") + it.key() + ":" + attr(*it, types.contains(it.key()) ? types[it.key()] : inferType(*it));
    return "(" + results + ") = \"" + o.value("type", "") + "\" (" + operands + ") {" + a + "} : (" + in_types +
           ") -> " + out_types;
  }

  const ojson& program_;
  std::string where_;
  std::unordered_map<std::string, const ojson*> vars_;
  mutable std::optional<ValueNumbering> numbers_;
};

}  // namespace

std::string writePirText(const ojson& program, const std::string& where) { return TextWriter(program, where).write(); }

}  // namespace spopt::pir
