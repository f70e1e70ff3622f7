// See matmul_grad_split.h. Also registers the split on its own as pass `split-matmul-grad` (for
// bisecting: overlap-collectives splits the grads it schedules itself).
#include "passes/matmul_grad_split.h"

#include "support/checked_size.h"
#include "ops/op_builder.h"
#include "ops/op_view.h"
#include "passes/builtin_passes.h"

namespace spopt {
namespace {

// Known, and both its size and the product of its leading dims fit int64 (checked_size.h).
bool knownShape(const Var* v) {
  return v && !v->shape.empty() && v->byteSize() &&
         checkedNumel(std::span<const int64_t>(v->shape.data(), v->shape.size() - 1));
}

// `v` viewed as 2-D [prod(leading dims), last dim]: `v` itself when already 2-D, else a reshape2
// inserted before `before`.
Var* flatten2d(OpBuilder& b, Var* v, Op& before, const Op& like) {
  if (v->shape.size() == 2) return v;
  int64_t rows = checkedNumel(std::span<const int64_t>(v->shape.data(), v->shape.size() - 1)).value();  // knownShape
  std::vector<int64_t> flat{rows, v->shape.back()};
  Var* out = b.freshVar(std::string(v->name) + ".flat", flat, v->dtype);
  std::vector<int64_t> xshape{0};
  xshape.insert(xshape.end(), v->shape.begin(), v->shape.end());
  Var* xs = b.freshVar(std::string(v->name) + ".flat_xshape", xshape, v->dtype);
  b.create(opDef("reshape")).input("X", {v}).output("Out", {out}).output("XShape", {xs}).attrInts("shape", flat)
      .copyAttrs(like, {"op_role", "op_namescope"}).insertBefore(before);
  return out;
}

}  // namespace

std::string_view matmulGradSplitRefusal(const Op& original) {
  static const OpDef& matmul_grad = opDef("matmul_grad");
  if (!isA(original, matmul_grad)) return "not a matmul gradient";  // before the view: most ops are asked
  OpView op(original);
  if (op.attrs.getBool("trans_x").value_or(false)) return "trans_x is set (only X op(Y) is split)";
  Var* x = op.in("X");
  Var* y = op.in("Y");
  Var* g = op.in("Out@GRAD");
  if (!knownShape(x) || !knownShape(y) || !knownShape(g)) return "an operand has an unknown shape";
  if (y->shape.size() != 2) return "Y is not 2-D (a batched weight)";
  if (x->shape.size() < 2 || g->shape.size() != x->shape.size()) return "X and Out@GRAD do not have matching ranks";
  if (!op.out("X@GRAD") || !op.out("Y@GRAD")) return "it computes only one gradient";
  if (op.inputCount("X") != 1 || op.inputCount("Y") != 1 || op.inputCount("Out@GRAD") != 1) return "a slot holds several vars";
  return "";
}

MatmulGradSplit splitMatmulGrad(Job& job, Op& op) {
  (void)job;
  OpBuilder b(*op.block);
  OpView view(op);
  Var* x = view.in("X");
  Var* y = view.in("Y");
  Var* g = view.in("Out@GRAD");
  Var* dx = view.out("X@GRAD");
  Var* dy = view.out("Y@GRAD");
  bool ty = view.attrs.getBool("trans_y").value_or(false);
  auto gemm = [&](Var* a, Var* bb, bool ta, bool tb, Var* out) {
    NewOp n = b.create(opDef("matmul"));
    n.input("X", {a}).input("Y", {bb}).output("Out", {out}).attrBool("trans_x", ta).attrBool("trans_y", tb);
    n.copyAttrs(op, {"op_role", "op_namescope"});
    if (op.hasDistAttr()) n.copyDistAttr(op.dist_attr, {"process_mesh", "chunk_id", "execution_stream"});
    return n.insertBefore(op);
  };
  MatmulGradSplit r;
  r.dx = gemm(g, y, false, !ty, dx);
  Var* xf = flatten2d(b, x, op, op);
  Var* gf = flatten2d(b, g, op, op);
  r.dw = ty ? gemm(gf, xf, true, false, dy) : gemm(xf, gf, true, false, dy);
  op.block->eraseOp(&op);
  return r;
}

namespace {

class SplitMatmulGrad final : public Pass {
 public:
  bool run(Job& job, PassContext& ctx) override {
    bool changed = false;
    for (auto& p : job.programs)
      for (auto& blk : p->blocks) {
        std::vector<std::pair<Op*, size_t>> todo;
        const OpDef& matmul_grad = opDef("matmul_grad");
        for (Op& op : blk->ops) {
          if (resolveOp(op.type).def != &matmul_grad) continue;
          ctx.countCandidate();
          std::string_view why = matmulGradSplitRefusal(op);
          if (why.empty()) {
            todo.emplace_back(&op, 0);
            continue;
          }
          ExplainRecord r{p->rank, blk->idx, blk->indexOf(&op), std::string(op.type), false, "unsplittable", ctx.explaining() ? std::string(why) : ""};
          ctx.refuse(std::move(r));
        }
        for (auto& [op, unused] : todo) {
          splitMatmulGrad(job, *op);
          ctx.countRewritten();
          changed = true;
        }
      }
    return changed;
  }
};

}  // namespace

PassInfo splitMatmulGradPass() {
  PassInfo info;
  info.name = "split-matmul-grad";
  info.description = "Split each matmul_v2_grad into a dX and a dW matmul_v2 (overlap-collectives does this where it schedules)";
  info.journaled = true;  // edits only through OpBuilder and eraseOp
  info.create = [](const OptionValues&) { return std::make_unique<SplitMatmulGrad>(); };
  return info;
}

}  // namespace spopt
