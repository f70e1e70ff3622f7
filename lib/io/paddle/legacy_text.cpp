// Paddle's legacy program text (print(program)) -> format v1. The grammar, learnt from real dumps:
//
//   { // block N
//       [persist] [trainable] [param|var] NAME : TYPE[.shape(D, D, ...)][.dtype(T)][.stop_gradient(B)][)]
//       [{Slot=['a', 'b'], ...} = ]OP_TYPE(inputs={Slot=[...], ...}[, attr = value]...)
//   }
//
// Attr values are printed without their types: True/False, integers, floats, [lists], and bare
// strings (which may hold ", " themselves, so a value runs to the next ", NAME = "). Their Paddle
// types are guessed from the spelling and recorded like a binary's (paddle.attr_types), with the
// program marked "attr_types_guessed". Errors: FILE:LINE:COL: message.
#include "io/paddle/legacy_text.h"

#include <cctype>
#include <cstdlib>
#include <map>

#include "io/paddle/paddle_json.h"
#include "io/paddle/scope_vars.h"
#include "support/error.h"

namespace spopt::paddle {
namespace {

class LineParser {
 public:
  LineParser(const std::string& path, size_t line_no, std::string_view line)
      : path_(path), line_no_(line_no), s_(line) {}

  [[noreturn]] void fail(const std::string& what, size_t at) const {
    throw InputError(path_ + ":" + std::to_string(line_no_) + ":" + std::to_string(at + 1), "", what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }
  bool eat(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) return false;
    pos_ += lit.size();
    return true;
  }
  void expect(std::string_view lit) {
    if (!eat(lit)) fail("expected '" + std::string(lit) + "'");
  }
  bool done() const { return pos_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[pos_]; }
  size_t pos() const { return pos_; }
  void skipSpaces() {
    while (!done() && s_[pos_] == ' ') ++pos_;
  }
  std::string_view identifier() {
    size_t start = pos_;
    while (!done() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '@' || s_[pos_] == '.'))
      ++pos_;
    if (pos_ == start) fail("expected a name");
    return s_.substr(start, pos_ - start);
  }
  std::string quoted() {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted name");
    size_t start = pos_++;
    std::string out;
    while (!done() && s_[pos_] != q) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (done()) fail("unterminated quote", start);
    ++pos_;
    return out;
  }
  // {Slot=['a', 'b'], Other=[]}
  Json slots() {
    Json j = Json::object();
    expect("{");
    while (!eat("}")) {
      if (!j.empty()) expect(", ");
      std::string name(identifier());
      expect("=[");
      Json args = Json::array();
      while (!eat("]")) {
        if (!args.empty()) expect(", ");
        args.push_back(quoted());
      }
      j[name] = std::move(args);
    }
    return j;
  }
  // Up to the end of a value: a [list] to its matching bracket, anything else to the next
  // ", NAME = " or to `end`.
  std::string_view value(size_t end) {
    size_t start = pos_;
    if (peek() == '[') {
      int depth = 0;
      char quote = 0;
      for (; pos_ < end; ++pos_) {
        char c = s_[pos_];
        if (quote) {
          if (c == '\\') ++pos_;
          else if (c == quote) quote = 0;
        } else if (c == '\'' || c == '"') {
          quote = c;
        } else if (c == '[') {
          ++depth;
        } else if (c == ']' && --depth == 0) {
          ++pos_;
          return s_.substr(start, pos_ - start);
        }
      }
      fail("unterminated list", start);
    }
    for (size_t p = pos_; p < end; ++p) {
      if (s_.compare(p, 2, ", ") != 0) continue;
      size_t q = p + 2;
      while (q < end && (std::isalnum(static_cast<unsigned char>(s_[q])) || s_[q] == '_')) ++q;
      if (q > p + 2 && s_.compare(q, 3, " = ") == 0) {
        pos_ = p;
        return s_.substr(start, p - start);
      }
    }
    pos_ = end;
    return s_.substr(start, end - start);
  }
  std::string_view rest() const { return s_.substr(pos_); }
  void seek(size_t p) { pos_ = p; }

