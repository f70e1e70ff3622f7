// The op catalogue: spellings resolve to one definition, OpView maps canonical slots and
// attributes into each dialect, the builder writes the program's dialect (the regather pass's
// all-gather on a PIR program is a pd_op.all_gather with in0/out0), the verifier's rules run on
// PIR ops through the same definitions.
#include <catch2/catch.hpp>

#include <set>

#include "analysis/collectives.h"
#include "analysis/comm_stats.h"
#include "analysis/cost_model.h"
#include "io/loader.h"
#include "ir/op_role.h"
#include "ops/op_builder.h"
#include "ops/op_verify.h"
#include "ops/op_view.h"
#include "runtime/kernels/kernels.h"
#include "test_files.h"
#include "verify/verifier.h"

using namespace spopt;

namespace {
// Paddle's fusion test program (../shared/real/pir-text) at a small size, as format v1 imports it.
const char* kPirJob = R"({"format":"sp-opt.program","version":1,"world_size":2,
 "process_groups":[{"ring_id":36,"ranks":[0,1]}],
 "programs":[{"rank":0,"blocks":[{"idx":0,"parent_idx":-1,
  "vars":[{"name":"v2","shape":[8,16],"dtype":"bfloat16","persistable":true},
          {"name":"v48","shape":[4,1,16],"dtype":"bfloat16"},{"name":"v50","shape":[4,1,8],"dtype":"bfloat16"},
          {"name":"v57","shape":[4,1,8],"dtype":"bfloat16"},{"name":"v64","shape":[1],"dtype":"int32"},
          {"name":"v65","shape":[2],"dtype":"bfloat16"},{"name":"v66","shape":[2,1,8],"dtype":"bfloat16"}],
  "ops":[{"type":"builtin.parameter","inputs":{},"outputs":{"out0":["v2"]},"attrs":{"parameter_name":"w"}},
         {"type":"pd_op.data","inputs":{},"outputs":{"out0":["v48"]},"attrs":{"name":"input"}},
         {"type":"pd_op.matmul","inputs":{"in0":["v48"],"in1":["v2"]},"outputs":{"out0":["v50"]},
          "attrs":{"transpose_x":false,"transpose_y":true}},
         {"type":"pd_op.all_reduce_","inputs":{"in0":["v50"]},"outputs":{"out0":["v57"]},"attrs":{"ring_id":36,"reduce_type":0}},
         {"type":"pd_op.full","inputs":{},"outputs":{"out0":["v64"]},"attrs":{"dtype":"int32","shape":[1],"value":0}},
         {"type":"pd_op.split_with_num","inputs":{"in0":["v57"],"in1":["v64"]},"outputs":{"out0":["v65"]},"attrs":{"num":2}},
         {"type":"builtin.slice","inputs":{"in0":["v65"]},"outputs":{"out0":["v66"]},"attrs":{"index":0}}]}]}]})";

const Op& nth(const Job& job, size_t i) {
  auto it = job.programs[0]->blocks[0]->ops.begin();
  std::advance(it, i);
  return *it;
}
}  // namespace

TEST_CASE("every spelling resolves to one definition", "[ops]") {
  std::set<std::string_view> names;
  for (const OpDef* d : allOpDefs()) {
    CHECK(names.insert(d->name).second);
    REQUIRE_FALSE(d->spellings.empty());
    for (const Spelling& s : d->spellings) CHECK(resolveOp(s.type).def == d);
    if (!d->grad.empty()) CHECK(findOpDef(d->grad) != nullptr);
  }
  CHECK(resolveOp("matmul_v2").def == resolveOp("pd_op.matmul").def);
  CHECK(resolveOp("c_allreduce_max").spelling->reduce == ReduceOp::Max);
  CHECK(resolveOp("pd_op.all_reduce_").spelling->inplace);
  CHECK(resolveOp("conv2d").def == resolveOp("pd_op.conv2d").def);
  CHECK(resolveOp("mul").def == resolveOp("pd_op.matmul_with_flatten").def);
  CHECK(resolveOp("pd_op.batch_norm_").spelling->inplace);
  CHECK(resolveOp("c_reduce_sum").def->collective == CollectiveKind::Reduce);
  CHECK_FALSE(resolveOp("deformable_conv"));
}

TEST_CASE("kernels attach to definitions, so every spelling replays", "[ops]") {
  CHECK(rt::findKernel("matmul_v2") == rt::findKernel("pd_op.matmul"));
  CHECK(rt::findKernel("pd_op.split_with_num") != nullptr);
  CHECK(rt::findKernel("builtin.slice") != nullptr);
  CHECK(rt::findKernel("c_allreduce_sum") == nullptr);  // the communicator runs collectives
}

