#include "io/job_parser.h"

#include <absl/container/flat_hash_map.h>

#include "io/json_checks.h"
#include "ir/json_text.h"
#include "support/error.h"

namespace spopt {
namespace {

namespace od = simdjson::ondemand;

constexpr int64_t kMaxDim = int64_t(1) << 40;  // a dim beyond this is absurd, not a tensor
constexpr int64_t kMaxRank = 16;

}  // namespace

class JobParser::Walker {
 public:
  // Text the IR keeps is copied into `arena` (one per thread). `shared` guards the job's layout
  // table when several loaders fill one job; `release` hands back parsed bytes as the parse goes.
  Walker(Job& job, const std::string& name, Arena& arena, std::mutex* shared)
      : job_(job), name_(name), arena_(arena), shared_(shared) {}
  void releaseBehind(ReleaseBehind* r) { release_ = r; }

  // One element of the "programs" array, parsed on its own (see loader.cpp).
  void runProgram(const char* text, size_t len, size_t capacity, size_t index, Program& p) {
    Scope s1(*this, "programs");
    Scope s2(*this, int64_t(index));
    od::document doc;
    check(parser_.iterate(text, len, capacity).get(doc));
    od::object obj;
    checkTyped(doc.get_object().get(obj), "expected an object for a program");
    parseProgram(obj, p);
  }

  // The job without its programs (the "programs" array replaced by []).
  void runSkeleton(const char* text, size_t len) {
    od::document doc;
    check(parser_.iterate(text, len, len + simdjson::SIMDJSON_PADDING).get(doc));
    od::object root;
    checkTyped(doc.get_object().get(root), "the document must be a JSON object");
    parseJob(root);
  }

  void run(const char* text, size_t len, size_t capacity) {
    whole_ = std::string_view(text, len);
    od::document doc;
    check(parser_.iterate(text, len, capacity).get(doc));
    checkNothingAfter(std::string_view(text, len), doc);
    od::object root;
    check(doc.get_object().get(root));
    parseJob(root);
  }

 private:
  Job& job_;
  const std::string& name_;
  Arena& arena_;
  std::mutex* shared_;
  ReleaseBehind* release_ = nullptr;
  std::string_view whole_;  // the whole document, when parsed as one (for "ends early" messages)
  // Interned text: names that repeat (op types, slot and key names) and raw JSON values (attrs and
  // dist_attrs repeat across most ops), mapped from their text in the file to their stored form.
  // A raw value seen before is neither validated nor minified again.
  absl::flat_hash_map<std::string_view, std::string_view> words_;
  // A raw compound value: its stored form and, when one of its objects repeats a key, where
  // (relative pointer) and which key. Unknown values keep their repeats (the writer reproduces
  // them byte for byte); attrs and dist_attrs, which the format defines, refuse them.
  struct RawValue {
    std::string_view kept, duplicate_at, duplicate_key;
    const SharedObject* object = nullptr;  // its members, once rawObject() read it as attrs or a dist_attr
  };
  absl::flat_hash_map<std::string_view, RawValue> raws_;
  RawValue* last_raw_ = nullptr;  // what the last raw() of a compound value found
  std::vector<Slot> slot_buf_;
  const std::vector<Field>* last_layout_ = nullptr;
  od::parser parser_;
  simdjson::dom::parser validator_;
  // The JSON pointer of what is being parsed, built only when reporting an error. The format's
  // nesting is fixed (unknown values are taken whole), so a small array suffices.
  static constexpr size_t kMaxPath = 16;
  PathStep path_[kMaxPath];
  size_t depth_ = 0;

  // On-demand parsing stops at the root object's closing brace; anything after it but
  // whitespace is an error (two concatenated documents, garbage appended by a crashed writer).
  // Skipping the root object costs a walk of the structural index only (no value parsing).
  void checkNothingAfter(std::string_view bytes, od::document& doc) {
    od::object root;
    checkTyped(doc.get_object().get(root), "the document must be a JSON object");
    std::string_view text;
    check(root.raw_json().get(text));
    const char* end = bytes.data() + bytes.size();
    for (const char* p = text.data() + text.size(); p < end; ++p)
      if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') fail("trailing content after the JSON document");
    doc.rewind();
  }

