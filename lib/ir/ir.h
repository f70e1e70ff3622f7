#pragma once
// The in-memory form of a distributed job (format v1, ../shared/design/format.md).
//
// Lossless by construction: every entity keeps `fields`, its keys in file order. A field whose
// `raw` is null is a known key held in a typed member; any other field is a key this build does
// not know, kept as its raw JSON text. Attributes and dist attributes are JsonObjects of raw text.
// Text is viewed (std::string_view) in the job's arenas; nothing views the loaded file's bytes, so
// the loader can hand their pages back as it goes.
//
// Def-use: every Var lists the ops that read and write it; Block::insertOp / eraseOp /
// Op::setArg keep those lists current so passes can follow data flow in O(uses), never by scanning.
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <span>
#include <string_view>
#include <unordered_map>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/container/inlined_vector.h>
#include <vector>

#include "ir/arena.h"
#include "ir/json_object.h"

namespace spopt {

enum class DType : uint8_t { Float32, Float64, Float16, BFloat16, Int32, Int64, Bool, UInt8 };
std::optional<DType> parseDType(std::string_view s);
std::string_view dtypeName(DType t);
size_t dtypeSize(DType t);

// One key of an entity, in file order. raw == null: a known key, value in the typed member.
struct Field {
  std::string_view key;
  std::string_view raw;  // raw JSON of an unknown key; data()==nullptr for known keys
  bool known() const { return raw.data() == nullptr; }
};
// The keys of an entity in order. Entities with only known keys share one interned layout per
// distinct key order (most ops of a job share one), so a million ops do not hold a million lists.
class Fields {
 public:
  Fields() = default;
  Fields(std::initializer_list<Field> f) : own_(std::make_unique<std::vector<Field>>(f)) {}
  explicit Fields(const std::vector<Field>* shared) : shared_(shared) {}
  Fields(const Fields& o) : shared_(o.shared_), own_(o.own_ ? std::make_unique<std::vector<Field>>(*o.own_) : nullptr) {}
  Fields(Fields&&) noexcept = default;
  Fields& operator=(const Fields& o) { return *this = Fields(o); }
  Fields& operator=(Fields&&) noexcept = default;
  const Field* begin() const { return items().data(); }
  const Field* end() const { return items().data() + items().size(); }
  size_t size() const { return items().size(); }
  bool empty() const { return items().empty(); }
  const std::vector<Field>& items() const;
  std::vector<Field>& mutableItems();  // copy-on-write off the shared layout
  void push_back(Field f) { mutableItems().push_back(f); }

