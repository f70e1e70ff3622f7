#include "io/text_reader.h"

#include <absl/container/flat_hash_map.h>

#include "io/text_lexer.h"
#include "io/text_spmd.h"
#include "io/text_writer.h"
#include "ir/json_text.h"
#include "ops/op_def.h"
#include "support/error.h"

namespace spopt {
namespace {

using text::invalidUtf8At;

constexpr int64_t kMaxDim = int64_t(1) << 40;  // as the JSON loader: beyond this is no tensor
constexpr size_t kMaxRank = 16;

class TextReader : text::SpmdLexer {
 public:
  TextReader(std::string_view text, const std::string& name, Job& job, const LoadOptions& opts)
      : SpmdLexer(text, name), job_(job), opts_(opts) {}

  void run() {
    if (size_t bad = invalidUtf8At(s_); bad != std::string_view::npos) failAt(bad, "invalid UTF-8");
    blankLines();
    size_t magic_at = p_;
    if (s_.substr(p_, kTextMagic.size()) != kTextMagic) fail("expected \"" + std::string(kTextMagic) + " 1\" as the first line");
    p_ += kTextMagic.size();
    size_t version_at = here();
    job_.format = "sp-opt.program";
    job_.version = integer("for the format version");
    if (job_.version != 1)
      failAt(version_at, "format version " + std::to_string(job_.version) + " is not supported (this build reads version 1)");
    endLine("the format line");
    for (blankLines(); p_ < s_.size(); blankLines()) {
      size_t at = p_;
      std::string_view kw = word();
      if (kw == "world_size") {
        if (have_world_) failAt(at, "world_size is given twice");
        have_world_ = true;
        size_t n_at = here();
        job_.world_size = integer("for world_size");
        if (job_.world_size < 1 || job_.world_size > (1 << 24)) failAt(n_at, "world_size must be between 1 and 16777216");
        endLine("world_size");
      } else if (kw == "group") {
        group();
      } else if (kw == "mesh" || kw == "dist") {
        aliasDefinition(kw == "dist");
      } else if (kw == "rank") {
        section();
      } else {
        failAt(at, "expected world_size, group, mesh, dist or rank, found " + describe(at));
      }
    }
    if (!have_world_) failAt(magic_at, "the job lacks a \"world_size N\" line");
    job_.fields = Fields{{"format", {}}, {"version", {}}, {"world_size", {}}, {"process_groups", {}}, {"programs", {}}};
  }

 private:
  Job& job_;
  const LoadOptions& opts_;
  bool have_world_ = false;  // a world_size line was read (it may come after the rank sections)
  // Interned text: op types, slot names and attribute objects repeat across most ops.
  absl::flat_hash_map<std::string_view, std::string_view> words_, objects_;
  absl::flat_hash_map<const char*, const SharedObject*> members_;  // of the objects_ read as attrs or dist_attrs
  struct Alias {
    bool dist;             // a whole dist_attr (dist #x = {...}), else a value (mesh #x = JSON)
    std::string_view raw;  // compact JSON text
  };
  absl::flat_hash_map<std::string, Alias> aliases_;
  // Arguments not declared in their block when read: resolved once the program is whole.
  struct Pending {
    Op* op;
    bool output;
    size_t slot, index, offset;
  };
  std::vector<Pending> pending_;
  std::vector<size_t> parent_at_;  // per block of the program being read: where parent= is