 private:
  const std::string& path_;
  size_t line_no_;
  std::string_view s_;
  size_t pos_ = 0;
};

bool parseInt(std::string_view t, int64_t& out) {
  std::string s(t);
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0' || errno) return false;
  out = v;
  return true;
}
bool parseFloat(std::string_view t, double& out) {
  std::string s(t);
  if (s.empty() || s.find_first_of(".eEn") == std::string::npos) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return *end == '\0';
}

// A scalar printed bare: its JSON value and Paddle type name.
std::pair<Json, std::string> typedScalar(std::string_view t) {
  int64_t i;
  double d;
  if (t == "True" || t == "False") return {t == "True", "BOOLEAN"};
  if (parseInt(t, i)) return {i, i == static_cast<int32_t>(i) ? "INT" : "LONG"};
  if (parseFloat(t, d)) return {floatToJson(static_cast<float>(d)), "FLOAT"};
  return {std::string(t), "STRING"};
}

std::pair<Json, std::string> typedValue(std::string_view t, LineParser& at, size_t value_pos) {
  if (t.empty() || t.front() != '[') return typedScalar(t);
  // A list: split its elements (quoted strings may hold commas).
  LineParser items("", 0, t);
  items.seek(1);
  Json values = Json::array();
  std::string kind;
  bool any_long = false;
  while (items.peek() != ']') {
    if (!values.empty()) {
      if (!items.eat(", ")) at.fail("expected ', ' in list", value_pos + items.pos());
    }
    if (items.peek() == '\'' || items.peek() == '"') {
      values.push_back(items.quoted());
      kind = "STRINGS";
      continue;
    }
    size_t start = items.pos();
    while (!items.done() && items.peek() != ',' && items.peek() != ']') items.seek(items.pos() + 1);
    auto [v, type] = typedScalar(t.substr(start, items.pos() - start));
    if (type == "LONG") any_long = true;
    std::string list_type = type == "BOOLEAN" ? "BOOLEANS" : type == "FLOAT" ? "FLOATS" : type == "STRING" ? "STRINGS" : "INTS";
    if (kind.empty() || kind == "INTS") kind = list_type;
    values.push_back(std::move(v));
  }
  if (kind.empty()) kind = "INTS";  // an empty list says nothing: INTS is Paddle's commonest
  if (kind == "INTS" && any_long) kind = "LONGS";
  return {std::move(values), kind};
}

std::string paddleDtypeOf(std::string_view printed) {
  static const std::map<std::string_view, std::string> names = {
      {"float32", "FP32"}, {"float64", "FP64"}, {"float16", "FP16"},   {"bfloat16", "BF16"},  {"int32", "INT32"},
      {"int64", "INT64"},  {"bool", "BOOL"},    {"uint8", "UINT8"},    {"int8", "INT8"},      {"int16", "INT16"},
      {"complex64", "COMPLEX64"}, {"complex128", "COMPLEX128"}};
  auto it = names.find(printed);
  return it == names.end() ? "" : it->second;
}

Json parseVar(LineParser& p) {
  Json paddle;
  bool persistable = false, parameter = false, trainable = false;
  for (;;) {
    if (p.eat("persist ")) persistable = true;
    else if (p.eat("trainable ")) trainable = true;
    else if (p.eat("param ")) parameter = true;
    else if (p.eat("var ")) {
    } else break;
  }
  size_t colon = p.rest().find(" : ");
  if (colon == std::string_view::npos) p.fail("expected 'NAME : TYPE' in a var line");
  std::string name(p.rest().substr(0, colon));
  p.seek(p.pos() + colon + 3);
  Json var;
  var["name"] = name;
  size_t type_end = p.pos();
  while (type_end < p.pos() + p.rest().size() && (std::isupper(static_cast<unsigned char>(p.rest()[type_end - p.pos()])) ||
                                                  p.rest()[type_end - p.pos()] == '_'))
    ++type_end;
  if (type_end == p.pos()) p.fail("expected a var type (LOD_TENSOR, ...)");
  std::string type(p.rest().substr(0, type_end - p.pos()));
  p.seek(type_end);
  paddle["type"] = type;
  std::vector<int64_t> shape;
  std::string dtype;
  bool has_tensor = false;
  while (!p.done()) {
    if (p.eat(")")) continue;  // "persist var NAME : RAW)": Paddle prints a stray paren there
    p.expect(".");
    size_t at = p.pos();
    std::string key(p.identifier());
    p.expect("(");
    size_t close = p.rest().find(')');
    if (close == std::string_view::npos) p.fail("expected ')'");
    std::string_view inside = p.rest().substr(0, close);
    if (key == "shape") {
      has_tensor = true;
      size_t start = 0;
      while (start < inside.size()) {
        size_t comma = inside.find(',', start);
        std::string_view dim = inside.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        while (!dim.empty() && dim.front() == ' ') dim.remove_prefix(1);
        int64_t d;
        if (!dim.empty()) {
          if (!parseInt(dim, d)) p.fail("bad dimension '" + std::string(dim) + "'");
          shape.push_back(d);
        }
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
    } else if (key == "dtype") {
      dtype = std::string(inside);
    } else if (key == "stop_gradient") {
      if (inside != "True" && inside != "False") p.fail("stop_gradient must be True or False");
      paddle["stop_gradient"] = inside == "True";
    } else {
      p.fail("unknown var property '" + key + "'", at);
    }
    p.seek(p.pos() + close + 1);
  }
  if (has_tensor) {
    var["shape"] = shapeFromPaddle(shape, paddle);
    std::string paddle_dtype = paddleDtypeOf(dtype);
    if (paddle_dtype.empty()) p.fail("unknown dtype '" + dtype + "'");
    auto [spopt_dtype, exact] = dtypeFromPaddle(paddle_dtype);
    var["dtype"] = spopt_dtype;
    if (!exact) paddle["dtype"] = paddle_dtype;
  } else {
    var["shape"] = Json::array();
    var["dtype"] = "float32";
    paddle["tensor"] = nullptr;
  }
  var["persistable"] = persistable;
  if (parameter) paddle["is_parameter"] = true;
  if (trainable) paddle["trainable"] = true;
  var["paddle"] = std::move(paddle);
  return var;
}

Json parseOp(LineParser& p) {
  Json op;
  Json outputs = Json::object();
  if (p.peek() == '{') {
    outputs = p.slots();
    p.expect(" = ");
  }
  op["type"] = std::string(p.identifier());
  p.expect("(inputs=");
  op["inputs"] = p.slots();
  op["outputs"] = std::move(outputs);
  size_t end = p.pos() + p.rest().size();
  if (end == p.pos() || p.rest().back() != ')') p.fail("expected ')' at the end of the op", end);
  --end;
  Json attrs = Json::object(), types = Json::object();
  while (p.pos() < end) {
    p.expect(", ");
    std::string name(p.identifier());
    p.expect(" = ");
    size_t at = p.pos();
    std::string_view text = p.value(end);
    auto [value, type] = typedValue(text, p, at);
    attrs[name] = std::move(value);
    types[name] = type;
  }
  op["attrs"] = std::move(attrs);
  op["paddle"] = {{"attr_types", std::move(types)}};
  return op;
}

}  // namespace

bool looksLikeLegacyText(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  return bytes.substr(i, 11) == "{ // block ";
}

namespace {
ImportedProgram parseLegacyText(const std::string& path, std::string_view bytes);
}

ImportedProgram readLegacyText(const std::string& path, std::string_view bytes) {
  // JSON strings must be UTF-8: say where the text is not, before any name is taken from it.
  Json probe = bytesToJson(std::string(bytes));
  if (probe.is_object()) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (bytesToJson(std::string(bytes.substr(i, 4))).is_string() || static_cast<unsigned char>(bytes[i]) < 0x80) {
        if (bytes[i] == '\n') {
          ++line;
          col = 1;
        } else {
          ++col;
        }
        continue;
      }
      break;
    }
    throw InputError(path + ":" + std::to_string(line) + ":" + std::to_string(col), "", "the text is not UTF-8 here");
  }
  try {
    return parseLegacyText(path, bytes);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path, "", std::string("invalid program text: ") + e.what());
  }
}

