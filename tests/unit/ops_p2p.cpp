// Point-to-point ops (send_v2 / recv_v2, pd_op.p_send / pd_op.p_recv): their catalogue
// definitions, the builder in both dialects, the verifier's pairing per channel (the first
// mismatch or missing partner, naming both ranks and ops), the hang check (grouped ring exchange
// runs, blocking sends in a cycle hang) and the cost model (alpha + bytes / link bandwidth).
#include <iterator>
#include <catch2/catch.hpp>

#include "analysis/cost_model.h"
#include "analysis/hang_check.h"
#include "analysis/p2p.h"
#include "analysis/simulate.h"
#include "io/loader.h"
#include "ops/op_builder.h"
#include "ops/op_view.h"
#include "ops/translate.h"
#include "verify/verifier.h"

using namespace spopt;

namespace {

// A ring of `n` ranks: each sends x_r to the next rank and receives the previous rank's into y.
// `between`: an op line put between the send and the receive (it ends their group).
std::string p2pRingJob(int n, const std::string& recv_dtype = "float32", const std::string& between = "") {
  std::string next, prev;
  for (int r = 0; r < n; ++r) {
    next += std::to_string(r) + ": " + std::to_string((r + 1) % n) + (r + 1 < n ? ", " : "");
    prev += std::to_string(r) + ": " + std::to_string((r + n - 1) % n) + (r + 1 < n ? ", " : "");
  }
  std::string ranks;
  for (int r = 0; r < n; ++r) ranks += (r ? "," : "") + std::to_string(r);
  return "sp-opt.program text 1\nworld_size " + std::to_string(n) + "\ngroup ring_id=0 ranks=[" + ranks + "]\n" +
         "rank 0.." + std::to_string(n - 1) + " fetch=[y] {\n  block 0 parent=-1 {\n" +
         "    var x_$rank : float32[2,3]\n    var z : float32[2,3]\n    var y : " + recv_dtype + "[2,3]\n" +
         "    {} = send_v2(X=[x_$rank]) {ring_id=0, peer=$rank{" + next + "}}\n" + between +
         "    {Out=[y]} = recv_v2() {ring_id=0, peer=$rank{" + prev + "}, out_shape=[2,3]}\n  }\n}\n";
}

std::vector<std::string> p2pProblems(const Job& job) {
  std::vector<std::string> lines;
  for (const Diagnostic& d : verifyJob(job)) lines.push_back(d.line());
  return lines;
}

}  // namespace

TEST_CASE("send_v2 / recv_v2 and pd_op.p_send / pd_op.p_recv are one definition each", "[ops][p2p]") {
  for (const char* t : {"send_v2", "pd_op.p_send", "pd_op.send_v2"}) {
    ResolvedOp r = resolveOp(t);
    REQUIRE(r);
    CHECK(r.def->name == "p_send");
    CHECK(r.def->p2p == P2PKind::Send);
    CHECK_FALSE(r.def->collective);
  }
  for (const char* t : {"recv_v2", "pd_op.p_recv", "pd_op.recv_v2"}) {
    ResolvedOp r = resolveOp(t);
    REQUIRE(r);
    CHECK(r.def->name == "p_recv");
    CHECK(r.def->p2p == P2PKind::Recv);
  }
  const OpDef& recv = p2pDef(P2PKind::Recv);
  for (const char* a : {"ring_id", "peer", "dtype", "out_shape", "use_calc_stream", "dynamic_shape"}) CHECK(recv.attr(a));
  CHECK(slotName(*recv.output("Out"), Dialect::Pir, false) == "out0");
  CHECK(slotName(*p2pDef(P2PKind::Send).input("X"), Dialect::Pir, true) == "in0");
}

TEST_CASE("a ring exchange verifies, pairs per channel and does not hang", "[verify][p2p][hang]") {
  for (int n : {2, 4}) {
    auto job = loadJobFromText(p2pRingJob(n), "ring.sptxt");
    CHECK(p2pProblems(*job).empty());
    auto channels = p2pChannels(*job);
    REQUIRE(channels.size() == size_t(n == 2 ? 2 : 4));
    for (const P2PChannel& c : channels) {
      CHECK(c.sends.size() == 1);
      CHECK(c.recvs.size() == 1);
      CHECK(c.to == (c.from + 1) % n);
    }
    HangReport h = checkHangs(*job);
    INFO((h.errors.empty() ? std::string() : h.errors[0].message));
    CHECK(h.errors.empty());
  }
}