  std::string_view intern(std::string_view text) {
    auto it = words_.find(text);
    if (it != words_.end()) return it->second;
    std::string_view kept = job_.arena.store(text);
    words_.emplace(kept, kept);
    return kept;
  }
  // A name: a bare word, or a JSON string for names with other characters. Stored in the arena.
  // Slot and fetch names may be "" (the JSON loader takes them); var names and op types may not.
  std::string_view name(const std::string& what, bool allow_empty = false) {
    size_t at = here();
    if (peek() == '"') {
      std::string raw;
      jsonString(raw);
      auto text = rawToString(raw);
      if (!text) failAt(at, "malformed string");
      if (text->empty() && !allow_empty) failAt(at, what + " must not be empty");
      return intern(*text);
    }
    std::string_view w = word();
    if (p_ < s_.size() && s_[p_] == '$') return intern(substitutedName(w, what));
    if (w.empty()) failAt(at, "expected " + what + ", found " + describe(at));
    return intern(w);
  }
  // A bare name with `$rank` / `$rank{...}` in it (y_$rank): the SPMD shorthand.
  std::string substitutedName(std::string_view head, const std::string& what) {
    std::string n(head);
    while (p_ < s_.size() && (s_[p_] == '$' || isTextWordChar(s_[p_])))
      if (s_[p_] == '$')
        n += rankSubstitution([&] { return std::string(name(what)); });
      else
        n += word();
    return n;
  }
  std::string_view keep(const std::string& compact) {
    auto it = objects_.find(compact);
    if (it != objects_.end()) return it->second;
    std::string_view kept = job_.arena.store(compact);
    objects_.emplace(kept, kept);
    return kept;
  }
  // An attrs or dist_attr object of kept (interned) text: split once per distinct text.
  JsonObject object(std::string_view kept) {
    const SharedObject*& shared = members_[kept.data()];
    if (!shared) shared = JsonObject::share(job_.arena, kept);
    return JsonObject::fromShared(shared);
  }
  const Alias& alias(bool dist) {
    size_t at = here();
    ++p_;  // '#'
    std::string_view n = word();
    auto it = aliases_.find(std::string(n));
    if (it == aliases_.end()) failAt(at, "alias #" + std::string(n) + " is not defined above");
    if (it->second.dist != dist)
      failAt(at, "#" + std::string(n) + (dist ? " is a mesh alias; dist= takes a dist alias or {...}" : " is a dist alias; it stands for a whole dist_attr, not a value"));
    return it->second;
  }
  // {key=value, ...}: keys are words or JSON strings, values JSON or a mesh alias.
  std::string_view kvObject(const std::string& what) {
    expect('{', "to open " + what);
    std::string out = "{";
    std::vector<std::string> keys;  // quoted, as the JSON text will hold them
    if (!eat('}')) {
      do {
        if (out.size() > 1) out += ',';
        size_t at = here();
        size_t key_begin = out.size();
        if (peek() == '"') {
          jsonString(out);
        } else {
          std::string_view k = word();
          if (k.empty()) failAt(at, "expected a key in " + what + ", found " + describe(at));
          out += '"';
          out.append(k);
          out += '"';
        }
        std::string key = out.substr(key_begin);
        for (const std::string& k : keys)
          if (k == key) failAt(at, "duplicate key " + key + " in " + what);
        keys.push_back(std::move(key));
        out += ':';
        expect('=', "after the key in " + what);
        if (peek() == '#')
          out.append(alias(false).raw);
        else if (peek() == '$')
          out += rankSubstitution([&] {
            std::string v;
            json(v, 1);
            return v;
          });
        else
          json(out, 1);
      } while (eat(','));
      expect('}', "to close " + what);
    }
    out += '}';
    return keep(out);
  }
  JsonObject distAttr(const std::string& what) {
    expect('=', "after dist");
    if (peek() == '#') return object(alias(true).raw);
    return object(kvObject("the dist_attr of " + what));
  }

  // ---- statements ---------------------------------------------------------------------------
  void group() {
    ProcessGroup g;
    expectWord("ring_id", "after group");
    expect('=', "after ring_id");
    g.ring_id = integer("for ring_id");
    expectWord("ranks", "after the ring id");
    expect('=', "after ranks");
    g.ranks = intList("the ranks of a group");
    g.fields = Fields{{"ring_id", {}}, {"ranks", {}}};
    endLine("the group");
    job_.groups.push_back(std::move(g));
  }