 private:
  // One of the two, or neither (no keys): 16 bytes for the million entities of a big job.
  const std::vector<Field>* shared_ = nullptr;
  std::unique_ptr<std::vector<Field>> own_;
};
bool hasField(const Fields& f, std::string_view key);
void ensureField(Fields& f, std::string_view key);  // appends a known key if missing
void dropField(Fields& f, std::string_view key);

// The dialect a program is written in (ops/op_def.h: how each spells ops, slots and attributes).
enum class Dialect : uint8_t { Legacy, Current, Pir };
std::string_view dialectName(Dialect d);  // "legacy", "current", "pir"
std::optional<Dialect> parseDialect(std::string_view name);

struct Op;
// Readers and writers of a var: most vars have one or two, kept inline without a heap block.
using OpList = absl::InlinedVector<Op*, 2>;

// A var's dims, held in the Var itself up to four (nearly every tensor of a transformer step):
// the walks that size buffers and cost ops read a var's shape with the var, not from a block of
// its own elsewhere in memory. Converts to and from std::vector<int64_t>, the shape-rule type.
class Shape : public absl::InlinedVector<int64_t, 4> {
 public:
  using Base = absl::InlinedVector<int64_t, 4>;
  using Base::Base;
  Shape() = default;
  Shape(const std::vector<int64_t>& dims) : Base(dims.begin(), dims.end()) {}  // NOLINT: implicit, as the vector it replaces
  Shape& operator=(const std::vector<int64_t>& dims) {
    assign(dims.begin(), dims.end());
    return *this;
  }
  Shape& operator=(std::initializer_list<int64_t> dims) {
    assign(dims.begin(), dims.end());
    return *this;
  }
  operator std::vector<int64_t>() const { return {begin(), end()}; }  // NOLINT
  friend bool operator==(const Shape& a, const Shape& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
  friend bool operator==(const Shape& a, const std::vector<int64_t>& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
};
struct Block;
struct Program;
struct Job;

// What the analyses read of every var and op on each walk (ids, block, dtype, shape, slots) comes
// first in Var and Op, on the object's first cache line; the attrs, read rarely, after.
struct Var {
  uint32_t id = 0;       // unique within the program
  DType dtype = DType::Float32;
  bool persistable = false;
  bool removed = false;  // removed vars are skipped by the writer
  Block* block = nullptr;
  std::string_view name;
  Shape shape;
  JsonObject dist_attr;  // meaningful when hasField(fields, "dist_attr")
  Fields fields;

  OpList readers, writers;  // def-use, in no particular order

  // -1 if any dim is unknown; the int64 maximum if the product overflows (the verifier rejects
  // such a var: see byteSize). Never wraps.
  int64_t numel() const;
  // numel x dtype size (support/checked_size.h); nullopt when a dim is unknown or it overflows.
  std::optional<int64_t> byteSize() const;
  bool hasDistAttr() const { return hasField(fields, "dist_attr"); }
  // dims_mapping of the dist attr, or empty when absent.
  std::vector<int64_t> dimsMapping() const;
};

// An arg's var and that var's id, kept together: assigning the pointer sets the id. A walk that
// needs only which var an arg names (liveness, the schedulers' dependences) reads the id beside
// the slot and never loads the Var, a cache miss per arg on a big job.
class VarRef {
 public:
  static constexpr uint32_t kNoId = UINT32_MAX;
  VarRef() = default;
  VarRef(Var* v) : var_(v), id_(v ? v->id : kNoId) {}  // NOLINT: an arg's var is assigned as a pointer
  VarRef& operator=(Var* v) { return *this = VarRef(v); }
  operator Var*() const { return var_; }  // NOLINT
  Var* operator->() const { return var_; }
  Var& operator*() const { return *var_; }
  uint32_t id() const { return id_; }  // kNoId while unresolved

 private:
  Var* var_ = nullptr;
  uint32_t id_ = kNoId;
};

struct Arg {
  std::string_view name;
  VarRef var;  // resolved after load; null only while loading
};
struct Slot {
  std::string_view name;
  absl::InlinedVector<Arg, 1> args;  // most slots hold one arg: no heap block for it
};

struct Op {
  uint32_t id = 0;  // stable identity within the program across edits
  // Index in block->ops, valid while the block's position cache is clean (Block::indexOf).
  mutable uint32_t cached_index = 0;
  Block* block = nullptr;
  std::string_view type;
  std::vector<Slot> inputs, outputs;
  JsonObject attrs;
  JsonObject dist_attr;  // meaningful when hasField(fields, "dist_attr")
  Fields fields;

  std::list<Op>::iterator self;  // position in block->ops

  const Slot* input(std::string_view slot) const;
  const Slot* output(std::string_view slot) const;
  // The first arg of a slot, or null.
  Var* in(std::string_view slot, size_t i = 0) const;
  Var* out(std::string_view slot, size_t i = 0) const;
  size_t inputCount(std::string_view slot) const;   // args in the slot, 0 when absent
  size_t outputCount(std::string_view slot) const;
  bool hasDistAttr() const { return hasField(fields, "dist_attr"); }
  std::string executionStream() const;  // "default" when absent
};

// A block's ops in order, read from its position cache's array of pointers (Block::inOrder). A
// walk over std::list waits for each node before it can load the next; over this array the
// loads of many ops are in flight at once (reading each op's id on a 1M-op job: 6 ms, against
// 96 ms down the lists). Valid while the block is not edited: a walk that inserts, erases or
// moves ops walks `Block::ops` instead.
template <class O>
class OpRange {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::remove_const_t<O>;
    using difference_type = std::ptrdiff_t;
    using pointer = O*;
    using reference = O&;
    iterator() = default;
    explicit iterator(Op* const* at) : at_(at) {}
    O& operator*() const { return **at_; }
    O* operator->() const { return *at_; }
    iterator& operator++() { return ++at_, *this; }
    iterator operator++(int) { return iterator(at_++); }
    bool operator==(const iterator& o) const { return at_ == o.at_; }

   private:
    Op* const* at_ = nullptr;
  };
  explicit OpRange(std::span<Op* const> ops) : ops_(ops) {}
  iterator begin() const { return iterator(ops_.data()); }
  iterator end() const { return iterator(ops_.data() + ops_.size()); }
  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }
  O& operator[](size_t i) const { return *ops_[i]; }
  std::span<Op* const> pointers() const { return ops_; }

 private:
  std::span<Op* const> ops_;
};

struct Block {
  int64_t idx = 0;
  int64_t parent_idx = -1;
  Block* parent = nullptr;
  std::vector<std::unique_ptr<Var>> vars;
  std::list<Op> ops;
  Fields fields;

