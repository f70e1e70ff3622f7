// PIR text -> format v1 program (see pir_text.h and docs/pir.md).
//
//   program := '{' op* '}'
//   op      := ['(' values ')' '='] STRING '(' operands ')' ['{' attr (',' attr)* '}']
//              ':' '(' types ')' '->' types
//   attr    := NAME ':' value;  value := STRING | true | false | '[' values ']' | '(' KIND ')' token
//   type    := vec '[' types ']' | NAME ['<' ... '>']
#include <cctype>
#include <unordered_map>

#include "io/pir/pir_fetch.h"
#include "io/pir/pir_names.h"
#include "io/pir/pir_text.h"
#include "io/source.h"
#include "ops/op_def.h"
#include "support/error.h"

namespace spopt::pir {
namespace {

struct Type {
  std::string text;                 // as written, whitespace removed
  std::vector<Type> elements;       // of a vec
  bool is_vec = false;
  std::string name, params;         // NAME and what is inside <...>
};

class Parser {
 public:
  Parser(std::string_view text, std::string file) : s_(text), file_(std::move(file)) {}

  ojson program() {
    ws();
    expect('{');
    ojson vars = ojson::array(), ops = ojson::array(), fetch = ojson::array();
    for (;;) {
      ws();
      if (eof()) fail("missing '}' at the end of the program");
      if (peek() == '}') break;
      ops.push_back(op(vars, fetch));
    }
    ++pos_;
    ws();
    if (!eof()) fail("text after the program's closing '}'");
    ojson out = ojson::object();
    if (!fetch.empty()) out["fetch"] = fetch;
    out["blocks"] = ojson::array({{{"idx", 0}, {"parent_idx", -1}, {"vars", vars}, {"ops", ops}}});
    nameValues(out, file_, "/ops");  // text has no JSON path: the op's index
    restoreFetchList(out, file_, "/ops");
    return out;
  }

