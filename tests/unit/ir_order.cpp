// Op order in a block: moveOp keeps identity and def-use; cached positions follow every edit; the
// op builder makes collectives in either dialect; phase and stream accessors.
#include <algorithm>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "io/loader.h"
#include "io/writer.h"
#include "ops/op_builder.h"
#include "ir/op_role.h"

using namespace spopt;

namespace {
// a -> relu -> b -> relu -> c -> scale -> d, then c_allreduce_sum d -> e (legacy dialect).
const char* kOrderJob = R"({"format":"sp-opt.program","version":1,"world_size":2,
 "process_groups":[{"ring_id":0,"ranks":[0,1]}],
 "programs":[{"rank":0,"fetch":["e"],"blocks":[{"idx":0,"parent_idx":-1,
  "vars":[{"name":"a","shape":[4,8],"dtype":"float32","dist_attr":{"dims_mapping":[-1,-1],"chunk_id":0}},
          {"name":"b","shape":[4,8],"dtype":"float32"},{"name":"c","shape":[4,8],"dtype":"float32"},
          {"name":"d","shape":[4,8],"dtype":"float32"},{"name":"e","shape":[4,8],"dtype":"float32"}],
  "ops":[{"type":"relu","inputs":{"X":["a"]},"outputs":{"Out":["b"]},"attrs":{"op_role":0}},
         {"type":"relu","inputs":{"X":["b"]},"outputs":{"Out":["c"]},"attrs":{"op_role":1}},
         {"type":"scale","inputs":{"X":["c"]},"outputs":{"Out":["d"]},"attrs":{"op_role":257,"scale":2.0}},
         {"type":"c_allreduce_sum","inputs":{"X":["d"]},"outputs":{"Out":["e"]},"attrs":{"ring_id":0,"op_role":18},
          "dist_attr":{"execution_stream":"comm","event_to_record":"ev1","events_to_wait":["ev0"],"stream_priority":-1,"scheduling_priority":3}}]}]}]})";

std::vector<Op*> opPointers(Block& b) {
  std::vector<Op*> v;
  for (Op& o : b.ops) v.push_back(&o);
  return v;
}
}  // namespace

TEST_CASE("moveOp keeps id, address and def-use, positions follow", "[ir][order]") {
  auto job = loadJobFromText(kOrderJob, "t.json");
  Block& b = *job->programs[0]->blocks[0];
  auto ops = opPointers(b);
  Op* scale = ops[2];
  uint32_t id = scale->id;
  Var* c = b.lookup("c");
  Var* d = b.lookup("d");
  CHECK(b.indexOf(scale) == 2);
  CHECK(b.isBefore(ops[1], scale));

  b.moveOp(scale, ops[0]->self);  // to the front
  CHECK(&b.ops.front() == scale);
  CHECK(scale->id == id);
  CHECK(scale->self == b.ops.begin());
  REQUIRE(c->readers.size() == 1);
  CHECK(c->readers[0] == scale);
  REQUIRE(d->writers.size() == 1);
  CHECK(d->writers[0] == scale);
  CHECK(b.indexOf(scale) == 0);
  CHECK(b.indexOf(ops[0]) == 1);
  CHECK(b.indexOf(ops[1]) == 2);
  CHECK(b.indexOf(ops[3]) == 3);
  CHECK(b.isBefore(scale, ops[0]));
  CHECK_FALSE(b.isBefore(ops[1], scale));

  b.moveOp(scale, b.ops.end());  // to the back
  CHECK(b.indexOf(scale) == 3);
  CHECK(b.indexOf(ops[3]) == 2);
  b.moveOp(scale, scale->self);  // no-op
  CHECK(b.indexOf(scale) == 3);

  // Positions after an insert and an erase.
  OpBuilder ob(b);
  Var* f = ob.freshVar("e", {4, 8}, DType::Float32, b.lookup("a"));
  CHECK(f->name == "e_1");
  CHECK(f->dimsMapping() == std::vector<int64_t>{-1, -1});
  Op* n = ob.create(opDef("relu")).input("X", {c}).output("Out", {f}).phase(Phase::Backward).insertBefore(*ops[0]);
  CHECK(b.indexOf(n) == 0);
  CHECK(b.indexOf(scale) == 4);
  CHECK(n->id == 4);
  b.eraseOp(n);
  CHECK(b.indexOf(scale) == 3);
  CHECK(c->readers.size() == 1);  // the scale (the inserted relu is gone)
}