  // ---- errors -------------------------------------------------------------------------------
  // A typed read's error: a value of another JSON type is named by `expected` + `what`.
  void checkTyped(simdjson::error_code err, const char* expected, const char* what = "") const {
    if (!err) return;
    if (err == simdjson::INCORRECT_TYPE) fail(std::string(expected) + what);
    check(err);
  }
  std::string pointer() const { return pointerOf(path_, depth_); }
  [[noreturn]] void fail(const std::string& message) const { throw InputError(name_, pointer(), message); }
  void check(simdjson::error_code err) const {
    if (!err) return;
    if ((err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::UNCLOSED_STRING) && !whole_.empty())
      if (auto cut = endsEarly(whole_)) throw InputError(name_, cut->pointer, cut->message);
    switch (err) {
      case simdjson::EMPTY: fail("empty file: expected a JSON object");
      case simdjson::DEPTH_ERROR: fail("JSON nested too deeply (over 1024 levels)");
      case simdjson::INCORRECT_TYPE: fail("wrong JSON type");
      case simdjson::NUMBER_OUT_OF_RANGE: fail("number out of range");
      default: fail(std::string("malformed JSON: ") + simdjson::error_message(err));
    }
  }
  struct Scope {
    Walker& l;
    Scope(Walker& l, std::string_view key) : l(l) { l.path_[l.depth_++] = {key, -1}; }
    Scope(Walker& l, int64_t index) : l(l) { l.path_[l.depth_++] = {{}, index}; }
    ~Scope() { --l.depth_; }
  };

  std::string_view store(std::string_view text) { return arena_.store(text); }
  std::string_view word(std::string_view text) {
    auto it = words_.find(text);
    if (it != words_.end()) return it->second;
    std::string_view kept = store(text);
    words_.emplace(kept, kept);
    return kept;
  }
  // Keys of fields that are not replaced by a shared layout.
  void keepKeys(Fields& f) {
    for (Field& x : f.mutableItems()) x.key = word(x.key);
  }
  // Drops the bytes behind `v` every so many elements of a long array.
  void progress(od::value& v, int64_t i) {
    if (release_ && (i & 255) == 0) release_->advance(v.raw_json_token().data());
  }

  // ---- scalars ------------------------------------------------------------------------------
  // A key as a view into the buffer (escaped keys are unescaped into the arena).
  std::string_view key(od::field& f) {
    const char* p = f.key().raw();
    const char* q = p;
    while (*q != '"' && *q != '\\') ++q;
    if (*q == '"') return std::string_view(p, size_t(q - p));
    std::string_view k;
    check(f.unescaped_key().get(k));
    return store(k);
  }
  int64_t getInt(od::value v, const char* what) {
    int64_t x = 0;
    if (auto err = v.get_int64().get(x)) {
      if (err == simdjson::INCORRECT_TYPE || err == simdjson::NUMBER_ERROR) fail(std::string("expected an integer ") + what);
      check(err);
    }
    return x;
  }
  bool getBool(od::value v, const char* what) {
    bool x = false;
    checkTyped(v.get_bool().get(x), "expected a boolean ", what);
    return x;
  }
  // A string as a view: into the buffer when it holds no escapes, else into the arena.
  std::string_view getString(od::value v, const char* what) {
    std::string_view tok = v.raw_json_token();
    if (tok.empty() || tok[0] != '"') fail(std::string("expected a string ") + what);
    // Without escapes the string is its own bytes in the buffer: no copy, no unescaping.
    const char* body = tok.data() + 1;
    const char* q = body;
    while (*q != '"' && *q != '\\') ++q;
    if (*q == '"') return {body, size_t(q - body)};
    std::string_view s;
    check(v.get_string().get(s));
    return store(s);
  }
  od::object getObject(od::value v, const char* what) {
    od::object o;
    checkTyped(v.get_object().get(o), "expected an object ", what);
    return o;
  }
  od::array getArray(od::value v, const char* what) {
    od::array a;
    checkTyped(v.get_array().get(a), "expected an array ", what);
    return a;
  }