TEST_CASE("OpView maps canonical slots and attributes into PIR", "[ops]") {
  auto job = loadJobFromText(kPirJob, "pir.json");
  CHECK(job->programs[0]->dialect == Dialect::Pir);
  const Op& mm = nth(*job, 2);
  OpView v(mm);
  CHECK(v.dialect() == Dialect::Pir);
  CHECK(v.in("X")->name == "v48");
  CHECK(v.in("Y")->name == "v2");
  CHECK(v.out("Out")->name == "v50");
  CHECK(v.attrs.getBool("trans_y") == true);
  CHECK(v.pointer("/attrs/trans_y") == "/attrs/transpose_y");
  CHECK(v.pointer("/inputs/Y/0") == "/inputs/in1/0");
  // split_with_num's axis is operand in1, a pd_op.full: read as the attribute.
  OpView split(nth(*job, 5));
  CHECK(split.attrs.getInt("axis") == 0);
  CHECK(split.pointer("/attrs/axis") == "/inputs/in1/0");
  auto c = asCollective(nth(*job, 3));
  REQUIRE(c);
  CHECK(c->dialect == Dialect::Pir);
  CHECK(c->in_slot == "in0");
}

TEST_CASE("the verifier's rules check PIR ops through their definitions", "[ops]") {
  auto job = loadJobFromText(kPirJob, "pir.json");
  for (const Op& op : job->programs[0]->blocks[0]->ops) CHECK_FALSE(checkOpDefinition(OpView(op)));
  Op& mm = const_cast<Op&>(nth(*job, 2));
  mm.attrs.setBool(job->arena, "transpose_y", false);  // [4,1,16] x [8,16]: inner dims differ
  auto e = checkOpDefinition(OpView(mm));
  REQUIRE(e);
  CHECK(e->message.find("pd_op.matmul inner dims differ") == 0);
}

TEST_CASE("the builder writes the program's dialect", "[ops][builder]") {
  auto job = loadJobFromText(kPirJob, "pir.json");
  Block& b = *job->programs[0]->blocks[0];
  OpBuilder ob(b);
  REQUIRE(ob.dialect() == Dialect::Pir);
  Var* shard = b.lookup("v66");
  Var* full = ob.freshVar("gathered", {4, 1, 8}, DType::BFloat16);
  // What regather-activations inserts: an all-gather in the program's own spelling.
  Op* ag = ob.collective({CollectiveKind::AllGather, 36, 2}, shard, full).insertAt(b, b.ops.end());
  CHECK(ag->type == "pd_op.all_gather");
  CHECK(ag->in("in0") == shard);
  CHECK(ag->out("out0") == full);
  CHECK_FALSE(ag->in("x"));
  // A reduce names its root by Paddle's root_id.
  Op* rd = ob.collective({CollectiveKind::Reduce, 36, 0, ReduceOp::Sum, 1}, shard, shard).insertAt(b, b.ops.end());
  CHECK(rd->type == "pd_op.c_reduce_sum");
  CHECK(rd->attrs.getInt("root_id") == 1);
  CHECK(asCollective(*rd)->root == 1);
  // PIR passes reshape's shape as an operand: the builder adds its pd_op.full_int_array.
  Var* flat = ob.freshVar("flat", {4, 8}, DType::BFloat16);
  Var* xshape = ob.freshVar("flat_xshape", {0, 4, 1, 8}, DType::BFloat16);
  Op* r = ob.create(opDef("reshape")).input("X", {full}).output("Out", {flat}).output("XShape", {xshape})
              .attrInts("shape", {4, 8}).insertAt(b, b.ops.end());
  CHECK(r->type == "pd_op.reshape");
  Var* shape = r->in("in1");
  REQUIRE(shape);
  REQUIRE(shape->writers.size() == 1);
  CHECK(shape->writers[0]->type == "pd_op.full_int_array");
  CHECK(OpView(*r).attrs.getIntArray("shape") == std::vector<int64_t>{4, 8});
  CHECK_FALSE(checkOpDefinition(OpView(*r)));
  // The constant takes the phase of the op it feeds (else it would split a run of backward ops).
  Var* flat2 = ob.freshVar("flat2", {4, 8}, DType::BFloat16);
  Var* xshape2 = ob.freshVar("flat2_xshape", {0, 4, 1, 8}, DType::BFloat16);
  Op* rb = ob.create(opDef("reshape")).input("X", {full}).output("Out", {flat2}).output("XShape", {xshape2})
               .attrInts("shape", {4, 8}).attrInt("op_role", 1).insertAt(b, b.ops.end());
  REQUIRE(rb->in("in1"));
  CHECK(phaseOf(*rb->in("in1")->writers[0]) == Phase::Backward);
  // A clone is the same op, to edit and insert.
  Op* again = ob.clone(*r).insertAt(b, b.ops.end());
  CHECK(again->type == r->type);
  CHECK(again->in("in0") == full);
  CHECK(again->id != r->id);
}

