// See collective_matmul_match.h.
#include "passes/collective_matmul_match.h"

#include <algorithm>

#include "ir/op_role.h"
#include "ops/op_view.h"
#include "passes/matmul_grad_split.h"

namespace spopt {
namespace {

CollectiveMatmulResult refuse(std::string_view code, std::string reason) {
  CollectiveMatmulResult r;
  r.candidate = true;
  r.refusal = {std::string(code), std::move(reason)};
  return r;
}

// How a matmul (or matmul_v2_grad) uses `v`: a row operand of a GEMM we may cut by rows, a use
// we may not cut (with its reason), or no GEMM use at all.
struct Use {
  enum Kind { None, Row, Refused } kind = None;
  bool grad = false;
  Refusal why;
};

// X's axis 0 is a row axis of X op(W): trans_x false, X at least 2-D, W a plain 2-D weight.
std::optional<Refusal> rowAxisRefusal(const OpView& mm, std::string_view x_slot, std::string_view w_slot) {
  const Var* x = mm.in(x_slot);
  const Var* w = mm.in(w_slot);
  if (mm.attrs.getBool("trans_x").value_or(false) && x && x->shape.size() == 2)
    return Refusal{"contracted-axis", "trans_x is set: the gathered axis 0 is the one the GEMM sums over"};
  if (mm.attrs.getBool("trans_x").value_or(false)) return Refusal{"transposed-x", "trans_x is set"};
  if (!x || x->shape.size() < 2) return Refusal{"not-a-row-axis", "the operand is not at least 2-D"};
  if (!w || w->shape.size() != 2) return Refusal{"batched-weight", "the weight is not 2-D: axis 0 is a batch axis of both operands"};
  return std::nullopt;
}

Use useOf(const Op& op, const Var* v) {
  OpView mm(op);
  Use u;
  bool matmul = mm.is(opDef("matmul")), grad = mm.is(opDef("matmul_grad"));
  if (!matmul && !grad) return u;
  u.kind = Use::Refused;
  if (mm.in("Y") == v) {
    u.why = {"gathered-weight", "it is the GEMM's Y: its axis 0 is contracted or a column axis, not a row axis"};
    return u;
  }
  if (matmul) {
    if (auto r = rowAxisRefusal(mm, "X", "Y")) return u.why = *r, u;
    u.kind = Use::Row;
    return u;
  }
  if (mm.in("X") == v || mm.in("Out@GRAD") != v) {
    u.why = {"contracted-axis", "the dW GEMM sums over the gathered axis (X^T dOut): not a row axis"};
    return u;
  }
  // dOut of a matmul_v2_grad: its dX GEMM (dOut op(W)^T) has dOut's rows as rows.
  if (std::string_view why = matmulGradSplitRefusal(op); !why.empty()) return u.why = {"unsplittable-grad", std::string(why)}, u;
  if (auto r = rowAxisRefusal(mm, "Out@GRAD", "Y")) return u.why = *r, u;
  u.kind = Use::Row;
  u.grad = true;
  return u;
}

bool sameRows(const Var* whole, const Var* shard, int64_t t) {
  return whole && shard && !whole->shape.empty() && whole->shape.size() == shard->shape.size() && shard->shape[0] > 0 &&
         whole->shape[0] == shard->shape[0] * t &&
         std::equal(whole->shape.begin() + 1, whole->shape.end(), shard->shape.begin() + 1);
}

CollectiveMatmulResult matchAllGather(Op& ag, const Collective& coll, int64_t t, bool explaining) {
  Var* s = ag.in(coll.in_slot);
  Var* g = ag.out(coll.out_slot);
  if (!s || !g || ag.inputCount(coll.in_slot) != 1 || ag.outputCount(coll.out_slot) != 1) return {};
  CollectiveMatmulMatch m;
  m.form = CollectiveMatmulForm::AllGather;
  m.shard = s;
  m.whole = g;
  std::optional<Refusal> first_refused;
  for (Op* r : g->readers) {
    Use u = useOf(*r, g);
    if (u.kind == Use::Refused && !first_refused) first_refused = u.why;
    if (u.kind != Use::Row) {
      m.whole_read_elsewhere = true;
      continue;
    }
    if (r->block != ag.block) return refuse("reader-outside", "a matmul reading it is in another block");
    if (std::none_of(m.matmuls.begin(), m.matmuls.end(), [&](const SiteMatmul& x) { return x.op == r; }))
      m.matmuls.push_back({r, u.grad});
    if (u.grad) m.whole_read_elsewhere = true;  // the dW GEMM still reads the whole of dOut
  }
  if (m.matmuls.empty() && !first_refused) return {};  // no matmul waits on it
  auto name = [&](const Var* v) { return explaining ? std::string(v->name) : std::string(); };
  if (m.matmuls.empty()) return refuse(first_refused->code, name(g) + ": " + first_refused->reason);
  if (g->persistable || ag.block->program->fetches(g->name)) m.whole_read_elsewhere = true;
  if (g->writers.size() != 1) return refuse("output-rewritten", name(g) + " is written by another op too");
  if (!sameRows(g, s, t)) return refuse("shape", name(g) + " is not " + std::to_string(t) + " shards along axis 0");
  CollectiveMatmulResult r;
  r.candidate = true;
  m.collective = &ag;
  m.coll = coll;
  m.ranks = t;
  r.match = std::move(m);
  return r;
}

CollectiveMatmulResult matchReduceScatter(Op& rs, const Collective& coll, int64_t t, bool explaining) {
  Var* p = rs.in(coll.in_slot);
  Var* o = rs.out(coll.out_slot);
  if (!p || !o || p->writers.size() != 1 || rs.inputCount(coll.in_slot) != 1 || rs.outputCount(coll.out_slot) != 1) return {};
  Op* w = p->writers.front();
  OpView mm(*w);
  bool matmul = mm.is(opDef("matmul")), grad = mm.is(opDef("matmul_grad"));
  if ((matmul && mm.out("Out") != p) || (grad && mm.out("X@GRAD") != p) || (!matmul && !grad)) return {};
  auto name = [&](const Var* v) { return explaining ? std::string(v->name) : std::string(); };
  if (grad)
    if (std::string_view why = matmulGradSplitRefusal(*w); !why.empty()) return refuse("unsplittable-grad", std::string(why));
  const SiteMatmul site{w, grad};
  if (auto r = rowAxisRefusal(mm, site.rowSlot(), "Y")) return refuse(r->code, r->reason);
  if (p->readers.size() != 1 || p->persistable || rs.block->program->fetches(p->name))
    return refuse("partial-read-elsewhere", name(p) + " is read by another op: the whole product must exist");
  if (w->block != rs.block) return refuse("reader-outside", "the matmul is in another block");
  if (!sameRows(p, o, t)) return refuse("shape", name(p) + " is not " + std::to_string(t) + " chunks along axis 0");
  CollectiveMatmulMatch m;
  m.form = CollectiveMatmulForm::ReduceScatter;
  m.collective = &rs;
  m.coll = coll;
  m.ranks = t;
  m.shard = o;
  m.whole = p;
  m.matmuls.push_back(site);
  CollectiveMatmulResult r;
  r.candidate = true;
  r.match = std::move(m);
  return r;
}

}  // namespace

CollectiveMatmulResult matchCollectiveMatmul(Op& op, const Collective& coll, const Job& job, bool explaining) {
  if (coll.kind != CollectiveKind::AllGather && coll.kind != CollectiveKind::ReduceScatter) return {};
  if (phaseOf(op) == Phase::Optimize) return {};
  const ProcessGroup* g = job.group(coll.ring_id);
  int64_t t = g ? int64_t(g->ranks.size()) : 0;
  CollectiveMatmulResult r = coll.kind == CollectiveKind::AllGather ? matchAllGather(op, coll, t, explaining)
                                                                    : matchReduceScatter(op, coll, t, explaining);
  if (r.match && t < 2) return refuse("no-group", "ring " + std::to_string(coll.ring_id) + " has no group of two or more ranks");
  return r;
}

}  // namespace spopt