  void aliasDefinition(bool dist) {
    size_t at = here();
    if (!eat('#')) fail("expected \"#name\" after " + std::string(dist ? "dist" : "mesh") + ", found " + describe(p_));
    std::string n(word());
    if (n.empty()) failAt(at, "expected an alias name after \"#\"");
    if (aliases_.count(n)) failAt(at, "alias #" + n + " is defined twice");
    expect('=', "after #" + n);
    Alias a{dist, {}};
    if (dist) {
      a.raw = kvObject("dist #" + n);
    } else {
      std::string out;
      json(out, 1);
      a.raw = keep(out);
    }
    endLine("#" + n);
    aliases_.emplace(std::move(n), a);
  }

  // `rank R ...` or the shorthand `rank A..B ...`: the section is read once per rank.
  void section() {
    size_t at = here();
    if (!rangeAhead()) {
      int64_t rank = integer("for rank");
      section_ = {rank, rank};
      return program(rank, "rank " + std::to_string(rank));
    }
    section_ = rankRange("for rank");
    if (section_.last - section_.first >= kMaxSectionRanks)
      failAt(at, "rank " + section_.text() + " spans more than " + std::to_string(kMaxSectionRanks) + " ranks");
    // A range is read once per rank: past the world it is a typo, and past a few thousand a hang.
    if (have_world_ && section_.last >= job_.world_size)
      failAt(at, "rank " + section_.text() + " goes past world_size " + std::to_string(job_.world_size));
    size_t header = p_;
    for (int64_t r = section_.first; r <= section_.last; ++r) {
      p_ = header;
      context_ = section_.first == section_.last ? "" : " (reading rank " + std::to_string(r) + " of rank " + section_.text() + ")";
      program(r, "rank " + section_.text());
      // Every rank re-reads the body: what the shorthand expands to is bounded as an input is.
      expanded_ += p_ - header;
      if (expanded_ > kMaxExpandedBytes)
        failAt(at, "rank " + section_.text() + " expands to more than " + std::to_string(kMaxExpandedBytes >> 20) + " MiB of text");
    }
    context_.clear();
  }

  void program(int64_t rank, const std::string& what) {
    auto p = std::make_unique<Program>();
    p->job = &job_;
    p->position = job_.programs.size();
    p->rank = rank;
    rank_ = rank;
    std::vector<Field> fields{{"rank", {}}};
    if (eatWord("fetch")) {
      expect('=', "after fetch");
      expect('[', "to open the fetch list");
      if (!eat(']')) {
        do p->fetch.push_back(name("a var name", true));
        while (eat(','));
        expect(']', "to close the fetch list");
      }
      fields.push_back({"fetch", {}});
    }
    fields.push_back({"blocks", {}});
    p->fields = Fields(job_.internLayout(fields));
    size_t open = here();
    expect('{', "to open " + what);
    endLine("\"{\"");
    pending_.clear();
    parent_at_.clear();
    while (true) {
      blankLines();
      size_t at = p_;
      // Built on error only: counting lines is a scan of the text.
      auto closing = [&] { return "expected \"}\" to close " + what + " (opened at line " + std::to_string(lineOf(open)) + ")"; };
      if (p_ >= s_.size()) failAt(at, closing());
      if (eat('}')) break;
      std::string_view kw = word();
      if (kw == "rank") failAt(at, closing() + " before \"rank\"");
      if (kw != "block") failAt(at, "expected \"block\" or \"}\" in " + what + ", found " + describe(at));
      block(*p, what);
    }
    endLine("\"}\"");
    if (opts_.resolve) resolve(*p);
    job_.programs.push_back(std::move(p));
    rank_.reset();
  }

