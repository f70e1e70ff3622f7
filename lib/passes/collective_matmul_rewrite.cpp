// The rewrite of decompose-collective-matmul (collective_matmul_match.h).
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

// A transfer of chunk j (a broadcast from, or a reduce onto, ring position j) on the comm stream.
Op* transfer(OpBuilder& b, const CollectiveMatmulMatch& m, CollectiveKind kind, int64_t j, Var* in, Var* out, Op& before,
             const std::string& comm_stream) {
  NewOp n = b.collective({kind, m.coll.ring_id, m.ranks, ReduceOp::Sum, j}, in, out);
  n.copyAttrs(*m.collective, {"use_calc_stream", "op_role", "op_namescope"});
  if (m.collective->hasDistAttr()) n.copyDistAttr(m.collective->dist_attr);
  n.stream(comm_stream);
  return n.insertBefore(before);
}

void rewriteAllGather(const CollectiveMatmulMatch& m, int64_t p, const std::string& comm_stream) {
  Op& ag = *m.collective;
  OpBuilder b(*ag.block);
  std::vector<Var*> chunks;
  for (int64_t j = 0; j < m.ranks; ++j) {
    Var* chunk = j == p ? m.shard : b.freshVar(std::string(m.whole->name) + ".chunk" + std::to_string(j), m.shard->shape, m.shard->dtype, m.shard);
    // The owner broadcasts its shard into a scratch copy; its own GEMM reads the shard itself.
    Var* out = j == p ? b.freshVar(std::string(m.whole->name) + ".sent", m.shard->shape, m.shard->dtype, m.shard) : chunk;
    transfer(b, m, CollectiveKind::Broadcast, j, m.shard, out, ag, comm_stream);
    chunks.push_back(chunk);
  }
  for (const SiteMatmul& site : m.matmuls) {
    Op* mm = plainMatmul(site);
    std::vector<Var*> blocks(size_t(m.ranks), nullptr);
    // Its own chunk first (no wait), then the others in the order their broadcasts arrive.
    blocks[size_t(p)] = rowBlockProduct(b, *mm, chunks[size_t(p)], m.ranks, *mm, ".rows" + std::to_string(p));
    for (int64_t j = 0; j < m.ranks; ++j)
      if (j != p) blocks[size_t(j)] = rowBlockProduct(b, *mm, chunks[size_t(j)], m.ranks, *mm, ".rows" + std::to_string(j));
    concatRows(b, blocks, OpView(*mm).out("Out"), *mm, *mm);
    b.block().eraseOp(mm);
  }
  if (!m.whole->readers.empty()) {  // another op reads G: rebuilt from the chunks before the first of them
    Op* first = nullptr;
    for (Op* r : m.whole->readers)
      if (r->block == ag.block && (!first || ag.block->isBefore(r, first))) first = r;
    concatRows(b, chunks, m.whole, *first, ag);
  }
  b.block().eraseOp(&ag);
}

void rewriteReduceScatter(const CollectiveMatmulMatch& m, int64_t p, const std::string& comm_stream) {
  Op& rs = *m.collective;
  Op* mm = plainMatmul(m.matmuls.front());
  OpBuilder b(*mm->block);
  std::vector<Var*> rows = splitRows(b, OpView(*mm).in("X"), m.ranks, *mm, *mm);
  for (int64_t j = 0; j < m.ranks; ++j) {  // destinations in ring order, the same on every member
    Var* part = rowBlockProduct(b, *mm, rows[size_t(j)], m.ranks, *mm, ".part" + std::to_string(j));
    // The reduce writes the sum on its root only; elsewhere its output is scratch.
    Var* out = j == p ? m.shard : b.freshVar(std::string(m.whole->name) + ".sum" + std::to_string(j), m.shard->shape, m.shard->dtype, m.shard);
    transfer(b, m, CollectiveKind::Reduce, j, part, out, *mm, comm_stream);
  }
  b.block().eraseOp(&rs);
  b.block().eraseOp(mm);
  b.block().removeVar(m.whole);
}

}  // namespace

void rewriteCollectiveMatmul(const CollectiveMatmulMatch& m, int64_t position, const std::string& comm_stream) {
  if (m.form == CollectiveMatmulForm::AllGather) rewriteAllGather(m, position, comm_stream);
  else rewriteReduceScatter(m, position, comm_stream);
}

}  // namespace spopt