TEST_CASE("positions and inOrder equal a walk of the list after any mix of edits", "[ir][order][property]") {
  // A chain of 40 relus, edited at random: inserts, erases, moves and reordered runs, with the
  // positions asked for in between (each query repairs the numbering the edits left).
  std::string ops, vars = R"({"name":"v0","shape":[2],"dtype":"float32"})";
  for (int i = 0; i < 40; ++i) {
    ops += std::string(i ? "," : "") + R"({"type":"relu","inputs":{"X":["v)" + std::to_string(i) + R"("]},"outputs":{"Out":["v)" +
           std::to_string(i + 1) + R"("]}})";
    vars += R"(,{"name":"v)" + std::to_string(i + 1) + R"(","shape":[2],"dtype":"float32"})";
  }
  const std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"programs":[{"rank":0,"blocks":[{"idx":0,"parent_idx":-1,"vars":[)" +
                           vars + R"(],"ops":[)" + ops + "]}]}]}";
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto job = loadJobFromText(text, "chain.json");
    Block& b = *job->programs[0]->blocks[0];
    std::mt19937 rng(seed);
    auto pick = [&](size_t n) { return size_t(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
    auto checkAgainstList = [&] {
      auto in_order = b.inOrder();
      REQUIRE(in_order.size() == b.ops.size());
      size_t i = 0;
      for (Op& op : b.ops) {
        REQUIRE(&in_order[i] == &op);
        REQUIRE(b.indexOf(&op) == i);
        ++i;
      }
    };
    checkAgainstList();
    OpBuilder builder(b);
    for (int step = 0; step < 200; ++step) {
      std::vector<Op*> now = opPointers(b);
      switch (pick(5)) {
        case 0: {  // insert a relu before some op (or at the end)
          Var* out = builder.freshVar("n", {2}, DType::Float32);
          NewOp n = builder.create(opDef("relu")).input("X", {b.lookup("v0")}).output("Out", {out});
          if (size_t at = pick(now.size() + 1); at < now.size()) n.insertBefore(*now[at]);
          else n.insertAt(b, b.ops.end());
          break;
        }
        case 1:
          if (now.size() > 4) b.eraseOp(now[pick(now.size())]);
          break;
        case 2:
          b.moveOp(now[pick(now.size())], now[pick(now.size())]->self);
          break;
        case 3: {  // a contiguous run put in a shuffled order
          size_t first = pick(now.size()), len = 1 + pick(std::min<size_t>(8, now.size() - first));
          std::vector<Op*> run(now.begin() + ptrdiff_t(first), now.begin() + ptrdiff_t(first + len)), order = run;
          std::shuffle(order.begin(), order.end(), rng);
          b.reorderRun(run, order);
          break;
        }
        default:
          checkAgainstList();
      }
    }
    checkAgainstList();
  }
}

TEST_CASE("appendOp keeps positions, and an op dropped from the list directly is renumbered away", "[ir][order]") {
  auto job = loadJobFromText(kOrderJob, "t.json");
  Block& b = *job->programs[0]->blocks[0];
  Op& appended = b.appendOp();
  CHECK(b.indexOf(&appended) == 4);
  b.ops.pop_back();  // as the text reader drops an op it could not finish
  Op& again = b.appendOp();
  auto in_order = b.inOrder();
  REQUIRE(in_order.size() == 5);
  CHECK(&in_order[4] == &again);
  CHECK(b.indexOf(&again) == 4);
}

TEST_CASE("op builder makes collectives in the program's dialect", "[ir][builder]") {
  auto job = loadJobFromText(kOrderJob, "t.json");
  Block& b = *job->programs[0]->blocks[0];
  auto ops = opPointers(b);
  CHECK(job->programs[0]->dialect == Dialect::Legacy);
  OpBuilder ob(b);
  Var* x = b.lookup("c");
  Var* part = ob.freshVar("c.part", {2, 8}, DType::Float32, b.lookup("a"), {0, -1});
  CHECK(part->dimsMapping() == std::vector<int64_t>{0, -1});
  Op* rs = ob.collective({CollectiveKind::ReduceScatter, 0, 2}, x, part)
               .copyAttrs(*ops[3], {"op_role", "op_namescope"})
               .copyDistAttr(b.lookup("a")->dist_attr, {"process_mesh", "chunk_id"})
               .stream("default")
               .insertBefore(*ops[3]);
  CHECK(rs->type == "c_reducescatter");
  CHECK(rs->in("X") == x);
  CHECK(rs->out("Out") == part);
  CHECK(rs->attrs.getInt("nranks") == 2);
  CHECK(rs->attrs.getInt("op_role") == 18);
  CHECK(rs->dist_attr.getInt("chunk_id") == 0);
  CHECK(rs->executionStream() == "default");
  CHECK(part->writers.size() == 1);

  Var* y = ob.freshVar("y", {4, 8}, DType::Float32);
  job->programs[0]->dialect = Dialect::Current;
  OpBuilder current(b);
  Op* ar = current.collective({CollectiveKind::AllReduce, 0, 2, ReduceOp::Max}, x, y).insertBefore(*ops[3]);
  job->programs[0]->dialect = Dialect::Legacy;
  CHECK(ar->type == "all_reduce");
  CHECK(ar->in("x") == x);
  CHECK(ar->attrs.getInt("reduce_type") == 1);
  Var* z = ob.freshVar("y", {4, 8}, DType::Float32);
  CHECK(z->name == "y_1");
  CHECK(ob.collective({CollectiveKind::AllReduce, 0, 2, ReduceOp::Max}, x, z).op().type == "c_allreduce_max");
  CHECK_THROWS_AS(ob.collective({CollectiveKind::AllReduce, 0, 2, ReduceOp::Avg}, x, z), std::logic_error);

  Op* k = ob.create(opDef("scale")).input("X", {x}).output("Out", {z}).attrDouble("scale", 1.0).attrBool("bias_after_scale", true)
              .attrString("s", "t").attrInts("axis", {0, 1}).attrInt("n", 3).insertAt(b, b.ops.end());
  CHECK(std::string(*k->attrs.find("scale")) == "1.0");
  CHECK(std::string(*k->attrs.find("axis")) == "[0,1]");
  CHECK(k->attrs.getString("s") == "t");
  // The edited job writes and reloads.
  auto text = jobToString(*job);
  auto again = loadJobFromText(text, "t2.json");
  CHECK(again->programs[0]->blocks[0]->ops.size() == 7);
}

TEST_CASE("phase and stream accessors", "[ir][role]") {
  auto job = loadJobFromText(kOrderJob, "t.json");
  Block& b = *job->programs[0]->blocks[0];
  auto ops = opPointers(b);
  CHECK(phaseOf(*ops[0]) == Phase::Forward);
  CHECK(phaseOf(*ops[1]) == Phase::Backward);
  CHECK(phaseOf(*ops[2]) == Phase::LossGrad);
  CHECK(phaseOf(*ops[3]) == Phase::Optimize);  // 18 = Optimize | LRSched
  CHECK(phaseOfRole(256) == Phase::Loss);
  CHECK(phaseOfRole(3) == Phase::Unknown);
  CHECK(ops[3]->executionStream() == "comm");
  CHECK(eventToRecord(*ops[3]) == "ev1");
  CHECK(eventsToWait(*ops[3]) == std::vector<std::string>{"ev0"});
  CHECK(streamPriority(*ops[3]) == -1);
  CHECK(schedulingPriority(*ops[3]) == 3);
  CHECK(eventToRecord(*ops[0]).empty());
  setExecutionStream(*ops[0], *job, "calc");
  setEventToRecord(*ops[0], *job, "e9");
  setEventsToWait(*ops[0], *job, {"a", "b"});
  setStreamPriority(*ops[0], *job, 1);
  setSchedulingPriority(*ops[0], *job, 7);
  setPhase(*ops[0], *job, Phase::Loss);
  CHECK(ops[0]->executionStream() == "calc");
  CHECK(eventsToWait(*ops[0]) == std::vector<std::string>{"a", "b"});
  CHECK(schedulingPriority(*ops[0]) == 7);
  CHECK(phaseOf(*ops[0]) == Phase::Loss);
}

TEST_CASE("a removed var's name is free: lookups miss it, a new var of the name takes it", "[ir][order]") {
  auto job = loadJobFromText(kOrderJob, "t.json");
  Block& b = *job->programs[0]->blocks[0];
  Op* scale = &*std::next(b.ops.begin(), 2);
  Op* allreduce = &*std::next(b.ops.begin(), 3);
  Var* d = b.findLocal("d");
  REQUIRE(d);
  auto named = [](std::string_view name, std::vector<int64_t> shape) {
    Var v;
    v.name = name;
    v.shape = shape;
    return v;
  };
  CHECK(b.addVarIfNew(named("d", {4, 8})) == nullptr);  // taken
  b.eraseOp(allreduce);
  b.eraseOp(scale);
  b.removeVar(d);
  CHECK(b.findLocal("d") == nullptr);
  CHECK(b.lookup("d") == nullptr);
  Var* again = b.addVarIfNew(named("d", {2, 2}));
  REQUIRE(again);
  CHECK(again != d);
  CHECK(b.findLocal("d") == again);
  CHECK(again->shape.size() == 2);
  CHECK(d->removed);
  CHECK_FALSE(again->removed);
}