  // Any JSON value, kept as compact raw text. Compound values are fully validated (on-demand
  // skipping alone would let `[1, tru]` through) and minified when they hold whitespace.
  std::string_view raw(od::value v) {
    last_raw_ = nullptr;
    od::json_type t = od::json_type::null;
    check(v.type().get(t));
    std::string_view text;
    if (t == od::json_type::object) {
      od::object o;
      check(v.get_object().get(o));
      check(o.raw_json().get(text));
    } else if (t == od::json_type::array) {
      od::array a;
      check(v.get_array().get(a));
      check(a.raw_json().get(text));
    } else {
      text = v.raw_json_token();
      while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\t' || text.back() == '\r'))
        text.remove_suffix(1);
      validateScalar(v, t);
      return store(text);
    }
    auto it = raws_.find(text);
    if (it != raws_.end()) {
      last_raw_ = &it->second;
      return it->second.kept;
    }
    simdjson::dom::element el;
    check(validator_.parse(text.data(), text.size()).get(el));
    RawValue value;
    std::string at, dup;
    if (findDuplicateKey(el, at, dup)) {
      value.duplicate_at = store(at);
      value.duplicate_key = store(dup);
    }
    bool has_space = false;
    for (char c : text) has_space |= (c == ' ' || c == '\n' || c == '\t' || c == '\r');
    std::string_view kept_text = store(text), kept = kept_text;
    if (has_space) {
      std::string minified(text.size(), '\0');
      size_t len = 0;
      check(simdjson::minify(text.data(), text.size(), minified.data(), len));
      kept = store(std::string_view(minified.data(), len));
    }
    value.kept = kept;
    last_raw_ = &raws_.emplace(kept_text, value).first->second;
    return kept;
  }
  void validateScalar(od::value& v, od::json_type t) {
    switch (t) {
      case od::json_type::number: {
        double d;
        if (v.get_double().get(d)) {
          uint64_t u;  // large unsigned integers are valid JSON too
          if (v.get_uint64().get(u)) fail("malformed number");
        }
        break;
      }
      case od::json_type::string: getString(v, ""); break;
      case od::json_type::boolean: getBool(v, ""); break;
      case od::json_type::null: {
        bool is_null = false;
        check(v.is_null().get(is_null));
        if (!is_null) fail("malformed JSON literal");
        break;
      }
      default: break;
    }
  }
  // An object kept as its compact text (attrs, dist_attr), split into members once per distinct text.
  JsonObject rawObject(od::value v, const char* what) {
    od::json_type t = od::json_type::null;
    check(v.type().get(t));
    if (t != od::json_type::object) fail(std::string("expected an object ") + what);
    std::string_view text = raw(v);
    if (last_raw_ && !last_raw_->duplicate_key.empty())
      throw InputError(name_, pointer() + std::string(last_raw_->duplicate_at), "duplicate key \"" + std::string(last_raw_->duplicate_key) + "\"");
    RawValue& value = *last_raw_;
    if (!value.object) value.object = JsonObject::share(arena_, text);
    return JsonObject::fromShared(value.object);
  }
  std::vector<int64_t> intArray(od::value v, const char* what) {
    std::vector<int64_t> out;
    int64_t i = 0;
    for (auto e : getArray(v, what)) {
      od::value ev;
      check(std::move(e).get(ev));
      Scope s(*this, i++);
      out.push_back(getInt(ev, what));
    }
    return out;
  }