  Program* program = nullptr;
  size_t position = 0;  // index in program->blocks (the JSON array position)

  // Declared here or in an ancestor block.
  Var* lookup(std::string_view name) const;
  Var* findLocal(std::string_view name) const;
  Var* addVar(Var v);            // registers the name; the caller ensures it is new
  Var* addVarIfNew(Var v);       // null when the name is already declared in this block
  void removeVar(Var* v);        // marks removed; the var must be unused
  // Gives `v` (a var of this block) the name `name` (text the caller keeps alive, e.g. in the
  // job's arena) in every arg and fetch entry naming it. The caller ensures the name is new.
  void renameVar(Var* v, std::string_view name);
  using OpIter = std::list<Op>::iterator;
  // Inserts an op before `pos`, resolves its args in this block's scope, updates def-use.
  // Unresolvable names throw std::logic_error: passes must create vars first.
  Op* insertOp(OpIter pos, Op op);
  void eraseOp(Op* op);          // unregisters def-use and removes it
  // Moves `op` (an op of this block) before `pos` (an iterator of this block's ops, or end()).
  // A splice: the op keeps its id, its address, its `self` iterator and its def-use lists; only
  // its position changes. Moving an op before itself or before its successor is a no-op.
  void moveOp(Op* op, OpIter pos);
  // Puts `run` (a contiguous run of this block's ops, in block order) in the order `order` (the
  // same ops), moving only the ops between the first and the last place where the two differ,
  // each by moveOp. The positions stay known: the moved ops take the run's own indices, so a
  // scheduler that reorders runs of a large block does not make the next query walk it again.
  void reorderRun(std::span<Op* const> run, std::span<Op* const> order);

  // Appends an empty op at the end, its id, block and place set, for a loader to fill. Ops a
  // loader appends so keep the block's positions known.
  Op& appendOp();

  // Op positions, cached per block: the first query after a change (insertOp / eraseOp / moveOp)
  // numbers the block again; later queries are O(1). The numbering is repaired, not redone: the
  // ops numbered before and still in place are read from the last numbering's array, and only
  // the stretches between them that hold inserted or moved ops are walked in the list (a list
  // walk waits on each node; the array's loads overlap). Passes must use these instead of
  // building their own position tables.
  size_t indexOf(const Op* op) const;                 // index of `op` in this block's op list
  bool isBefore(const Op* a, const Op* b) const;      // both ops of this block: a runs before b
  size_t opPosition(const Op* op) const { return indexOf(op); }  // same as indexOf (older name)
  void invalidatePositions() { positions_dirty_ = renumber_all_ = true; }  // after editing `ops` directly
  // The ops in block order, from the same cache (OpRange says when to walk `ops` instead).
  OpRange<Op> inOrder() {
    knowPositions();
    return OpRange<Op>(order_);
  }
  OpRange<const Op> inOrder() const {
    knowPositions();
    return OpRange<const Op>(order_);
  }

 private:
  static constexpr uint32_t kUnnumbered = UINT32_MAX;  // an op inserted or moved since the numbering
  void knowPositions() const {
    if (positions_dirty_ || positions_size_ != ops.size()) renumber();
  }
  void renumber() const;
  // `op` leaves the last numbering (erased or moved): its slot in order_ is cleared.
  void unnumber(Op* op);
  // The last numbering: [index] the op there; null where an op erased or moved since was.
  mutable std::vector<Op*> order_;
  mutable bool positions_dirty_ = false;  // an empty block is numbered
  mutable bool renumber_all_ = false;     // the list was edited directly: walk it all
  mutable size_t positions_size_ = 0;     // ops.size() when last numbered
  // Ops inserted less ops erased since, through insertOp and eraseOp: a size that differs from
  // positions_size_ + this was edited directly (a loader's appends), and is walked all.
  mutable int64_t size_change_ = 0;
  // Open addressing: name lookups are the loader's hottest path on million-var jobs.
  absl::flat_hash_map<std::string_view, Var*> by_name_;
  friend struct Program;
};

struct Program {
  int64_t rank = 0;
  std::vector<std::string_view> fetch;
  std::vector<std::unique_ptr<Block>> blocks;
  Fields fields;

  Job* job = nullptr;
  size_t position = 0;  // index in job->programs
  Dialect dialect = Dialect::Legacy;  // set by the loaders (ops/op_def.h inferDialect)
  uint32_t next_op_id = 0;
  uint32_t next_var_id = 0;

