#include "io/loader.h"

#include <absl/container/flat_hash_map.h>
#include <simdjson.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "io/source.h"
#include "io/text_reader.h"
#include "io/top_level_scan.h"
#include "ir/json_text.h"
#include "support/error.h"

namespace spopt {
namespace {

namespace od = simdjson::ondemand;

constexpr int64_t kMaxDim = int64_t(1) << 40;  // a dim beyond this is absurd, not a tensor
constexpr int64_t kMaxRank = 16;

// One step of a JSON pointer: a key, or an array index when key is empty.
struct PathStep {
  std::string_view key;
  int64_t index = -1;
};

class Loader {
 public:
  // Text the IR keeps is copied into `arena` (one per thread). `shared` guards the job's layout
  // table when several loaders fill one job; `release` hands back parsed bytes as the parse goes.
  Loader(Job& job, const std::string& name, Arena& arena, std::mutex* shared = nullptr)
      : job_(job), name_(name), arena_(arena), shared_(shared) {}
  void releaseBehind(ReleaseBehind* r) { release_ = r; }

  // One element of the "programs" array, parsed on its own (see loadPrograms).
  void runProgram(const char* text, size_t len, size_t capacity, size_t index, Program& p) {
    Scope s1(*this, "programs");
    Scope s2(*this, int64_t(index));
    od::document doc;
    check(parser_.iterate(text, len, capacity).get(doc));
    od::object obj;
    if (auto err = doc.get_object().get(obj)) {
      if (err == simdjson::INCORRECT_TYPE) fail("expected an object for a program");
      check(err);
    }
    parseProgram(obj, p);
  }

  // The job without its programs (the "programs" array replaced by []).
  void runSkeleton(const char* text, size_t len) {
    od::document doc;
    check(parser_.iterate(text, len, len + simdjson::SIMDJSON_PADDING).get(doc));
    od::object root;
    if (auto err = doc.get_object().get(root)) {
      if (err == simdjson::INCORRECT_TYPE) fail("the document must be a JSON object");
      check(err);
    }
    parseJob(root);
  }

  void run(const char* text, size_t len, size_t capacity) {
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
  // Interned text: names that repeat (op types, slot and key names) and raw JSON values (attrs and
  // dist_attrs repeat across most ops), mapped from their text in the file to their stored form.
  // A raw value seen before is neither validated nor minified again.
  absl::flat_hash_map<std::string_view, std::string_view> words_, raws_;
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
    if (auto err = doc.get_object().get(root)) {
      if (err == simdjson::INCORRECT_TYPE) fail("the document must be a JSON object");
      check(err);
    }
    std::string_view text;
    check(root.raw_json().get(text));
    const char* end = bytes.data() + bytes.size();
    for (const char* p = text.data() + text.size(); p < end; ++p)
      if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') fail("trailing content after the JSON document");
    doc.rewind();
  }

  // ---- errors -------------------------------------------------------------------------------
  std::string pointer() const {
    std::string p;
    for (size_t d = 0; d < depth_; ++d) {
      const PathStep& s = path_[d];
      p += '/';
      if (s.index >= 0)
        p += std::to_string(s.index);
      else
        p += pointerToken(s.key);
    }
    return p;
  }
  [[noreturn]] void fail(const std::string& message) const { throw InputError(name_, pointer(), message); }
  void check(simdjson::error_code err) const {
    if (!err) return;
    switch (err) {
      case simdjson::EMPTY: fail("empty file: expected a JSON object");
      case simdjson::DEPTH_ERROR: fail("JSON nested too deeply (over 1024 levels)");
      case simdjson::INCORRECT_TYPE: fail("wrong JSON type");
      case simdjson::NUMBER_OUT_OF_RANGE: fail("number out of range");
      default: fail(std::string("malformed JSON: ") + simdjson::error_message(err));
    }
  }
  struct Scope {
    Loader& l;
    Scope(Loader& l, std::string_view key) : l(l) { l.path_[l.depth_++] = {key, -1}; }
    Scope(Loader& l, int64_t index) : l(l) { l.path_[l.depth_++] = {{}, index}; }
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
    if (auto err = v.get_bool().get(x)) {
      if (err == simdjson::INCORRECT_TYPE) fail(std::string("expected a boolean ") + what);
      check(err);
    }
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
    if (auto err = v.get_object().get(o)) {
      if (err == simdjson::INCORRECT_TYPE) fail(std::string("expected an object ") + what);
      check(err);
    }
    return o;
  }
  od::array getArray(od::value v, const char* what) {
    od::array a;
    if (auto err = v.get_array().get(a)) {
      if (err == simdjson::INCORRECT_TYPE) fail(std::string("expected an array ") + what);
      check(err);
    }
    return a;
  }