  // ---- entities -----------------------------------------------------------------------------
  // Every object the format defines refuses a repeated key (JSON leaves its meaning open: some
  // readers keep the first, some the last). Called with the key's Scope open, so the pointer
  // names it. An entity has a handful of keys: a scan of those seen is the cheapest check.
  void noDuplicate(const Fields& f, std::string_view k) {
    for (const Field& x : f)
      if (x.key == k) fail("duplicate key \"" + std::string(k) + "\"");
  }

  void require(const Fields& f, std::initializer_list<std::string_view> keys, const char* what) {
    for (auto k : keys)
      if (!hasField(f, k)) fail(std::string(what) + " lacks required key \"" + std::string(k) + "\"");
  }

  // Known-keys-only layouts are interned: most vars and ops of a job share a handful.
  void share(Fields& f) {
    for (const Field& x : f)
      if (!x.known()) return keepKeys(f);
    auto same = [&](const std::vector<Field>* l) {
      if (!l || l->size() != f.size()) return false;
      for (size_t i = 0; i < l->size(); ++i)
        if ((*l)[i].key != f.items()[i].key) return false;
      return true;
    };
    if (!same(last_layout_)) {
      if (shared_) {
        std::lock_guard<std::mutex> lock(*shared_);
        last_layout_ = job_.internLayout(f.items());
      } else {
        last_layout_ = job_.internLayout(f.items());
      }
    }
    f = Fields(last_layout_);
  }

  void parseJob(od::object root) {
    Job& job = job_;
    for (auto f : root) {
      od::field field;
      check(std::move(f).get(field));
      std::string_view k = key(field);
      Scope s(*this, k);
      noDuplicate(job.fields, k);
      od::value v = field.value();
      if (k == "format") {
        job.format = store(getString(v, "for \"format\""));
        if (job.format != "sp-opt.program")
          fail("unknown format \"" + std::string(job.format) + "\" (expected \"sp-opt.program\")");
      } else if (k == "version") {
        job.version = getInt(v, "for \"version\"");
        if (job.version != 1)
          fail("format version " + std::to_string(job.version) + " is not supported (this build reads version 1)");
      } else if (k == "world_size") {
        job.world_size = getInt(v, "for \"world_size\"");
        if (job.world_size < 1 || job.world_size > (1 << 24)) fail("world_size must be between 1 and 16777216");
      } else if (k == "process_groups") {
        int64_t i = 0;
        for (auto e : getArray(v, "of process groups")) {
          od::value ev;
          check(std::move(e).get(ev));
          Scope si(*this, i++);
          job.groups.push_back(parseGroup(ev));
        }
      } else if (k == "programs") {
        int64_t i = 0;
        for (auto e : getArray(v, "of programs")) {
          od::value ev;
          check(std::move(e).get(ev));
          Scope si(*this, i);
          auto p = std::make_unique<Program>();
          p->job = &job;
          p->position = size_t(i++);
          parseProgram(getObject(ev, "for a program"), *p);
          job.programs.push_back(std::move(p));
        }
      } else {
        job.fields.push_back({k, raw(v)});
        continue;
      }
      job.fields.push_back({k, {}});
    }
    require(job.fields, {"format", "version", "world_size", "programs"}, "the job");
    keepKeys(job.fields);
  }

  ProcessGroup parseGroup(od::value v) {
    ProcessGroup g;
    for (auto f : getObject(v, "for a process group")) {
      od::field field;
      check(std::move(f).get(field));
      std::string_view k = key(field);
      Scope s(*this, k);
      noDuplicate(g.fields, k);
      if (k == "ring_id") {
        g.ring_id = getInt(field.value(), "for \"ring_id\"");
      } else if (k == "ranks") {
        g.ranks = intArray(field.value(), "for a rank");
      } else {
        g.fields.push_back({k, raw(field.value())});
        continue;
      }
      g.fields.push_back({k, {}});
    }
    require(g.fields, {"ring_id", "ranks"}, "a process group");
    keepKeys(g.fields);
    return g;
  }

