// The rewrite of decompose-collective-matmul (collective_matmul_match.h): rings of send/recv.
#include <algorithm>
#include <string>

#include "ops/op_builder.h"
#include "ops/op_view.h"
#include "passes/collective_matmul_match.h"
#include "passes/matmul_grad_split.h"
#include "passes/row_blocks.h"

namespace spopt {
namespace {

// The plain matmul of a site: the op, or the dX GEMM of a matmul_v2_grad (split here).
Op* plainMatmul(const SiteMatmul& mm) {
  if (!mm.grad) return mm.op;
  return splitMatmulGrad(*mm.op->block->program->job, *mm.op).dx;
}

// A copy of matmul `mm` reading `x` and writing a fresh row block of its output, before `before`.
Var* rowBlockProduct(OpBuilder& b, Op& mm, Var* x, int64_t parts, Op& before, const std::string& suffix) {
  OpView v(mm);
  Var* out = v.out("Out");
  std::vector<int64_t> shape = out->shape;
  shape[0] /= parts;
  Var* block = b.freshVar(std::string(out->name) + suffix, shape, out->dtype, out);
  NewOp n = b.clone(mm);
  std::string_view x_slot = v.inSlot("X"), out_slot = v.outSlot("Out");
  for (Slot& s : n.op().inputs)
    if (s.name == x_slot) s.args = {Arg{x->name, x}};
  for (Slot& s : n.op().outputs)
    if (s.name == out_slot) s.args = {Arg{block->name, block}};
  n.insertBefore(before);
  return block;
}

struct RingSite {
  const CollectiveMatmulMatch& m;
  int64_t p;  // this rank's ring position
  const std::string& stream;
  int64_t n;     // pieces per shard
  int64_t a, b;  // steps of the main chain and of the other way's (0: one way)
  int64_t at(int64_t k) const { return ((p + k) % m.ranks + m.ranks) % m.ranks; }
  // Names of chunk c's piece j: the chunk's own name when it is in one piece.
  std::string tag(int64_t c, int64_t j) const { return std::to_string(c) + (n > 1 ? "." + std::to_string(j) : ""); }
  Var* piece(OpBuilder& b, const std::string& name, const Var* like) const {
    std::vector<int64_t> shape = like->shape;
    shape[0] /= n;
    return b.freshVar(name, shape, like->dtype, like);
  }
};

struct Transfer {
  Var* var;
  int64_t peer;  // ring position
};

// One step's exchange on the comm stream: the sends, then the receives, adjacent so that they
// form one group (analysis/p2p.h): every member sends before it receives, and ungrouped that would
// wait forever.
void exchange(OpBuilder& b, const RingSite& r, const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs, Op& before) {
  auto put = [&](NewOp n) {
    n.copyAttrs(*r.m.collective, {"op_role", "op_namescope"});
    if (r.m.collective->hasDistAttr()) n.copyDistAttr(r.m.collective->dist_attr);
    n.stream(r.stream);
    n.insertBefore(before);
  };
  for (const Transfer& s : sends) put(b.send({r.m.coll.ring_id, s.peer}, s.var));
  for (const Transfer& v : recvs) put(b.recv({r.m.coll.ring_id, v.peer}, v.var));
}

// All-gather form, each shard in n pieces (the own shard split, when n > 1). Step s = 0..a
// multiplies chunk p - s (the main chain, from the previous member) and, for 1 <= s <= b, chunk
// p + s (the other way's, from the next), piece by piece; exchange (s+1, j) sends piece j of what
// step s multiplies on (the own shard both ways at s = 0) and receives piece j of step s+1's
// chunks. So every member runs the same a x n exchanges in the same order, and its i-th send to
// a neighbour pairs with that neighbour's i-th receive from it. Exchange (s+1, j) goes right before
// GEMM (s, j) of the first matmul (an op between two exchanges keeps them two groups: a group's
// send may not read its own receive); the other matmuls' piece GEMMs go where they were, in the same
// order. Each matmul's row blocks are concatenated in (chunk, piece) order: the whole GEMM's rows.
void rewriteAllGather(const RingSite& r) {
  const CollectiveMatmulMatch& m = r.m;
  Op& ag = *m.collective;
  OpBuilder b(*ag.block);
  const size_t n = size_t(r.n);
  std::vector<Var*> pieces(size_t(m.ranks) * n, nullptr);  // chunk c's piece j at c x n + j
  std::vector<Op*> mms;
  for (const SiteMatmul& site : m.matmuls) mms.push_back(plainMatmul(site));
  std::stable_sort(mms.begin(), mms.end(), [&](Op* x, Op* y) { return ag.block->isBefore(x, y); });
  std::vector<Var*> own = r.n == 1 ? std::vector<Var*>{m.shard} : splitRows(b, m.shard, r.n, *mms.front(), *mms.front());
  std::copy(own.begin(), own.end(), pieces.begin() + std::ptrdiff_t(size_t(r.p) * n));
  auto chunksAt = [&](int64_t s) {  // the chunks step s multiplies, main chain first
    std::vector<int64_t> c{r.at(-s)};
    if (s >= 1 && s <= r.b) c.push_back(r.at(s));
    return c;
  };
  for (Op* mm : mms) {
    std::vector<Var*> blocks(pieces.size(), nullptr);
    for (int64_t s = 0; s <= r.a; ++s)
      for (size_t j = 0; j < n; ++j) {
        if (mm == mms.front() && s < r.a) {
          std::vector<Transfer> sends{{pieces[size_t(r.at(-s)) * n + j], r.at(1)}}, recvs;
          if (s + 1 <= r.b) sends.push_back({pieces[size_t(r.at(s)) * n + j], r.at(-1)});
          for (int64_t next : chunksAt(s + 1)) {
            Var*& in = pieces[size_t(next) * n + j];
            in = r.piece(b, std::string(m.whole->name) + ".chunk" + r.tag(next, int64_t(j)), m.shard);
            recvs.push_back({in, next == r.at(-s - 1) ? r.at(-1) : r.at(1)});
          }
          exchange(b, r, sends, recvs, *mm);
        }
        for (int64_t c : chunksAt(s)) {
          size_t i = size_t(c) * n + j;
          blocks[i] = rowBlockProduct(b, *mm, pieces[i], int64_t(pieces.size()), *mm, ".rows" + r.tag(c, int64_t(j)));
        }
      }
    concatRows(b, blocks, OpView(*mm).out("Out"), *mm, *mm);
    b.block().eraseOp(mm);
  }
  if (!m.whole->readers.empty()) {  // another op reads G: rebuilt from the pieces before the first of them
    Op* reader = nullptr;
    for (Op* o : m.whole->readers)
      if (o->block == ag.block && (!reader || ag.block->isBefore(o, reader))) reader = o;
    concatRows(b, pieces, m.whole, *reader, ag);
  }
  b.block().eraseOp(&ag);
  if (m.whole->readers.empty() && !m.whole_read_elsewhere) b.block().removeVar(m.whole);  // nothing reads G any more
}

// acc = a + b, before `before`.
void add(OpBuilder& b, Var* x, Var* y, Var* out, const Op& like, Op& before) {
  NewOp n = b.create(opDef("add"));
  n.input("X", {x}).input("Y", {y}).output("Out", {out});
  if (b.dialect() != Dialect::Pir) n.attrInt("axis", -1);
  n.copyAttrs(like, {"op_role", "op_namescope"});
  n.insertBefore(before);
}

// What both reduce-scatter forms share: the matmul's rows cut into a piece per (chunk, j), the
// partial product of one piece, and the end: O joined from its pieces, the site's ops erased.
struct ReduceScatterSite {
  const RingSite& r;
  const CollectiveMatmulMatch& m = r.m;
  Op* mm = plainMatmul(m.matmuls.front());
  OpBuilder b{*mm->block};
  size_t n = size_t(r.n);
  std::string whole{m.whole->name};
  std::vector<Var*> rows = splitRows(b, OpView(*mm).in("X"), m.ranks * r.n, *mm, *mm);