  ojson attribute(ojson* type) {
    ws();
    ojson t;
    ojson v = value(t);
    ws();
    if (!eof()) fail("text after the attribute");
    if (type) *type = t;
    return v;
  }
  std::string typeOnly() {
    ws();
    Type t = parseType();
    ws();
    if (!eof()) fail("text after the type");
    return t.text;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { failAt(pos_, what); }
  [[noreturn]] void failAt(size_t pos, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw InputError(file_, std::to_string(line) + ":" + std::to_string(col), what);
  }
  bool eof() const { return pos_ >= s_.size(); }
  char peek() const { return eof() ? '\0' : s_[pos_]; }
  void ws() {
    while (!eof() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    ws();
    if (peek() != c) fail(std::string("expected '") + c + "'" + found());
    ++pos_;
  }
  bool accept(char c) {
    ws();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  bool acceptWord(std::string_view w) {
    ws();
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  std::string found() const {
    if (eof()) return ", found the end of the text";
    return std::string(", found '") + s_[pos_] + "'";
  }
  static bool nameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
  std::string name(const char* what) {
    ws();
    size_t b = pos_;
    while (!eof() && nameChar(s_[pos_])) ++pos_;
    if (b == pos_) fail(std::string("expected ") + what + found());
    return std::string(s_.substr(b, pos_ - b));
  }
  // Paddle's lexer ends a string at a quote not preceded by a backslash; escapes are C-like.
  std::string string() {
    expect('"');
    std::string out;
    size_t start = pos_;
    while (!eof() && !(s_[pos_] == '"' && (pos_ == start || s_[pos_ - 1] != '\\'))) {
      if (s_[pos_] == '\n') failAt(start - 1, "unterminated string (a string must not span lines)");
      ++pos_;
    }
    if (eof()) failAt(start - 1, "unterminated string");
    std::string_view raw = s_.substr(start, pos_ - start);
    ++pos_;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\' || i + 1 == raw.size()) {
        out += raw[i];
        continue;
      }
      char e = raw[++i];
      out += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
    }
    return out;
  }
  std::string valueName() {
    ws();
    if (peek() != '%') fail("expected a value (%N)" + found());
    ++pos_;
    size_t b = pos_;
    while (!eof() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (b == pos_) fail("expected a value id after '%'");
    return std::string(s_.substr(b, pos_ - b));
  }

  // A token after "(KIND)": balanced in () and [], ends at ',' ']' '}' or space outside them.
  std::string token() {
    size_t b = pos_;
    int depth = 0;
    while (!eof()) {
      char c = s_[pos_];
      if (c == '(' || c == '[') ++depth;
      else if (c == ')' || c == ']') {
        if (depth == 0) break;
        --depth;
      } else if (depth == 0 && (c == ',' || c == '}' || std::isspace(static_cast<unsigned char>(c)))) break;
      else if (c == '\n') break;
      ++pos_;
    }
    if (depth != 0) fail("unbalanced brackets in an attribute value");
    if (b == pos_) fail("expected an attribute value" + found());
    return std::string(s_.substr(b, pos_ - b));
  }

  ojson value(ojson& type) {
    Nest nest(*this);
    ws();
    char c = peek();
    if (c == '"') {
      type = "str";
      return string();
    }
    if (c == '[') {
      ++pos_;
      ojson values = ojson::array(), types = ojson::array();
      if (!accept(']')) {
        do {
          ojson t;
          values.push_back(value(t));
          types.push_back(std::move(t));
        } while (accept(','));
        expect(']');
      }
      type = arrayTypeDescriptor(types);
      return values;
    }
    for (bool b : {true, false}) {
      if (acceptWord(b ? "true" : "false")) {
        type = "bool";
        return b;
      }
    }
    if (c == '(') {
      ++pos_;
      std::string kind = name("an attribute kind");
      expect(')');
      std::string k = attrTypeOfTextKind(kind);
      type = k;
      size_t tok_pos = pos_;
      std::string tok = token();
      if (k == "int32" || k == "int64") {
        ojson v = number(tok);
        if (!v.is_number_integer()) failAt(tok_pos, "(" + kind + ") needs an integer, found \"" + tok + "\"");
        return v;
      }
      if (k == "float32" || k == "float64") {
        if (tok == "inf" || tok == "-inf" || tok == "nan" || tok == "-nan") return tok;  // no JSON number
        ojson v = number(tok);
        if (!v.is_number()) failAt(tok_pos, "(" + kind + ") needs a number, found \"" + tok + "\"");
        return v;
      }
      if (k == "intarray") {
        ojson v = number(tok);
        if (!v.is_array()) failAt(tok_pos, "(pd_op.IntArray) needs [integers], found \"" + tok + "\"");
        for (const auto& e : v)
          if (!e.is_number_integer()) failAt(tok_pos, "(pd_op.IntArray) needs [integers], found \"" + tok + "\"");
        return v;
      }
      if (k == "place") {
        if (tok.rfind("Place(", 0) != 0 || tok.back() != ')') failAt(tok_pos, "(pd_op.Place) needs Place(...), found \"" + tok + "\"");
        return tok.substr(6, tok.size() - 7);
      }
      return tok;  // dtype, layout and kinds this build does not know: their spelling
    }
    fail("expected an attribute value" + found());
  }
  static ojson number(const std::string& tok) {
    try {
      return ojson::parse(tok);
    } catch (const ojson::exception&) {  // not a number, or one past double's range (1e999)
      return nullptr;
    }
  }

  Type parseType() {
    Nest nest(*this);
    ws();
    size_t b = pos_;
    Type t;
    if (acceptWord(kNullTypeText)) {  // the type of a null operand or of a result holding no value
      t.text = kNullTypeText;
      return t;
    }
    t.name = name("a type");
    if (t.name == "vec") {
      t.is_vec = true;
      expect('[');
      if (!accept(']')) {
        do t.elements.push_back(parseType());
        while (accept(','));
        expect(']');
      }
      t.text = "vec[";
      for (size_t i = 0; i < t.elements.size(); ++i) t.text += (i ? "," : "") + t.elements[i].text;
      t.text += "]";
      return t;
    }
    if (peek() == '<') {
      size_t open = pos_++;
      while (!eof() && s_[pos_] != '>' && s_[pos_] != '\n') ++pos_;
      if (peek() != '>') failAt(open, "unterminated '<' in a type");
      t.params = std::string(s_.substr(open + 1, pos_ - open - 1));
      ++pos_;
    }
    t.text = std::string(s_.substr(b, pos_ - b));
    return t;
  }
  std::vector<Type> typeList() {
    std::vector<Type> out;
    do out.push_back(parseType());
    while (accept(','));
    return out;
  }

  // shape and dtype of the var a result of type `t` becomes.
  void varType(const Type& t, size_t at, ojson& var) {
    if (t.is_vec) {
      ojson dtype = "float32";
      for (size_t i = 0; i < t.elements.size(); ++i) {
        ojson e;
        varType(t.elements[i], at, e);
        if (t.elements[i].is_vec) failAt(at, "a vector of vectors has no format v1 var");
        if (i == 0) dtype = e["dtype"];
      }
      var["shape"] = ojson::array({t.elements.size()});
      var["dtype"] = dtype;
      return;
    }
    if (t.name.size() < 7 || t.name.substr(t.name.size() - 7) != ".tensor")
      failAt(at, "result type " + t.text + " is not supported (tensors and vectors of them)");
    std::string p = t.params.substr(0, t.params.find(','));
    std::vector<std::string> parts;
    size_t b = 0;
    for (size_t i = 0; i <= p.size(); ++i)
      if (i == p.size() || p[i] == 'x') {
        parts.push_back(p.substr(b, i - b));
        b = i + 1;
      }
    auto dt = dtypeOfTextType(parts.back());
    if (!dt) failAt(at, "element type \"" + parts.back() + "\" of " + t.text + " has no format v1 dtype (f32 f64 f16 bf16 i32 i64 b u8)");
    ojson shape = ojson::array();
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      ojson d = number(parts[i]);
      if (!d.is_number_integer() || d.get<int64_t>() < -1) failAt(at, "bad dimension \"" + parts[i] + "\" in " + t.text);
      shape.push_back(d);
    }
    var["shape"] = shape;
    var["dtype"] = *dt;
  }

  ojson op(ojson& vars, ojson& fetch) {
    ws();
    std::vector<std::pair<std::string, size_t>> results;
    if (accept('(')) {
      if (!accept(')')) {
        do {
          ws();
          size_t at = pos_;
          std::string id = valueName();
          results.emplace_back(std::move(id), at);
        } while (accept(','));
        expect(')');
      }
      expect('=');
    }
    ws();
    if (peek() != '"') fail("expected an op name in quotes" + found());
    std::string type = string();
    ojson out = {{"type", type}, {"inputs", ojson::object()}, {"outputs", ojson::object()}};
    expect('(');
    size_t n_in = 0;
    if (!accept(')')) {
      do {
        ws();
        ojson args = ojson::array();
        if (acceptWord("<<NULL VALUE>>")) {
        } else {
          size_t at = pos_;
          std::string v = valueName();
          auto d = defined_.find(v);
          if (d == defined_.end()) failAt(at, "dangling value %" + v + ": no op before this one defines it");
          if (!d->second.empty()) args.push_back(d->second);  // a result holding no value: a null operand
        }
        out["inputs"][slotName("in", n_in++)] = std::move(args);
      } while (accept(','));
      expect(')');
    }
    ojson attrs = ojson::object(), types = ojson::object();
    if (accept('{')) {
      if (!accept('}')) {
        do {
          size_t at = (ws(), pos_);
          std::string key = name("an attribute name");
          if (attrs.contains(key)) failAt(at, "attribute \"" + key + "\" given twice");
          expect(':');
          ojson t;
          attrs[key] = value(t);
          types[key] = std::move(t);
        } while (accept(','));
        expect('}');
      }
    }
    expect(':');
    expect('(');
    std::vector<Type> in_types;
    if (!accept(')')) {
      in_types = typeList();
      expect(')');
    }
    if (in_types.size() != n_in)
      fail(std::to_string(n_in) + " operands but " + std::to_string(in_types.size()) + " operand types");
    ws();
    if (!acceptWord("->")) fail("expected '->'" + found());
    while (!eof() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
    size_t types_pos = pos_;
    std::vector<Type> out_types;  // none: the line ends after "->"
    if (!eof() && s_[pos_] != '\n' && s_[pos_] != '\r' && s_[pos_] != '}') out_types = typeList();
    if (out_types.size() != results.size())
      failAt(types_pos, std::to_string(results.size()) + " results but " + std::to_string(out_types.size()) + " result types");
    ws();
    if (peek() == '{') fail("ops with regions (control flow: pd_op.if, pd_op.while) are not supported");
    ojson null_results = ojson::object();
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& [id, at] = results[i];
      if (defined_.count(id)) failAt(at, "value %" + id + " is defined twice");
      if (out_types[i].text == kNullTypeText) {  // holds no value: an empty slot; its number is kept
        defined_.emplace(id, "");
        out["outputs"][slotName("out", i)] = ojson::array();
        if (auto n = ValueNumbering::numberInName(valueVarName(id))) null_results[slotName("out", i)] = *n;
        continue;
      }
      std::string vname = valueVarName(id);
      ojson var = {{"name", vname}};
      varType(out_types[i], types_pos, var);
      const OpDef* def = resolveOp(type).def;
      bool persistable = def == &opDef("parameter");  // a parameter's value lives on
      auto p = attrs.find("persistable");
      if (p != attrs.end() && p->is_array() && i < p->size() && (*p)[i].is_boolean()) persistable = (*p)[i].get<bool>();
      var["persistable"] = persistable;
      var[kVarTypeKey] = out_types[i].text;
      vars.push_back(std::move(var));
      defined_.emplace(id, vname);
      out["outputs"][slotName("out", i)] = ojson::array({vname});
      if (def && def->has(trait::Sink)) fetch.push_back(vname);
    }
    out["attrs"] = attrs;
    ojson dist = ojson::object();
    for (const char* s : kStreamAttrs)
      if (attrs.contains(s)) dist[s] = attrs[s];
    if (!dist.empty()) out["dist_attr"] = std::move(dist);
    out[kOpKey] = {{"attr_types", std::move(types)}};
    if (!null_results.empty()) out[kOpKey][kResultValuesKey] = std::move(null_results);
    return out;
  }

  // Attribute values and vec types recurse: a hostile file must not exhaust the stack.
  struct Nest {
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.nesting_ > 64) p_.fail("attributes or types nested more than 64 deep");
    }
    ~Nest() { --p_.nesting_; }
    Parser& p_;
  };
  int nesting_ = 0;
  std::string_view s_;
  std::string file_;
  size_t pos_ = 0;
  std::unordered_map<std::string, std::string> defined_;
};

}  // namespace

ojson pirTextToProgram(std::string_view text, const std::string& display_name) {
  return Parser(text, display_name).program();
}

ojson readPirText(const std::string& path) {
  return pirTextToProgram(readInputFile(path), path);
}

ojson parsePirTextAttribute(std::string_view text, const std::string& display_name, ojson* type) {
  return Parser(text, display_name).attribute(type);
}

std::string parsePirTextType(std::string_view text, const std::string& display_name) {
  return Parser(text, display_name).typeOnly();
}

}  // namespace spopt::pir