  void parseProgram(od::object obj, Program& p) {
    for (auto f : obj) {
      od::field field;
      check(std::move(f).get(field));
      std::string_view k = key(field);
      Scope s(*this, k);
      noDuplicate(p.fields, k);
      if (k == "rank") {
        p.rank = getInt(field.value(), "for \"rank\"");
      } else if (k == "fetch") {
        int64_t i = 0;
        for (auto e : getArray(field.value(), "of var names")) {
          od::value ev;
          check(std::move(e).get(ev));
          Scope si(*this, i++);
          p.fetch.push_back(store(getString(ev, "(a var name)")));
        }
      } else if (k == "blocks") {
        int64_t i = 0;
        for (auto e : getArray(field.value(), "of blocks")) {
          od::value ev;
          check(std::move(e).get(ev));
          Scope si(*this, i);
          auto b = std::make_unique<Block>();
          b->program = &p;
          b->position = size_t(i++);
          parseBlock(ev, *b);
          p.blocks.push_back(std::move(b));
        }
      } else {
        p.fields.push_back({k, raw(field.value())});
        continue;
      }
      p.fields.push_back({k, {}});
    }
    require(p.fields, {"rank", "blocks"}, "a program");
    keepKeys(p.fields);
  }

  void parseBlock(od::value v, Block& b) {
    for (auto f : getObject(v, "for a block")) {
      od::field field;
      check(std::move(f).get(field));
      std::string_view k = key(field);
      Scope s(*this, k);
      noDuplicate(b.fields, k);
      if (k == "idx") {
        b.idx = getInt(field.value(), "for \"idx\"");
      } else if (k == "parent_idx") {
        b.parent_idx = getInt(field.value(), "for \"parent_idx\"");
      } else if (k == "vars") {
        int64_t i = 0;
        for (auto e : getArray(field.value(), "of vars")) {
          od::value ev;
          check(std::move(e).get(ev));
          progress(ev, i);
          Scope si(*this, i++);
          Var var = parseVar(ev);
          std::string_view name = var.name;
          if (!b.addVarIfNew(std::move(var))) fail("var \"" + std::string(name) + "\" is declared twice in this block");
        }
      } else if (k == "ops") {
        int64_t i = 0;
        for (auto e : getArray(field.value(), "of ops")) {
          od::value ev;
          check(std::move(e).get(ev));
          progress(ev, i);
          Scope si(*this, i++);
          Op& op = b.appendOp();
          parseOp(ev, op);
        }
      } else {
        b.fields.push_back({k, raw(field.value())});
        continue;
      }
      b.fields.push_back({k, {}});
    }
    require(b.fields, {"idx", "vars", "ops"}, "a block");
    keepKeys(b.fields);
  }

  Var parseVar(od::value v) {
    Var var;
    for (auto f : getObject(v, "for a var")) {
      od::field field;
      check(std::move(f).get(field));
      std::string_view k = key(field);
      Scope s(*this, k);
      noDuplicate(var.fields, k);
      if (k == "name") {
        var.name = store(getString(field.value(), "for \"name\""));
        if (var.name.empty()) fail("a var name must not be empty");
      } else if (k == "shape") {
        int64_t dims[kMaxRank];
        int64_t i = 0;
        for (auto e : getArray(field.value(), "for \"shape\"")) {
          od::value ev;
          check(std::move(e).get(ev));
          if (i == kMaxRank) fail("more than 16 dimensions");
          Scope si(*this, i);
          int64_t d = getInt(ev, "in a shape");
          if (d < -1) fail("negative dimension " + std::to_string(d) + " (only -1, unknown, is allowed)");
          if (d > kMaxDim) fail("absurd dimension " + std::to_string(d));
          dims[i++] = d;
        }
        var.shape.assign(dims, dims + i);
      } else if (k == "dtype") {
        std::string_view t = getString(field.value(), "for \"dtype\"");
        auto dt = parseDType(t);
        if (!dt) fail("unknown dtype \"" + std::string(t) + "\" (expected float32, float64, float16, bfloat16, int32, int64, bool or uint8)");
        var.dtype = *dt;
      } else if (k == "persistable") {
        var.persistable = getBool(field.value(), "for \"persistable\"");
      } else if (k == "dist_attr") {
        var.dist_attr = rawObject(field.value(), "for \"dist_attr\"");
      } else {
        var.fields.push_back({k, raw(field.value())});
        continue;
      }
      var.fields.push_back({k, {}});
    }
    require(var.fields, {"name", "shape", "dtype"}, "a var");
    share(var.fields);
    return var;
  }