  Var* partial(int64_t c, size_t j) {
    return rowBlockProduct(b, *mm, rows[size_t(c) * n + j], int64_t(rows.size()), *mm, ".part" + r.tag(c, int64_t(j)));
  }
  void finish(const std::vector<Var*>& sums) {
    if (n > 1) concatRows(b, sums, m.shard, *mm, *mm);
    b.block().eraseOp(m.collective);
    b.block().eraseOp(mm);
    b.block().removeVar(m.whole);
  }
  void ring();    // round the ring, sums passed on
  void direct();  // each partial straight to its owner
};

// Reduce-scatter form, each chunk in n pieces. Step k = 0..a-1 computes the partial products of
// the main chain's chunk p - a + k piece by piece, each plus the sum received from the next member
// (who summed that chunk one step earlier) and sent to the previous one, and from step a - b on the
// same for the other way's chunk p + a - k, received from the previous member and sent to the next;
// last, the own chunk's partials plus what each chain brought are O (joined, when n > 1). The same
// a x n exchanges in the same order on every member, as in the all-gather form. Each chunk's sum
// is taken in another order than the reduce-scatter's, so equal within check's tolerance, not
// bitwise.
void ReduceScatterSite::ring() {
  std::vector<Var*> main_in(n, nullptr), other_in(n, nullptr), sums(n, nullptr);
  // `part` plus `received` (none: the partial alone) into `out` (none: a fresh piece named for chunk c).
  auto sum = [&](Var* part, Var* received, Var* out, const std::string& acc_name, int64_t c, size_t j) {
    if (!received) return part;
    Var* acc = out ? out : r.piece(b, whole + acc_name + r.tag(c, int64_t(j)), m.shard);
    add(b, part, received, acc, *mm, *mm);
    return acc;
  };
  // A step's partials first, then its adds: only the adds wait for the exchange before.
  for (int64_t k = 0; k < r.a; ++k)
    for (size_t j = 0; j < n; ++j) {
      const bool other = k >= r.a - r.b;
      const int64_t c = r.at(k - r.a), c2 = r.at(r.a - k);
      Var* part = partial(c, j);
      Var* part2 = other ? partial(c2, j) : nullptr;
      std::vector<Transfer> sends{{sum(part, main_in[j], nullptr, ".acc", c, j), r.at(-1)}}, recvs;
      main_in[j] = r.piece(b, whole + ".recv" + r.tag(r.at(k + 1 - r.a), int64_t(j)), m.shard);
      recvs.push_back({main_in[j], r.at(1)});
      if (other) {
        sends.push_back({sum(part2, other_in[j], nullptr, ".accb", c2, j), r.at(1)});
        other_in[j] = r.piece(b, whole + ".recvb" + r.tag(r.at(r.a - k - 1), int64_t(j)), m.shard);
        recvs.push_back({other_in[j], r.at(-1)});
      }
      exchange(b, r, sends, recvs, *mm);
    }
  for (size_t j = 0; j < n; ++j) {
    Var* own = n == 1 && r.b == 0 ? m.shard : nullptr;
    sums[j] = sum(partial(r.p, j), main_in[j], own, ".acc", r.p, j);
    if (r.b > 0) sums[j] = sum(sums[j], other_in[j], n == 1 ? m.shard : nullptr, ".accb", r.p, j);
  }
  finish(sums);
}

// Reduce-scatter form, direct (every member reaches every other over its own switch port, as
// on NVSwitch): exchange (k, j), k = 1..a, sends piece j of this rank's partial of chunk p - k to
// member p - k (and, for k <= b, of chunk p + k to p + k) and receives members p + k's (and
// p - k's) partial of its own chunk. Nothing is summed on the way, so no exchange waits for an
// add: the pieces received at step k are summed after step k+1's partials. O is the partials
// received, in step order, plus the own partial last (joined, when n > 1): within check's
// tolerance, as the ring.
void ReduceScatterSite::direct() {
  std::vector<Var*> acc(n, nullptr);
  std::vector<std::vector<std::pair<Var*, int64_t>>> pending(n);  // received, not yet summed: (piece, sender)
  auto fold = [&](size_t j, Var* x, int64_t from, Var* out) {
    if (!acc[j]) return void(acc[j] = x);
    Var* sum = out ? out : r.piece(b, whole + ".acc" + r.tag(from, int64_t(j)), m.shard);
    add(b, acc[j], x, sum, *mm, *mm);
    acc[j] = sum;
  };
  for (int64_t k = 1; k <= r.a; ++k)
    for (size_t j = 0; j < n; ++j) {
      std::vector<int64_t> peers{r.at(-k)};
      if (k <= r.b) peers.push_back(r.at(k));
      std::vector<Transfer> sends, recvs;
      for (int64_t d : peers) sends.push_back({partial(d, j), d});
      for (auto [x, from] : pending[j]) fold(j, x, from, nullptr);
      pending[j].clear();
      for (int64_t d : peers) {
        int64_t from = d == r.at(-k) ? r.at(k) : r.at(-k);
        recvs.push_back({r.piece(b, whole + ".from" + r.tag(from, int64_t(j)), m.shard), from});
        pending[j].emplace_back(recvs.back().var, from);
      }
      exchange(b, r, sends, recvs, *mm);
    }
  std::vector<Var*> sums(n, nullptr);
  for (size_t j = 0; j < n; ++j) {
    Var* own = partial(r.p, j);
    for (auto [x, from] : pending[j]) fold(j, x, from, nullptr);
    fold(j, own, r.p, n == 1 ? m.shard : nullptr);
    sums[j] = acc[j];
  }
  finish(sums);
}

}  // namespace

void rewriteCollectiveMatmul(const CollectiveMatmulMatch& m, int64_t position, const std::string& comm_stream, RingShape shape) {
  RingSite r{m, position, comm_stream, shape.chunks, shape.mainSteps(m.ranks), shape.secondSteps(m.ranks)};
  if (m.form == CollectiveMatmulForm::AllGather) rewriteAllGather(r);
  else if (shape.direct) ReduceScatterSite{r}.direct();
  else ReduceScatterSite{r}.ring();
}

}  // namespace spopt