  void block(Program& p, const std::string& program_what) {
    auto b = std::make_unique<Block>();
    b->program = &p;
    b->position = p.blocks.size();
    b->idx = integer("for the block index");
    std::string what = "block " + std::to_string(b->idx) + " of " + program_what;
    parent_at_.push_back(here());
    if (eatWord("parent")) {
      expect('=', "after parent");
      b->parent_idx = integer("for parent");
    }
    b->fields = Fields(job_.internLayout({{"idx", {}}, {"parent_idx", {}}, {"vars", {}}, {"ops", {}}}));
    size_t open = here();
    expect('{', "to open " + what);
    endLine("\"{\"");
    Block& blk = *b;
    p.blocks.push_back(std::move(b));
    while (true) {
      blankLines();
      size_t at = p_;
      // Built on error only: counting lines is a scan of the text.
      auto closing = [&] { return "expected \"}\" to close " + what + " (opened at line " + std::to_string(lineOf(open)) + ")"; };
      if (p_ >= s_.size()) failAt(at, closing());
      if (eat('}')) break;
      if (peek() == '{') {
        op(blk);
        continue;
      }
      std::string_view kw = word();
      if (kw == "var") {
        var(blk);
      } else if (kw == "rank" && rankPrefixAhead()) {
        rankLine(blk);
      } else if (kw == "block" || kw == "rank") {
        failAt(at, closing() + " before \"" + std::string(kw) + "\"");
      } else {
        failAt(at, "expected \"var\", an op or \"}\" in " + what + ", found " + describe(at));
      }
    }
    endLine("\"}\"");
  }

  // `rank R, S..T: LINE`: a var or op read on every rank (so its errors show), kept on those.
  void rankLine(Block& b) {
    bool keep = rankPrefix();
    size_t at = here();
    if (peek() == '{') {
      op(b);
      if (!keep) dropLastOp(b);
    } else if (word() == "var") {
      if (keep)
        var(b);
      else
        readVar();
    } else {
      failAt(at, "expected \"var\" or an op after \"rank ...:\", found " + describe(at));
    }
  }
  void dropLastOp(Block& b) {
    const Op* last = &b.ops.back();
    while (!pending_.empty() && pending_.back().op == last) pending_.pop_back();
    b.ops.pop_back();
    b.invalidatePositions();
    --b.program->next_op_id;
  }

  void var(Block& b) {
    size_t name_at = here();
    Var v = readVar();
    std::string_view n = v.name;
    if (!b.addVarIfNew(std::move(v))) failAt(name_at, "var \"" + std::string(n) + "\" is declared twice in this block");
  }
  Var readVar() {
    Var v;
    v.name = name("a var name");
    expect(':', "after the var name");
    size_t dtype_at = here();
    std::string_view t = word();
    auto dt = parseDType(t);
    if (!dt)
      failAt(dtype_at, "unknown dtype " + describe(dtype_at) +
                           " (expected float32, float64, float16, bfloat16, int32, int64, bool or uint8)");
    v.dtype = *dt;
    size_t shape_at = here();
    v.shape = intList("the shape");
    if (v.shape.size() > kMaxRank) failAt(shape_at, "more than 16 dimensions");
    for (int64_t d : v.shape) {
      if (d < -1) failAt(shape_at, "negative dimension " + std::to_string(d) + " (only -1, unknown, is allowed)");
      if (d > kMaxDim) failAt(shape_at, "absurd dimension " + std::to_string(d));
    }
    if (eatWord("persistable")) v.persistable = true;
    bool has_dist = eatWord("dist");
    if (has_dist) v.dist_attr = distAttr("var \"" + std::string(v.name) + "\"");
    endLine("the var");
    v.fields = Fields(job_.internLayout(has_dist ? std::vector<Field>{{"name", {}}, {"shape", {}}, {"dtype", {}}, {"persistable", {}}, {"dist_attr", {}}}
                                                 : std::vector<Field>{{"name", {}}, {"shape", {}}, {"dtype", {}}, {"persistable", {}}}));
    return v;
  }