namespace {
ImportedProgram parseLegacyText(const std::string& path, std::string_view bytes) {
  Json blocks = Json::array();
  Json* block = nullptr;
  size_t block_line = 0, line_no = 0;
  for (size_t start = 0; start < bytes.size();) {
    size_t nl = bytes.find('\n', start);
    std::string_view line = bytes.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? bytes.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineParser p(path, line_no, line);
    p.skipSpaces();
    if (p.done()) continue;
    if (p.eat("{ // block ")) {
      if (block)
        p.fail("block " + std::string(p.rest()) + " starts inside block " + std::to_string((*block)["idx"].get<int64_t>()) +
                   " (opened on line " + std::to_string(block_line) + "): missing '}'",
               0);
      int64_t idx;
      if (!parseInt(p.rest(), idx)) p.fail("expected a block number");
      if (idx != static_cast<int64_t>(blocks.size()))
        p.fail("block " + std::to_string(idx) + " where block " + std::to_string(blocks.size()) + " was expected");
      blocks.push_back({{"idx", idx}, {"parent_idx", idx == 0 ? -1 : 0}, {"vars", Json::array()}, {"ops", Json::array()}});
      block = &blocks.back();
      block_line = line_no;
      continue;
    }
    if (p.eat("}")) {
      if (!block) p.fail("'}' outside any block", 0);
      block = nullptr;
      continue;
    }
    if (!block) p.fail("expected '{ // block N'");
    std::string_view rest = p.rest();
    if (rest.rfind("var ", 0) == 0 || rest.rfind("persist ", 0) == 0)
      (*block)["vars"].push_back(parseVar(p));
    else
      (*block)["ops"].push_back(parseOp(p));
  }
  if (block)
    throw InputError(path + ":" + std::to_string(line_no) + ":1", "",
                     "end of file inside block " + std::to_string((*block)["idx"].get<int64_t>()) +
                         " (opened on line " + std::to_string(block_line) + "): missing '}'");
  if (blocks.empty()) throw InputError(path, "", "no '{ // block 0' in the file");
  // Paddle does not print parent blocks: an op's block attr (sub_block) names its child.
  for (auto& b : blocks)
    for (auto& op : b["ops"])
      for (auto& [name, type] : op["paddle"]["attr_types"].items())
        if (type == "BLOCK" && op["attrs"][name].is_number_integer()) {
          int64_t child = op["attrs"][name].get<int64_t>();
          if (child > 0 && child < static_cast<int64_t>(blocks.size())) blocks[child]["parent_idx"] = b["idx"];
        }
  ImportedProgram result;
  result.program["blocks"] = std::move(blocks);
  result.program["paddle"] = {{"attr_types_guessed", true}};
  result.path = path;
  noteScopeVars(result);
  return result;
}
}  // namespace

}  // namespace spopt::paddle