  // Any JSON value, kept as compact raw text. Compound values are fully validated (on-demand
  // skipping alone would let `[1, tru]` through) and minified when they hold whitespace.
  std::string_view raw(od::value v) {
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
    if (it != raws_.end()) return it->second;
    simdjson::dom::element el;
    check(validator_.parse(text.data(), text.size()).get(el));
    bool has_space = false;
    for (char c : text) has_space |= (c == ' ' || c == '\n' || c == '\t' || c == '\r');
    std::string_view kept_text = store(text), kept = kept_text;
    if (has_space) {
      std::string minified(text.size(), '\0');
      size_t len = 0;
      check(simdjson::minify(text.data(), text.size(), minified.data(), len));
      kept = store(std::string_view(minified.data(), len));
    }
    raws_.emplace(kept_text, kept);
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
  // An object kept as its compact text (attrs, dist_attr); members are split on first use.
  JsonObject rawObject(od::value v, const char* what) {
    od::json_type t = od::json_type::null;
    check(v.type().get(t));
    if (t != od::json_type::object) fail(std::string("expected an object ") + what);
    return JsonObject::fromCompactText(raw(v));
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
      od::value v = field.value();
      if (k == "format") {
        job.format = getString(v, "for \"format\"");
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
  }

  ProcessGroup parseGroup(od::value v) {
    ProcessGroup g;
    for (auto f : getObject(v, "for a process group")) {
      od::field field;
      check(std::move(f).get(field));
      std::string_view k = key(field);
      Scope s(*this, k);
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
          Op& op = b.ops.emplace_back();
          op.self = std::prev(b.ops.end());
          op.block = &b;
          op.id = b.program->next_op_id++;
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
      Slot& slot = slot_buf_.emplace_back();
      slot.name = word(key(field));
      Scope s(*this, slot.name);
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

// Links blocks to parents and resolves every op argument, building def-use.
void resolve(Job& job) {
  for (auto& prog : job.programs) {
    Program& p = *prog;
    for (auto& b : p.blocks) {
      if (b->parent_idx == -1) continue;
      b->parent = p.block(b->parent_idx);
      std::string where = "/programs/" + std::to_string(p.position) + "/blocks/" + std::to_string(b->position) + "/parent_idx";
      if (!b->parent || b->parent == b.get())
        throw InputError(job.path, where, "parent block " + std::to_string(b->parent_idx) + " does not exist");
    }
    // Parent chains must end: a cycle would make lookups loop.
    for (auto& b : p.blocks) {
      const Block* x = b.get();
      for (size_t steps = 0; x; x = x->parent)
        if (++steps > p.blocks.size())
          throw InputError(job.path, "/programs/" + std::to_string(p.position) + "/blocks/" + std::to_string(b->position) + "/parent_idx",
                           "block parents form a cycle");
    }
    for (auto& b : p.blocks) {
      size_t op_index = 0;
      for (Op& op : b->ops) {
        for (int dir = 0; dir < 2; ++dir) {
          auto& slots = dir == 0 ? op.inputs : op.outputs;
          for (auto& slot : slots) {
            for (size_t i = 0; i < slot.args.size(); ++i) {
              Arg& a = slot.args[i];
              if (!a.var) a.var = b->lookup(a.name);
              if (!a.var) {
                std::string where = "/programs/" + std::to_string(p.position) + "/blocks/" + std::to_string(b->position) +
                                    "/ops/" + std::to_string(op_index) + (dir == 0 ? "/inputs/" : "/outputs/") +
                                    pointerToken(slot.name) + "/" + std::to_string(i);
                throw InputError(job.path, where,
                                 "var \"" + std::string(a.name) + "\" is not declared in block " + std::to_string(b->idx) +
                                     " or its ancestors");
              }
              (dir == 0 ? a.var->readers : a.var->writers).push_back(&op);
            }
          }
        }
        ++op_index;
      }
    }
  }
}

// ---- chunked loading -------------------------------------------------------------------------
// A job's bulk is its programs, one per rank (io/top_level_scan.h). Parsing each as a document of
// its own lets ranks load on several threads and keeps simdjson's structural index to one program.

// The programs the scan has found, handed to the parsing threads as soon as each is found.
class FoundPrograms {
 public:
  struct Item {
    Span span;
    size_t index = 0;
    std::unique_ptr<Program> program;
    std::exception_ptr error;
  };
  void add(const Span& span) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back({span, items_.size(), nullptr, nullptr});
    cv_.notify_one();
  }
  void finish(bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    ok_ = ok;
    cv_.notify_all();
  }
  // The next program to parse; null when the scan is over (or failed, so nothing more is wanted).
  Item* next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return taken_ < items_.size() || done_; });
    if (taken_ == items_.size() || !ok_) return nullptr;
    return &items_[taken_++];
  }
  std::deque<Item>& items() { return items_; }  // once every thread is joined

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;  // a deque: items stay put while the scan appends
  size_t taken_ = 0;
  bool done_ = false, ok_ = true;
};

// Loads a job through its top-level layout: threads parse programs as the scan finds them, each
// releasing the file's bytes behind it, and the rest of the document is parsed once the scan
// ends. Returns false when the scan gives up (the caller parses the whole document instead).
bool loadChunked(Job& job, const Source& src, const std::string& name) {
  std::string_view text = src.text();
  unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  job.load_arenas.resize(threads + 1);  // the last one is the header's
  FoundPrograms found;
  std::mutex layouts;
  auto worker = [&](unsigned t) {
    Loader loader(job, name, job.load_arenas[t], &layouts);
    while (FoundPrograms::Item* item = found.next()) {
      try {
        auto p = std::make_unique<Program>();
        p->job = &job;
        p->position = item->index;
        const Span& e = item->span;
        ReleaseBehind parsed(src, text.data() + e.begin);
        loader.releaseBehind(&parsed);
        loader.runProgram(text.data() + e.begin, e.end - e.begin, src.capacity() - e.begin, item->index, *p);
        parsed.finish(text.data() + e.end);
        item->program = std::move(p);
      } catch (...) {
        item->error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  ReleaseBehind scanned(src, text.data());
  std::optional<TopLevel> top;
  try {
    top = scanTopLevel(text, &scanned, [&](const Span& s) { found.add(s); });
  } catch (...) {
    found.finish(false);
    for (auto& th : pool) th.join();
    throw;
  }
  found.finish(bool(top));
  std::exception_ptr header_error;
  if (top) {
    try {  // the header, while the programs parse
      std::string skeleton;
      skeleton.reserve(top->programs.begin + 2 + (text.size() - top->programs.end) + simdjson::SIMDJSON_PADDING);
      skeleton.append(text.substr(0, top->programs.begin)).append("[]").append(text.substr(top->programs.end));
      size_t skeleton_len = skeleton.size();
      skeleton.append(simdjson::SIMDJSON_PADDING, ' ');
      Arena& arena = job.load_arenas[threads];
      std::string_view kept = arena.store(skeleton);  // the header's views point here
      Loader(job, name, arena).runSkeleton(kept.data(), skeleton_len);
    } catch (...) {
      header_error = std::current_exception();
    }
  }
  for (auto& th : pool) th.join();
  if (!top) return false;
  if (header_error) std::rethrow_exception(header_error);
  for (auto& item : found.items()) {
    if (item.error) std::rethrow_exception(item.error);  // the first failing program in file order
    job.programs.push_back(std::move(item.program));
  }
  return true;
}

std::unique_ptr<Job> load(std::shared_ptr<Source> src, const std::string& name, const LoadOptions& opts) {
  // The text form (io/text_reader.h) is told apart by its first line; a JSON job starts with "{".
  if (looksLikeTextJob(src->text())) return readTextJob(src->text(), name, opts);
  auto job = std::make_unique<Job>();
  job->path = name;
  job->source = src;
  if (!loadChunked(*job, *src, name)) Loader(*job, name, job->arena).run(src->text().data(), src->text().size(), src->capacity());
  job->rebuildIndices();
  if (opts.resolve) resolve(*job);
  return job;
}

}  // namespace

std::unique_ptr<Job> loadJob(const std::string& path, const LoadOptions& opts) { return load(openSource(path), path, opts); }

std::unique_ptr<Job> loadJobFromText(std::string_view text, const std::string& display_name, const LoadOptions& opts) {
  return load(copySource(text), display_name, opts);
}

}  // namespace spopt
