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
  int64_t at(int64_t k) const { return ((p + k) % m.ranks + m.ranks) % m.ranks; }
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

// All-gather form. Step k multiplies chunk (p - k) — its own shard at step 0 — while that chunk
// goes on to the next member and chunk (p - k - 1) arrives from the previous one; the last step
// only multiplies. Step k's exchange goes right before step k's GEMMs of the first matmul (an op
// between two exchanges keeps them two groups: a group's send may not read its own receive); the
// other matmuls' chunk GEMMs go where they were, in step order. Each matmul's row blocks are
// concatenated in chunk order: the whole GEMM's rows.
void rewriteAllGather(const RingSite& r) {
  const CollectiveMatmulMatch& m = r.m;
  Op& ag = *m.collective;
  OpBuilder b(*ag.block);
  std::vector<Var*> chunks(size_t(m.ranks), nullptr);
  chunks[size_t(r.p)] = m.shard;
  std::vector<Op*> mms;
  for (const SiteMatmul& site : m.matmuls) mms.push_back(plainMatmul(site));
  std::stable_sort(mms.begin(), mms.end(), [&](Op* x, Op* y) { return ag.block->isBefore(x, y); });
  for (Op* mm : mms) {
    std::vector<Var*> blocks(size_t(m.ranks), nullptr);
    for (int64_t k = 0; k < m.ranks; ++k) {
      int64_t c = r.at(-k);
      if (mm == mms.front() && k + 1 < m.ranks) {
        int64_t next = r.at(-k - 1);
        chunks[size_t(next)] = b.freshVar(std::string(m.whole->name) + ".chunk" + std::to_string(next), m.shard->shape,
                                          m.shard->dtype, m.shard);
        exchange(b, r, chunks[size_t(c)], r.at(1), chunks[size_t(next)], r.at(-1), *mm);
      }
      blocks[size_t(c)] = rowBlockProduct(b, *mm, chunks[size_t(c)], m.ranks, *mm, ".rows" + std::to_string(c));
    }
    concatRows(b, blocks, OpView(*mm).out("Out"), *mm, *mm);
    b.block().eraseOp(mm);
  }
  if (!m.whole->readers.empty()) {  // another op reads G: rebuilt from the chunks before the first of them
    Op* reader = nullptr;
    for (Op* o : m.whole->readers)
      if (o->block == ag.block && (!reader || ag.block->isBefore(o, reader))) reader = o;
    concatRows(b, chunks, m.whole, *reader, ag);
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

// Reduce-scatter form. Step k computes the partial product of chunk (p + k + 1), adds the
// accumulator received from the next member (who summed that chunk one step earlier) and sends
// the sum to the previous one; at the last step the chunk is this rank's own and the sum is O.
// Each chunk's sum is taken in ring order starting after its owner: another order than the
// reduce-scatter's, so equal within check's tolerance, not bitwise.
void rewriteReduceScatter(const RingSite& r) {
  const CollectiveMatmulMatch& m = r.m;
  Op& rs = *m.collective;
  Op* mm = plainMatmul(m.matmuls.front());
  OpBuilder b(*mm->block);
  std::vector<Var*> rows = splitRows(b, OpView(*mm).in("X"), m.ranks, *mm, *mm);
  Var* received = nullptr;
  for (int64_t k = 0; k < m.ranks; ++k) {
    int64_t c = r.at(k + 1);
    const std::string tag = std::to_string(c);
    Var* part = rowBlockProduct(b, *mm, rows[size_t(c)], m.ranks, *mm, ".part" + tag);
    bool last = k + 1 == m.ranks;
    Var* acc = part;
    if (received) {
      acc = last ? m.shard : b.freshVar(std::string(m.whole->name) + ".acc" + tag, m.shard->shape, m.shard->dtype, m.shard);
      add(b, part, received, acc, *mm, *mm);
    }
    if (last) break;
    received = b.freshVar(std::string(m.whole->name) + ".recv" + std::to_string(r.at(k + 2)), m.shard->shape, m.shard->dtype,
                          m.shard);
    exchange(b, r, acc, r.at(-1), received, r.at(1), *mm);
  }
  b.block().eraseOp(&rs);
  b.block().eraseOp(mm);
  b.block().removeVar(m.whole);
}

}  // namespace

void rewriteCollectiveMatmul(const CollectiveMatmulMatch& m, int64_t position, const std::string& comm_stream) {
  RingSite r{m, position, comm_stream};
  if (m.form == CollectiveMatmulForm::AllGather) rewriteAllGather(r);
  else rewriteReduceScatter(r);
}

}  // namespace spopt