  // SLOT=[name, ...], ... up to `close`.
  void slots(Block& b, Op& op, bool output, char close) {
    auto& list = output ? op.outputs : op.inputs;
    if (eat(close)) return;
    do {
      Slot& slot = list.emplace_back();
      slot.name = name("a slot name", true);
      expect('=', "after the slot name");
      expect('[', "to open the slot's var list");
      if (!eat(']')) {
        do {
          size_t at = here();
          std::string_view n = name("a var name");
          if (Var* v = b.findLocal(n)) {
            slot.args.push_back({v->name, v});
          } else {
            slot.args.push_back({n, nullptr});
            pending_.push_back({&op, output, list.size() - 1, slot.args.size() - 1, at});
          }
        } while (eat(','));
        expect(']', "to close the slot's var list");
      }
    } while (eat(','));
    expect(close, output ? "to close the outputs" : "to close the inputs");
  }

  void op(Block& b) {
    Op& op = b.appendOp();
    expect('{', "to open the outputs");
    slots(b, op, true, '}');
    expect('=', "after the outputs");
    op.type = name("an op type");
    expect('(', "after the op type");
    slots(b, op, false, ')');
    if (peek() == '{') op.attrs = object(kvObject("the attrs"));
    bool has_dist = eatWord("dist");
    if (has_dist) op.dist_attr = distAttr("the op");
    endLine("the op");
    op.fields = Fields(job_.internLayout(has_dist ? std::vector<Field>{{"type", {}}, {"inputs", {}}, {"outputs", {}}, {"attrs", {}}, {"dist_attr", {}}}
                                                  : std::vector<Field>{{"type", {}}, {"inputs", {}}, {"outputs", {}}, {"attrs", {}}}));
  }

  // Links blocks to parents and resolves every argument, building def-use (as the JSON loader).
  void resolve(Program& p) {
    for (size_t i = 0; i < p.blocks.size(); ++i) {
      Block& b = *p.blocks[i];
      if (b.parent_idx == -1) continue;
      b.parent = p.block(b.parent_idx);
      if (b.parent == &b) failAt(parent_at_[i], "block " + std::to_string(b.idx) + " is its own parent");
      if (!b.parent) failAt(parent_at_[i], "parent block " + std::to_string(b.parent_idx) + " does not exist");
    }
    for (size_t i = 0; i < p.blocks.size(); ++i) {
      const Block* x = p.blocks[i].get();
      for (size_t steps = 0; x; x = x->parent)
        if (++steps > p.blocks.size()) failAt(parent_at_[i], "block parents form a cycle");
    }
    for (const Pending& u : pending_) {
      Arg& a = (u.output ? u.op->outputs : u.op->inputs)[u.slot].args[u.index];
      a.var = u.op->block->lookup(a.name);
      if (!a.var)
        failAt(u.offset, "var \"" + std::string(a.name) + "\" is not declared in block " + std::to_string(u.op->block->idx) +
                             " or its ancestors");
    }
    for (auto& b : p.blocks)
      for (Op& op : b->ops) {
        for (auto& slot : op.inputs)
          for (Arg& a : slot.args) a.var->readers.push_back(&op);
        for (auto& slot : op.outputs)
          for (Arg& a : slot.args) a.var->writers.push_back(&op);
      }
  }
};

}  // namespace

bool looksLikeTextJob(std::string_view bytes) {
  size_t p = 0;
  while (p < bytes.size()) {
    char c = bytes[p];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++p;
    } else if (bytes.substr(p, 2) == "//") {
      while (p < bytes.size() && bytes[p] != '\n') ++p;
    } else {
      break;
    }
  }
  return bytes.substr(p, kTextMagic.size()) == kTextMagic;
}

std::unique_ptr<Job> readTextJob(std::string_view text, const std::string& name, const LoadOptions& opts) {
  auto job = std::make_unique<Job>();
  job->path = name;
  TextReader(text, name, *job, opts).run();
  job->rebuildIndices();
  inferDialects(*job);
  return job;
}

}  // namespace spopt