namespace {
std::string vocabJob(const char* file) { return spopt::test::readFileBytes(std::string(SPOPT_SOURCE_DIR) + "/testdata/jobs/" + file); }

// The text with the first occurrence of `from` (at or after `after`) replaced by `to`.
std::string edited(std::string text, const std::string& after, const std::string& from, const std::string& to) {
  size_t at = text.find(from, text.find(after));
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// Every diagnostic of the verifier, one line each.
std::string problems(const std::string& text) {
  std::string out;
  for (const Diagnostic& d : verifyJob(*loadJobFromText(text, "vp.sptxt"))) out += d.line() + "\n";
  return out;
}
}  // namespace

TEST_CASE("the vocab-parallel ops and adamw have both spellings, the vocab-parallel loss takes part in its ring", "[ops]") {
  CHECK(resolveOp("adamw").def == resolveOp("pd_op.adamw_").def);
  CHECK(resolveOp("pd_op.adamw_").spelling->inplace);
  CHECK(resolveOp("c_embedding").def == resolveOp("pd_op.c_embedding").def);
  CHECK(resolveOp("c_softmax_with_cross_entropy_grad").def == resolveOp("pd_op.c_softmax_with_cross_entropy_grad_").def);
  for (const char* file : {"vocab_parallel_tp2.sptxt", "vocab_parallel_tp2_pir.sptxt"}) {
    CAPTURE(file);
    auto job = loadJobFromText(vocabJob(file), file);
    CHECK(problems(vocabJob(file)).empty());
    // Ring 0 of each rank: the forward all-reduce, the loss, the backward all-reduce (its grad is local).
    auto rings = collectivesByRing(*job->programs[0]);
    REQUIRE(rings[0].size() == 3);
    auto c = asCollective(*rings[0][1]);
    REQUIRE(c);
    CHECK(c->kind == CollectiveKind::KernelAllReduce);
    CHECK(c->ring_id == 0);
    // It moves three doubles per row of its [2,3,4] logits, and computes (unlike a collective).
    CHECK(collectiveBytes(*rings[0][1], *c, *job, false) == 6 * 3 * 8);
    CHECK(opFlops(*rings[0][1]) > 0);
    CHECK_FALSE(asCollective(*rings[0][1]->block->ops.begin()));  // c_embedding does not communicate
  }
}

TEST_CASE("the verifier checks the vocab-parallel ops' ring attributes and shapes, and adamw's, naming the JSON path", "[ops][verify]") {
  const std::string legacy = vocabJob("vocab_parallel_tp2.sptxt"), pir = vocabJob("vocab_parallel_tp2_pir.sptxt");
  CHECK(problems(edited(legacy, "rank 0 fetch", "rank=0, nranks=2", "rank=0, nranks=4"))
            .find("vp.sptxt: /programs/0/blocks/0/ops/3/attrs/nranks: c_softmax_with_cross_entropy: nranks 4 differs from ring 0's size 2") == 0);
  CHECK(problems(edited(legacy, "rank 1 fetch", "rank=1, nranks=2", "rank=0, nranks=2"))
            .find("vp.sptxt: /programs/1/blocks/0/ops/3/attrs/rank: c_softmax_with_cross_entropy: rank 0 differs from rank 1's position 1 in ring 0") == 0);
  CHECK(problems(edited(legacy, "rank 0 fetch", "var emb_part : float32[2,3,4]", "var emb_part : float32[2,3,5]"))
            .find("/programs/0/blocks/0/ops/0/outputs/Out/0: c_embedding: Out [2,3,5] should be [2,3,4]") != std::string::npos);
  CHECK(problems(edited(pir, "rank 0 fetch", "var emb_part : float32[2,3,4]", "var emb_part : float32[2,3,5]"))
            .find("/programs/0/blocks/0/ops/0/outputs/out0/0: pd_op.c_embedding: Out [2,3,5] should be [2,3,4]") != std::string::npos);
  CHECK(problems(edited(legacy, "rank 0 fetch", "start_index=0", "start_index=-4"))
            .find("/programs/0/blocks/0/ops/0/attrs/start_index: c_embedding: start_index -4 should be >= 0") != std::string::npos);
  CHECK(problems(edited(pir, "rank 0 fetch", "var head_w_m1 : float32[4,4]", "var head_w_m1 : float32[4,3]"))
            .find("/inputs/in3/0: pd_op.adamw_: Moment1 [4,3] should be [4,4]") != std::string::npos);
  // Rank 1 issues a plain all-reduce where rank 0 runs the vocab-parallel loss: ring 0 diverges.
  std::string swapped = edited(legacy, "rank 1 fetch", "{Softmax=[softmax], Loss=[tok_loss]} = c_softmax_with_cross_entropy(Logits=[logits], Label=[label]) {ring_id=0, rank=1, nranks=2, ignore_index=-100, op_role=0}",
                               "{Out=[logits]} = c_allreduce_sum(X=[logits]) {ring_id=0, op_role=0}");
  CHECK(problems(swapped).find("ring 0 collective #1 differs: rank 0 issues c_softmax_with_cross_entropy float32[2,3,4]") != std::string::npos);
}

TEST_CASE("mixed precision and clipping ops: spellings, PIR operands and rules", "[ops]") {
  CHECK(resolveOp("cast").def == resolveOp("pd_op.cast_").def);
  CHECK(resolveOp("pd_op.cast_").spelling->inplace);
  CHECK(resolveOp("cast").def->grad == "cast");
  CHECK(resolveOp("elementwise_max").def == resolveOp("pd_op.maximum").def);
  CHECK(resolveOp("elementwise_min_grad").def == resolveOp("pd_op.minimum_grad").def);
  CHECK(resolveOp("update_loss_scaling").def == resolveOp("pd_op.update_loss_scaling_").def);
  CHECK(resolveOp("check_finite_and_unscale").def == resolveOp("pd_op.check_finite_and_unscale_").def);
  CHECK(rt::findKernel("pd_op.sqrt_") == rt::findKernel("sqrt"));
  // PIR: cast's dtype is a DataType name, update_loss_scaling_'s stop_update operand in5 (a pd_op.full).
  const char* job_text = R"({"format":"sp-opt.program","version":1,"world_size":1,
   "programs":[{"rank":0,"blocks":[{"idx":0,"parent_idx":-1,
    "vars":[{"name":"w","shape":[4,3],"dtype":"float32","persistable":true},{"name":"w16","shape":[4,3],"dtype":"bfloat16"},
            {"name":"sq","shape":[2],"dtype":"float32"},{"name":"stop","shape":[1],"dtype":"bool"},
            {"name":"found","shape":[1],"dtype":"bool"},{"name":"ls","shape":[1],"dtype":"float32"},
            {"name":"good","shape":[1],"dtype":"int32"},{"name":"bad","shape":[1],"dtype":"int32"},{"name":"g","shape":[4,3],"dtype":"float32"}],
    "ops":[{"type":"pd_op.cast","inputs":{"in0":["w"]},"outputs":{"out0":["w16"]},"attrs":{"dtype":"bfloat16"}},
           {"type":"pd_op.squared_l2_norm","inputs":{"in0":["w"]},"outputs":{"out0":["sq"]},"attrs":{}},
           {"type":"pd_op.full","inputs":{},"outputs":{"out0":["stop"]},"attrs":{"dtype":"bool","shape":[1],"value":1}},
           {"type":"pd_op.update_loss_scaling_","inputs":{"in0":["w"],"in1":["found"],"in2":["ls"],"in3":["good"],"in4":["bad"],"in5":["stop"]},
            "outputs":{"out0":["g"],"out1":["ls"],"out2":["good"],"out3":["bad"]},
            "attrs":{"incr_every_n_steps":1000,"decr_every_n_nan_or_inf":2,"incr_ratio":2.0,"decr_ratio":0.5}}]}]}]})";
  auto job = loadJobFromText(job_text, "amp.json");
  OpView cast(nth(*job, 0));
  CHECK_FALSE(checkOpDefinition(cast));
  OpView uls(nth(*job, 3));
  REQUIRE(uls.attrRaw("stop_update"));
  CHECK(*uls.attrRaw("stop_update") == "1");  // the kernel reads 0/1 as a boolean
  CHECK(uls.in("InBadSteps")->name == "bad");
  CHECK_FALSE(checkOpDefinition(uls));
  // squared_l2_norm's result holds one element; the pointer names PIR's result.
  auto e = checkOpDefinition(OpView(nth(*job, 1)));
  REQUIRE(e);
  CHECK(e->where == "/outputs/out0/0");
  CHECK(e->message == "pd_op.squared_l2_norm: Out [2] should hold one element");
  // A dtype the Out var does not have.
  Op& c = const_cast<Op&>(nth(*job, 0));
  c.attrs.setRaw(job->arena, "dtype", "\"float16\"");
  e = checkOpDefinition(OpView(c));
  REQUIRE(e);
  CHECK(e->where == "/attrs/dtype");
  CHECK(e->message == "pd_op.cast: out_dtype float16 disagrees with Out's bfloat16");
}