  // An argument names a var of this block (resolved now, viewing the var's name) or, rarely, of an
  // ancestor or one declared later (its name is kept; resolve() looks it up when all is loaded).
  void parseSlots(od::value v, const Block& b, std::vector<Slot>& slots, const char* what) {
    for (auto f : getObject(v, what)) {
      od::field field;
      check(std::move(f).get(field));
      std::string_view name = word(key(field));
      Scope s(*this, name);
      for (const Slot& seen : slot_buf_)  // failing fails the whole load: slot_buf_ needs no clearing
        if (seen.name == name) fail("duplicate key \"" + std::string(name) + "\"");
      Slot& slot = slot_buf_.emplace_back();
      slot.name = name;
      int64_t i = 0;
      for (auto e : getArray(field.value(), "of var names")) {
        od::value ev;
        check(std::move(e).get(ev));
        Scope si(*this, i++);
        std::string_view name = getString(ev, "(a var name)");
        if (Var* var = b.findLocal(name))
          slot.args.push_back({var->name, var});
        else
          slot.args.push_back({store(name), nullptr});
      }
    }
    // Built in a reused buffer, then moved in one allocation of the exact size.
    slots.reserve(slot_buf_.size());
    std::move(slot_buf_.begin(), slot_buf_.end(), std::back_inserter(slots));
    slot_buf_.clear();
  }

  void parseOp(od::value v, Op& op) {
    for (auto f : getObject(v, "for an op")) {
      od::field field;
      check(std::move(f).get(field));
      std::string_view k = key(field);
      Scope s(*this, k);
      noDuplicate(op.fields, k);
      if (k == "type") {
        op.type = word(getString(field.value(), "for \"type\""));
        if (op.type.empty()) fail("an op type must not be empty");
      } else if (k == "inputs") {
        parseSlots(field.value(), *op.block, op.inputs, "for \"inputs\"");
      } else if (k == "outputs") {
        parseSlots(field.value(), *op.block, op.outputs, "for \"outputs\"");
      } else if (k == "attrs") {
        op.attrs = rawObject(field.value(), "for \"attrs\"");
      } else if (k == "dist_attr") {
        op.dist_attr = rawObject(field.value(), "for \"dist_attr\"");
      } else {
        op.fields.push_back({k, raw(field.value())});
        continue;
      }
      op.fields.push_back({k, {}});
    }
    require(op.fields, {"type"}, "an op");
    share(op.fields);
  }
};

JobParser::JobParser(Job& job, const std::string& name, Arena& arena, std::mutex* shared_layouts)
    : walker_(std::make_unique<Walker>(job, name, arena, shared_layouts)) {}
JobParser::~JobParser() = default;
void JobParser::releaseBehind(ReleaseBehind* release) { walker_->releaseBehind(release); }
void JobParser::parseProgram(const char* text, size_t len, size_t capacity, size_t index, Program& p) {
  walker_->runProgram(text, len, capacity, index, p);
}
void JobParser::parseSkeleton(const char* text, size_t len) { walker_->runSkeleton(text, len); }
void JobParser::parseDocument(const char* text, size_t len, size_t capacity) { walker_->run(text, len, capacity); }

}  // namespace spopt