TEST_CASE("the verifier names the first send/recv mismatch with both ranks and ops", "[verify][p2p]") {
  auto dtype = loadJobFromText(p2pRingJob(2, "float16"), "bad.sptxt");
  auto lines = p2pProblems(*dtype);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] ==
        "bad.sptxt: /programs/1/blocks/0/ops/1: ring 0 send #0 from rank 0 to rank 1: dtype differs: rank 0 sends send_v2 float32[2,3] "
        "(/programs/0/blocks/0/ops/0), rank 1 receives recv_v2 float16[2,3] (/programs/1/blocks/0/ops/1)");
  std::string wrong_size = p2pRingJob(2);
  wrong_size.replace(wrong_size.find("var y : float32[2,3]"), 20, "var y : float32[3,3]");
  wrong_size.replace(wrong_size.find("out_shape=[2,3]"), 15, "out_shape=[3,3]");
  lines = p2pProblems(*loadJobFromText(wrong_size, "bad.sptxt"));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("ring 0 send #0 from rank 0 to rank 1: size differs (6 vs 9 elements)") != std::string::npos);
}

TEST_CASE("a send nobody receives is a missing partner, in the verifier and the hang check", "[verify][p2p][hang]") {
  std::string text = p2pRingJob(2);
  text.replace(text.find("    {Out=[y]} = recv_v2()"), 0, "    rank 0: {} = send_v2(X=[x_$rank]) {ring_id=0, peer=1}\n");
  auto job = loadJobFromText(text, "m.sptxt");
  auto lines = p2pProblems(*job);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] ==
        "m.sptxt: /programs/0/blocks/0/ops/1: ring 0: rank 0 sends 2 tensor(s) to rank 1, which receives 1 from it; first unmatched: "
        "rank 0 send_v2 float32[2,3] (/programs/0/blocks/0/ops/1) has no receive on rank 1");
  HangReport h = checkHangs(*job);
  REQUIRE_FALSE(h.errors.empty());
  CHECK(h.errors[0].message.find("has no partner: rank 1 issues no matching receive") != std::string::npos);
}

TEST_CASE("a peer outside the ring or the rank itself is refused", "[verify][p2p]") {
  std::string text = p2pRingJob(2);
  text.replace(text.find("peer=$rank{0: 1, 1: 0}"), 22, "peer=$rank{0: 0, 1: 5}");
  auto lines = p2pProblems(*loadJobFromText(text, "p.sptxt"));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "p.sptxt: /programs/0/blocks/0/ops/0/attrs/peer: peer 0 is rank 0's own position in ring 0: a rank cannot send to itself");
  CHECK(lines[1] == "p.sptxt: /programs/1/blocks/0/ops/0/attrs/peer: peer 5 is not a position in ring 0 (size 2)");
}

TEST_CASE("blocking sends that wait on each other's receives hang", "[hang][p2p]") {
  // An op between the send and the receive ends their group: each rank blocks in its send.
  auto job = loadJobFromText(p2pRingJob(2, "float32", "    {Out=[z]} = scale(X=[x_$rank]) {scale=2.0}\n"), "h.sptxt");
  CHECK(p2pProblems(*job).empty());
  HangReport h = checkHangs(*job);
  REQUIRE(h.errors.size() == 1);
  const std::string& m = h.errors[0].message;
  INFO(m);
  CHECK(m.find("form a cycle of waits") != std::string::npos);
  CHECK(m.find("rank 0 stream 'default' send_v2 ring 0 to rank 1 #0") != std::string::npos);
  CHECK(m.find("rank 1 stream 'default' recv_v2 ring 0 from rank 0 #0") != std::string::npos);
}