  Block* block(int64_t idx) const;  // by "idx"
  bool fetches(std::string_view name) const;
};

// What a pass changed, recorded by the edit functions of this file and ir/op_role.h while attached
// to the job (Job::journal): the verifier after a pass checks only what is recorded here and the
// job-wide rules it bears on (verify/verifier.h). A pass may be verified this way only when all its
// edits go through those functions (PassInfo::journaled); a direct write to an existing op's attrs
// or a var's shape is not recorded.
struct EditJournal {
  std::vector<Op*> ops;    // inserted, or args or attributes edited (repeats allowed)
  // Only their execution attributes set (stream, events, priorities: op_role.h): the verifier
  // checks those attributes' kinds again; no other rule of theirs, and no ring's issue order or
  // pairing, can differ for them.
  std::vector<Op*> execution;
  std::vector<Op*> moved;  // moved within their block: their rings' issue orders may differ
  absl::flat_hash_set<const Op*> erased;  // erased since; an address a later insert reuses leaves it
  std::vector<int64_t> erased_rings;      // the ring_id of each erased op that had one
  std::vector<Var*> vars;                 // added, removed or renamed
  // Appends what `later` recorded after this journal's records (one program's edits made on
  // another thread, merged in program order): as if its edits had been recorded here.
  void append(EditJournal&& later);
};
// Records `op` in its job's journal, if one is attached.
void journalOp(Op& op);
// Records that only `op`'s execution attributes changed (EditJournal::execution).
void journalExecutionAttrs(Op& op);

struct ProcessGroup {
  int64_t ring_id = 0;
  std::vector<int64_t> ranks;
  Fields fields;
  // The rank's position in `ranks` (its chunk index in a reduce-scatter), or -1.
  int positionOf(int64_t rank) const;
};

struct Job {
  std::string path;  // as named by the user, for messages
  std::string_view format;  // raw JSON string
  int64_t version = 1;
  int64_t world_size = 1;
  std::vector<ProcessGroup> groups;
  std::vector<std::unique_ptr<Program>> programs;
  Fields fields;

  EditJournal* journal = nullptr;  // attached by the pass manager while a journaled pass runs

  Arena arena;
  std::deque<Arena> load_arenas;  // one per loader thread, so that loading takes no lock
  std::deque<Arena> edit_arenas;  // ThreadEdits' arenas, kept for the job's life
  // Where an edit stores new text (names, attribute values): `arena`, or the calling thread's own
  // while a ThreadEdits for this job is alive on it.
  Arena& editArena();
  // Interned key layouts of entities that hold known keys only (see Fields).
  const std::vector<Field>* internLayout(const std::vector<Field>& fields);

  const ProcessGroup* group(int64_t ring_id) const;
  Program* program(int64_t rank) const;
  void rebuildIndices();  // after loading or bulk edits: group and program lookups

 private:
  std::unordered_map<int64_t, size_t> group_by_ring_, program_by_rank_;
  std::unordered_map<std::string, std::unique_ptr<std::vector<Field>>> layouts_;
  const std::vector<Field>* last_layout_ = nullptr;
};

// While alive, the calling thread's edits of `job` store their text in an arena of their own (one
// of job.edit_arenas) and record into `journal` (when the job has one attached; else nowhere),
// not into the job's arena and journal, which every thread shares: a pass that edits programs in
// parallel (one program per thread at a time) gives each program its own journal and appends
// them to the job's in program order after (EditJournal::append), so the records read as a serial
// run's. Made on the thread that edits; one at a time per thread.
class ThreadEdits {
 public:
  ThreadEdits(Job& job, Arena& arena, EditJournal* journal);
  ~ThreadEdits();
  ThreadEdits(const ThreadEdits&) = delete;
  ThreadEdits& operator=(const ThreadEdits&) = delete;
};

// Redirects every read of `from` to `to`, keeping def-use current. Returns the args changed.
size_t replaceAllUses(Var* from, Var* to);
// Points input arg `i` of `slot` at `to`, keeping def-use current.
void setInputArg(Op& op, std::string_view slot, size_t i, Var* to);
// Points output arg `i` of `slot` at `to`, keeping def-use current.
void setOutputArg(Op& op, std::string_view slot, size_t i, Var* to);

// Ops whose def-use registration should not be done by hand: helper for building ops.
Op makeOp(Job& job, std::string_view type);
void addInput(Op& op, Job& job, std::string_view slot, std::vector<std::string_view> names);
void addOutput(Op& op, Job& job, std::string_view slot, std::vector<std::string_view> names);

}  // namespace spopt
