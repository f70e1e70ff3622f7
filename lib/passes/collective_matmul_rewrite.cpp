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
  int64_t n;  // pieces per shard
  int64_t at(int64_t k) const { return ((p + k) % m.ranks + m.ranks) % m.ranks; }
  // Names of chunk c's piece j: the chunk's own name when it is in one piece.
  std::string tag(int64_t c, int64_t j) const { return std::to_string(c) + (n > 1 ? "." + std::to_string(j) : ""); }
  Var* piece(OpBuilder& b, const std::string& name, const Var* like) const {
    std::vector<int64_t> shape = like->shape;
    shape[0] /= n;
    return b.freshVar(name, shape, like->dtype, like);
  }
};

// One ring step's exchange on the comm stream: `out` sent to ring position `to` while `in` is
// received from `from`, adjacent so that they form one group (analysis/p2p.h): every member sends
// before it receives, and ungrouped that would wait forever.
void exchange(OpBuilder& b, const RingSite& r, Var* out, int64_t to, Var* in, int64_t from, Op& before) {
  for (int pass = 0; pass < 2; ++pass) {
    NewOp n = pass == 0 ? b.send({r.m.coll.ring_id, to}, out) : b.recv({r.m.coll.ring_id, from}, in);
    n.copyAttrs(*r.m.collective, {"op_role", "op_namescope"});
    if (r.m.collective->hasDistAttr()) n.copyDistAttr(r.m.collective->dist_attr);
    n.stream(r.stream);
    n.insertBefore(before);
  }
}

// All-gather form, each shard in n pieces (the own shard split, when n > 1). Step k multiplies
// chunk (p - k), its own shard at step 0, piece by piece: exchange (k, j) sends piece j of that
// chunk on to the next member and receives piece j of chunk (p - k - 1) from the previous one;
// the last step only multiplies. So every member runs the same (t-1) x n exchanges in the same
// order, and its i-th send to p+1 pairs with p+1's i-th receive from p. Exchange (k, j) goes
// right before GEMM (k, j) of the first matmul (an op between two exchanges keeps them two groups:
// a group's send may not read its own receive); the other matmuls' piece GEMMs go where they were,
// in the same order. Each matmul's row blocks are concatenated in (chunk, piece) order: the whole
// GEMM's rows.
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
  for (Op* mm : mms) {
    std::vector<Var*> blocks(pieces.size(), nullptr);
    for (int64_t k = 0; k < m.ranks; ++k)
      for (size_t j = 0; j < n; ++j) {
        size_t c = size_t(r.at(-k)) * n + j;
        if (mm == mms.front() && k + 1 < m.ranks) {
          int64_t next = r.at(-k - 1);
          Var*& in = pieces[size_t(next) * n + j];
          in = r.piece(b, std::string(m.whole->name) + ".chunk" + r.tag(next, int64_t(j)), m.shard);
          exchange(b, r, pieces[c], r.at(1), in, r.at(-1), *mm);
        }
        blocks[c] = rowBlockProduct(b, *mm, pieces[c], int64_t(pieces.size()), *mm, ".rows" + r.tag(r.at(-k), int64_t(j)));
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
}

// acc = a + b, before `before`.
void add(OpBuilder& b, Var* x, Var* y, Var* out, const Op& like, Op& before) {
  NewOp n = b.create(opDef("add"));
  n.input("X", {x}).input("Y", {y}).output("Out", {out});
  if (b.dialect() != Dialect::Pir) n.attrInt("axis", -1);
  n.copyAttrs(like, {"op_role", "op_namescope"});
  n.insertBefore(before);
}

// Reduce-scatter form, each chunk in n pieces. Step k computes chunk (p + k + 1)'s partial
// products piece by piece: piece j plus accumulator piece j received from the next member (who
// summed that chunk one step earlier), the sum sent to the previous one by exchange (k, j); at the
// last step the chunk is this rank's own and its sums are O (joined, when n > 1). The same
// (t-1) x n exchanges in the same order on every member, as in the all-gather form. Each chunk's
// sum is taken in ring order starting after its owner: another order than the reduce-scatter's,
// so equal within check's tolerance, not bitwise.
void rewriteReduceScatter(const RingSite& r) {
  const CollectiveMatmulMatch& m = r.m;
  Op& rs = *m.collective;
  Op* mm = plainMatmul(m.matmuls.front());
  OpBuilder b(*mm->block);
  const size_t n = size_t(r.n);
  std::vector<Var*> rows = splitRows(b, OpView(*mm).in("X"), m.ranks * r.n, *mm, *mm);
  std::vector<Var*> received(n, nullptr), sums(n, nullptr);
  for (int64_t k = 0; k < m.ranks; ++k)
    for (size_t j = 0; j < n; ++j) {
      int64_t c = r.at(k + 1);
      const std::string tag = r.tag(c, int64_t(j));
      Var* part = rowBlockProduct(b, *mm, rows[size_t(c) * n + j], int64_t(rows.size()), *mm, ".part" + tag);
      bool last = k + 1 == m.ranks;
      Var* acc = part;
      if (received[j]) {
        acc = last && n == 1 ? m.shard : r.piece(b, std::string(m.whole->name) + ".acc" + tag, m.shard);
        add(b, part, received[j], acc, *mm, *mm);
      }
      if (last) {
        sums[j] = acc;
        continue;
      }
      received[j] = r.piece(b, std::string(m.whole->name) + ".recv" + r.tag(r.at(k + 2), int64_t(j)), m.shard);
      exchange(b, r, acc, r.at(-1), received[j], r.at(1), *mm);
    }
  if (n > 1) concatRows(b, sums, m.shard, *mm, *mm);
  b.block().eraseOp(&rs);
  b.block().eraseOp(mm);
  b.block().removeVar(m.whole);
}

}  // namespace

void rewriteCollectiveMatmul(const CollectiveMatmulMatch& m, int64_t position, const std::string& comm_stream, int64_t chunks) {
  RingSite r{m, position, comm_stream, chunks};
  if (m.form == CollectiveMatmulForm::AllGather) rewriteAllGather(r);
  else rewriteReduceScatter(r);
}

}  // namespace spopt