TEST_CASE("the builder writes sends and receives in the program's dialect", "[ops][builder][p2p]") {
  auto job = loadJobFromText(p2pRingJob(2), "b.sptxt");
  Block& b = *job->programs[0]->blocks[0];
  OpBuilder ob(b);
  Var* x = b.lookup("x_0");
  Var* got = ob.freshVar("got", {2, 3}, DType::Float32);
  Op& last = b.ops.back();
  Op* send = ob.send({0, 1}, x).insertBefore(last);
  Op* recv = ob.recv({0, 1}, got).insertBefore(last);
  CHECK(send->type == "send_v2");
  CHECK(recv->type == "recv_v2");
  CHECK(recv->attrs.getInt("dtype") == 5);
  CHECK(recv->attrs.getIntArray("out_shape") == std::vector<int64_t>{2, 3});
  OpView rv(*recv);
  CHECK(rv.out("Out") == got);

  job->programs[0]->dialect = Dialect::Pir;
  OpBuilder pir(b);
  Op* psend = pir.send({0, 1}, x).insertBefore(last);
  Op* precv = pir.recv({0, 1}, got).insertBefore(last);
  CHECK(psend->type == "pd_op.p_send");
  CHECK(precv->type == "pd_op.p_recv");
  CHECK(psend->inputs.at(0).name == "in0");
  CHECK(precv->outputs.at(0).name == "out0");
  CHECK(precv->attrs.getString("dtype") == "float32");
  CHECK_FALSE(precv->attrs.has("out_shape"));
}

TEST_CASE("a send or receive costs alpha + bytes / link bandwidth", "[analyze][p2p]") {
  auto job = loadJobFromText(p2pRingJob(2), "c.sptxt");
  HardwareModel m = *presetModel("h100-nvlink");
  const Op& send = job->programs[0]->blocks[0]->ops.front();
  double want = m.latency_s + m.step_latency_s + 24.0 / m.bus_bw;
  CHECK(opCostSeconds(send, m) == Approx(want));
  StepTimeline t = simulateStep(*job, m);
  CHECK(t.step_s == Approx(want));
}

TEST_CASE("a rank's concurrent sends share its link: a bidirectional exchange costs twice the bytes", "[analyze][p2p]") {
  // Four ranks, each sending x to both neighbours and receiving both neighbours' in one group.
  std::string text =
      "sp-opt.program text 1\nworld_size 4\ngroup ring_id=0 ranks=[0,1,2,3]\nrank 0..3 fetch=[y,z] {\n  block 0 parent=-1 {\n"
      "    var x : float32[1024,1024]\n    var y : float32[1024,1024]\n    var z : float32[1024,1024]\n"
      "    {} = send_v2(X=[x]) {ring_id=0, peer=$rank{0: 1, 1: 2, 2: 3, 3: 0}}\n"
      "    {} = send_v2(X=[x]) {ring_id=0, peer=$rank{0: 3, 1: 0, 2: 1, 3: 2}}\n"
      "    {Out=[y]} = recv_v2() {ring_id=0, peer=$rank{0: 3, 1: 0, 2: 1, 3: 2}, out_shape=[1024,1024]}\n"
      "    {Out=[z]} = recv_v2() {ring_id=0, peer=$rank{0: 1, 1: 2, 2: 3, 3: 0}, out_shape=[1024,1024]}\n  }\n}\n";
  auto job = loadJobFromText(text, "bidi.sptxt");
  REQUIRE(p2pProblems(*job).empty());
  HardwareModel m = *presetModel("h100-nvlink");
  CHECK(simulateStep(*job, m).step_s == Approx(m.latency_s + m.step_latency_s + 2 * 4194304.0 / m.bus_bw));
  // Each send alone, as opCostSeconds charges it: the group is not one link's worth of bytes.
  CHECK(opCostSeconds(job->programs[0]->blocks[0]->ops.front(), m) == Approx(m.latency_s + m.step_latency_s + 4194304.0 / m.bus_bw));
}

TEST_CASE("a legacy ring exchange translates to pd_op.p_send / pd_op.p_recv and back", "[ops][translate][p2p]") {
  auto job = loadJobFromText(p2pRingJob(2), "t.sptxt");
  job->programs[0]->blocks[0]->ops.back().attrs.setInt(job->arena, "dtype", 5);
  translateToPir(*job);
  const Block& b = *job->programs[0]->blocks[0];
  // PIR declares the program's input with a pd_op.data first.
  REQUIRE(b.ops.size() >= 2);
  CHECK(std::prev(b.ops.end(), 2)->type == "pd_op.p_send");
  CHECK(b.ops.back().type == "pd_op.p_recv");
  CHECK(b.ops.back().attrs.getString("dtype") == "float32");
  CHECK(p2pProblems(*job).empty());
  CHECK(checkHangs(*job).errors.empty());
  translateToLegacy(*job);
  const Block& back = *job->programs[0]->blocks[0];
  CHECK(std::prev(back.ops.end(), 2)->type == "send_v2");
  CHECK(back.ops.back().type == "recv_v2");
  CHECK(p2pProblems(*job).empty());
}
