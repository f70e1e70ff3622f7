// Input filling: every sharded input is the rank's slice of ONE global tensor (the rule in
// lib/runtime/inputs.h), replicated inputs agree on every rank, parameters are scaled.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "io/loader.h"
#include "runtime/inputs.h"
#include "support/error.h"

using namespace spopt;
using namespace spopt::rt;

namespace {

// A one-rank job declaring `vars_json` in block 0 of rank `rank`'s program.
std::unique_ptr<Job> jobWithVars(const std::string& vars_json, int64_t world = 4, int64_t rank = 0) {
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":)" + std::to_string(world) +
                     R"(,"process_groups":[],"programs":[{"rank":)" + std::to_string(rank) +
                     R"(,"blocks":[{"idx":0,"parent_idx":-1,"vars":[)" + vars_json + R"(],"ops":[]}]}]})";
  return loadJobFromText(text, "t.json");
}

const Var& var0(const Job& j) { return *j.programs[0]->blocks[0]->vars[0]; }

}  // namespace

TEST_CASE("elementUniform is in -1 (inclusive) to 1 (exclusive), depends on seed, name and index", "[runtime][inputs]") {
  double lo = 1, hi = -1;
  for (uint64_t g = 0; g < 20000; ++g) {
    double u = elementUniform(7, "x", g);
    REQUIRE(u >= -1.0);
    REQUIRE(u < 1.0);
    lo = std::min(lo, u), hi = std::max(hi, u);
  }
  CHECK(lo < -0.99);
  CHECK(hi > 0.99);
  CHECK(elementUniform(7, "x", 3) != elementUniform(8, "x", 3));
  CHECK(elementUniform(7, "x", 3) != elementUniform(7, "y", 3));
  CHECK(elementUniform(7, "x", 3) != elementUniform(7, "x", 4));
}

TEST_CASE("a var sharded on a 1-d mesh is its rank's rows of the global tensor", "[runtime][inputs]") {
  auto global = jobWithVars(R"({"name":"x","shape":[8,3],"dtype":"float32"})");
  Tensor g = fillInput(var0(*global), 0, 42);
  for (int64_t rank = 0; rank < 4; ++rank) {
    auto sharded = jobWithVars(R"({"name":"x","shape":[2,3],"dtype":"float32","dist_attr":{"process_mesh":{"shape":[4],"process_ids":[0,1,2,3]},"dims_mapping":[0,-1]}})",
                               4, rank);
    Tensor t = fillInput(var0(*sharded), rank, 42);
    REQUIRE(std::memcmp(t.raw(), g.data<float>() + rank * 6, 6 * sizeof(float)) == 0);
  }
}

TEST_CASE("a var sharded on a 2-d mesh with permuted process ids", "[runtime][inputs]") {
  // Mesh [2,2] holding processes [3,1,0,2]: rank 0 is at index 2 = coordinate (1,0).
  // dims_mapping [1,0]: tensor dim 0 split by mesh dim 1, dim 1 by mesh dim 0. Local [2,3], global [4,6].
  auto global = jobWithVars(R"({"name":"h","shape":[4,6],"dtype":"float64"})");
  Tensor g = fillInput(var0(*global), 0, 1);
  const int64_t ids[4] = {3, 1, 0, 2};
  for (int64_t index = 0; index < 4; ++index) {
    int64_t rank = ids[index], c0 = index / 2, c1 = index % 2;
    auto sharded = jobWithVars(R"({"name":"h","shape":[2,3],"dtype":"float64","dist_attr":{"process_mesh":{"shape":[2,2],"process_ids":[3,1,0,2]},"dims_mapping":[1,0]}})",
                               4, rank);
    ShardLayout l = shardLayout(var0(*sharded), rank);
    CHECK(l.global_shape == std::vector<int64_t>{4, 6});
    CHECK(l.offset == std::vector<int64_t>{c1 * 2, c0 * 3});
    Tensor t = fillInput(var0(*sharded), rank, 1);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) REQUIRE(t.data<double>()[i * 3 + j] == g.data<double>()[(c1 * 2 + i) * 6 + c0 * 3 + j]);
  }
}

TEST_CASE("replicated vars are equal on every rank, dims_mapping all -1 is replicated", "[runtime][inputs]") {
  auto plain = jobWithVars(R"({"name":"r","shape":[5],"dtype":"float32"})");
  auto mapped = jobWithVars(R"({"name":"r","shape":[5],"dtype":"float32","dist_attr":{"process_mesh":{"shape":[2],"process_ids":[0,1]},"dims_mapping":[-1]}})", 2, 1);
  Tensor a = fillInput(var0(*plain), 0, 3), b = fillInput(var0(*plain), 3, 3), c = fillInput(var0(*mapped), 1, 3);
  CHECK(std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
  CHECK(std::memcmp(a.raw(), c.raw(), a.bytes()) == 0);
}

TEST_CASE("persistable vars are scaled by 1/sqrt(global last dim), ints and bools", "[runtime][inputs]") {
  auto data = jobWithVars(R"({"name":"w","shape":[3,16],"dtype":"float64"})");
  auto param = jobWithVars(R"({"name":"w","shape":[3,4],"dtype":"float64","persistable":true,"dist_attr":{"process_mesh":{"shape":[4],"process_ids":[0,1,2,3]},"dims_mapping":[-1,0]}})");
  Tensor d = fillInput(var0(*data), 0, 0), p = fillInput(var0(*param), 0, 0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) REQUIRE(p.data<double>()[i * 4 + j] == Approx(d.data<double>()[i * 16 + j] / 4.0));
  auto ints = jobWithVars(R"({"name":"ids","shape":[100],"dtype":"int64"},{"name":"m","shape":[100],"dtype":"bool"})");
  Tensor t = fillInput(var0(*ints), 0, 0);
  for (int64_t i = 0; i < 100; ++i) REQUIRE((t.data<int64_t>()[i] >= 0 && t.data<int64_t>()[i] < 8));
  Tensor m = fillInput(*ints->programs[0]->blocks[0]->vars[1], 0, 0);
  int ones = 0;
  for (int64_t i = 0; i < 100; ++i) ones += m.data<uint8_t>()[i];
  CHECK((ones > 20 && ones < 80));
}

TEST_CASE("a rank outside the var's mesh or a bad dims_mapping is bad input", "[runtime][inputs]") {
  auto outside = jobWithVars(R"({"name":"x","shape":[2],"dtype":"float32","dist_attr":{"process_mesh":{"shape":[2],"process_ids":[1,2]},"dims_mapping":[0]}})");
  CHECK_THROWS_WITH(fillInput(var0(*outside), 0, 0), Catch::Contains("rank 0 is not in the var's process_mesh"));
  auto bad = jobWithVars(R"({"name":"x","shape":[2,2],"dtype":"float32","dist_attr":{"process_mesh":{"shape":[2],"process_ids":[0,1]},"dims_mapping":[0]}})");
  CHECK_THROWS_AS(fillInput(var0(*bad), 0, 0), InputError);
}

TEST_CASE("sliceGlobal copies the rank's block and converts dtypes", "[runtime][inputs]") {
  Tensor g(DType::Float64, {4, 4});
  for (int i = 0; i < 16; ++i) g.data<double>()[i] = i;
  Tensor t = sliceGlobal(g, ShardLayout{{4, 4}, {2, 2}}, {2, 2}, DType::Float32);
  CHECK(t.data<float>()[0] == 10.0f);
  CHECK(t.data<float>()[1] == 11.0f);
  CHECK(t.data<float>()[2] == 14.0f);
  CHECK(t.data<float>()[3] == 15.0f);
}

TEST_CASE("ids get the range of the table they index, labels that of the classes through a view", "[runtime][inputs]") {
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[],"programs":[{"rank":0,
    "blocks":[{"idx":0,"parent_idx":-1,"vars":[
      {"name":"ids","shape":[64,32],"dtype":"int64"},{"name":"w","shape":[1000,4],"dtype":"float32","persistable":true},
      {"name":"e","shape":[64,32,4],"dtype":"float32"},
      {"name":"labels","shape":[64,32],"dtype":"int64"},{"name":"l3","shape":[64,32,1],"dtype":"int64"},
      {"name":"logits","shape":[64,32,50],"dtype":"float32"},{"name":"sm","shape":[64,32,50],"dtype":"float32"},
      {"name":"loss","shape":[64,32,1],"dtype":"float32"},{"name":"other","shape":[64],"dtype":"int64"}],
    "ops":[
      {"type":"lookup_table_v2","inputs":{"Ids":["ids"],"W":["w"]},"outputs":{"Out":["e"]},"attrs":{}},
      {"type":"unsqueeze2","inputs":{"X":["labels"]},"outputs":{"Out":["l3"]},"attrs":{"axes":[2]}},
      {"type":"softmax_with_cross_entropy","inputs":{"Logits":["logits"],"Label":["l3"]},
       "outputs":{"Softmax":["sm"],"Loss":["loss"]},"attrs":{}}]}]}]})";
  auto job = loadJobFromText(text, "t.json");
  const Block& b = *job->programs[0]->blocks[0];
  auto range = [&](std::string_view name) {
    Tensor t = fillInput(*b.lookup(name), 0, 3);
    const int64_t* p = t.data<int64_t>();
    return std::pair{*std::min_element(p, p + t.numel()), *std::max_element(p, p + t.numel())};
  };
  auto [ids_lo, ids_hi] = range("ids");
  CHECK(ids_lo >= 0);
  CHECK(ids_hi < 1000);
  CHECK(ids_hi > 900);  // spread over the table, not [0, 8)
  auto [labels_lo, labels_hi] = range("labels");
  CHECK(labels_lo >= 0);
  CHECK(labels_hi == 49);
  CHECK(range("other").second == 7);  // no op says: [0, 8) as before
  CHECK(valueDomain(*b.lookup("ids")).index_bound == 1000);
}

TEST_CASE("rotary position ids get the rows of a [1, seq, 1, head_dim] table, not of a [seq, head_dim] one", "[runtime][inputs]") {
  auto job = [](const char* table) {
    return loadJobFromText(std::string(R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[],"programs":[{"rank":0,
      "blocks":[{"idx":0,"parent_idx":-1,"vars":[
        {"name":"q","shape":[2,64,1,4],"dtype":"float32"},{"name":"oq","shape":[2,64,1,4],"dtype":"float32"},
        {"name":"pos","shape":[2,64],"dtype":"int64"},{"name":"s","shape":)") + table + R"(,"dtype":"float32"},
        {"name":"c","shape":)" + table + R"(,"dtype":"float32"}],
      "ops":[{"type":"fused_rotary_position_embedding","inputs":{"q":["q"],"sin":["s"],"cos":["c"],"position_ids":["pos"]},
              "outputs":{"out_q":["oq"]},"attrs":{}}]}]}]})", "t.json");
  };
  auto four = job("[1,100,1,4]");
  CHECK(valueDomain(*four->programs[0]->blocks[0]->lookup("pos")).index_bound == 100);
  Tensor t = fillInput(*four->programs[0]->blocks[0]->lookup("pos"), 0, 3);
  CHECK(*std::max_element(t.data<int64_t>(), t.data<int64_t>() + t.numel()) > 8);
  CHECK(*std::max_element(t.data<int64_t>(), t.data<int64_t>() + t.numel()) < 100);
  auto two = job("[100,4]");  // no dim -3: the default [0, 8)
  Tensor u = fillInput(*two->programs[0]->blocks[0]->lookup("pos"), 0, 3);
  CHECK(*std::max_element(u.data<int64_t>(), u.data<int64_t>() + u.numel()) == 7);
}

// Llama's callers pass sin / cos of position x base^(-2j/d), the d/2 frequencies twice over
// (halves); Paddle's default pairs neighbours, j = i / 2. Replay feeds those tables, in any layout.
TEST_CASE("rotary sin and cos inputs are the tables of positions, halves or neighbours", "[runtime][inputs]") {
  auto job = [](const char* table, const char* attrs) {
    return loadJobFromText(std::string(R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[],"programs":[{"rank":0,
      "blocks":[{"idx":0,"parent_idx":-1,"vars":[
        {"name":"q","shape":[2,6,1,4],"dtype":"float32"},{"name":"oq","shape":[2,6,1,4],"dtype":"float32"},
        {"name":"s","shape":)") + table + R"(,"dtype":"float32","persistable":true},
        {"name":"c","shape":)" + table + R"(,"dtype":"float64"}],
      "ops":[{"type":"fused_rotary_position_embedding","inputs":{"q":["q"],"sin":["s"],"cos":["c"]},
              "outputs":{"out_q":["oq"]},"attrs":)" + attrs + "}]}]}]}", "t.json");
  };
  // d = 4: frequencies 1 and 100^-1 (base 10000).
  const double f[2] = {1.0, 0.01};
  for (const char* table : {"[6,4]", "[1,6,1,4]"}) {
    auto halves = job(table, R"({"use_neox_rotary_style":false,"rotary_emb_base":10000.0})");
    Tensor s = fillInput(*halves->programs[0]->blocks[0]->lookup("s"), 0, 3);
    Tensor c = fillInput(*halves->programs[0]->blocks[0]->lookup("c"), 0, 3);
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t i = 0; i < 4; ++i) {
        CHECK(s.data<float>()[p * 4 + i] == float(std::sin(double(p) * f[i % 2])));  // no parameter scaling
        CHECK(c.data<double>()[p * 4 + i] == std::cos(double(p) * f[i % 2]));
      }
    auto pairs = job(table, "{}");  // Paddle's defaults: neighbours, base 10000
    Tensor n = fillInput(*pairs->programs[0]->blocks[0]->lookup("c"), 0, 3);
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t i = 0; i < 4; ++i) CHECK(n.data<double>()[p * 4 + i] == std::cos(double(p) * f[i / 2]));
  }
}

// A stream sync listing many vars (Paddle's c_sync_calc_stream before a fused all-reduce) views
// Out[i] as X[i]: only a0's own reader bounds a0. 150 listed vars: a walk from each var into every
// other listed one (depth 8) would not finish.
TEST_CASE("a view over a list of vars passes each its own domain, once", "[runtime][inputs]") {
  const int n = 150;
  std::string vars = R"({"name":"w","shape":[1000,4],"dtype":"float32","persistable":true},{"name":"e","shape":[3,4],"dtype":"float32"},
    {"name":"v","shape":[50,4],"dtype":"float32","persistable":true},{"name":"f","shape":[3,4],"dtype":"float32"})";
  std::string xs, outs;
  for (int i = 0; i < n; ++i) {
    vars += R"(,{"name":"a)" + std::to_string(i) + R"(","shape":[3],"dtype":"int64"},{"name":"b)" + std::to_string(i) +
            R"(","shape":[3],"dtype":"int64"})";
    xs += std::string(i ? "," : "") + "\"a" + std::to_string(i) + "\"";
    outs += std::string(i ? "," : "") + "\"b" + std::to_string(i) + "\"";
  }
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[],"programs":[{"rank":0,
    "blocks":[{"idx":0,"parent_idx":-1,"vars":[)" + vars + R"(],"ops":[
      {"type":"c_sync_calc_stream","inputs":{"X":[)" + xs + R"(]},"outputs":{"Out":[)" + outs + R"(]},"attrs":{}},
      {"type":"c_sync_comm_stream","inputs":{"X":[)" + outs + R"(]},"outputs":{"Out":[)" + outs + R"(]},"attrs":{"ring_id":0}},
      {"type":"lookup_table_v2","inputs":{"Ids":["b0"],"W":["w"]},"outputs":{"Out":["e"]},"attrs":{}},
      {"type":"lookup_table_v2","inputs":{"Ids":["b1"],"W":["v"]},"outputs":{"Out":["f"]},"attrs":{}}]}]}]})";
  auto job = loadJobFromText(text, "t.json");
  const Block& b = *job->programs[0]->blocks[0];
  CHECK(valueDomain(*b.lookup("a0")).index_bound == 1000);
  CHECK(valueDomain(*b.lookup("a1")).index_bound == 50);
  CHECK(valueDomain(*b.lookup("a2")).index_bound == 8);  // no reader bounds it
  CHECK(valueDomain(*b.lookup("a149")).index_bound == 8);
}

TEST_CASE("a vocab shard's ids and labels range over the global vocab its ops name", "[runtime][inputs]") {
  // Two ranks' halves of an 8-id table, a c_embedding and its grad reading the ids, the
  // vocab-parallel loss reading the labels; vocab_size written or not.
  auto job = [](const char* vocab_size) {
    std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[{"ring_id":0,"ranks":[0]}],
      "programs":[{"rank":0,"blocks":[{"idx":0,"parent_idx":-1,"vars":[
      {"name":"ids","shape":[4096],"dtype":"int64"},{"name":"w","shape":[4,2],"dtype":"float32"},
      {"name":"e","shape":[4096,2],"dtype":"float32"},{"name":"dw","shape":[4,2],"dtype":"float32"},
      {"name":"labels","shape":[4096,1],"dtype":"int64"},{"name":"logits","shape":[4096,3],"dtype":"float32"},
      {"name":"sm","shape":[4096,3],"dtype":"float32"},{"name":"loss","shape":[4096,1],"dtype":"float32"}],
    "ops":[
      {"type":"c_embedding","inputs":{"W":["w"],"Ids":["ids"]},"outputs":{"Out":["e"]},"attrs":{"start_index":4)" +
                       std::string(vocab_size) + R"(}},
      {"type":"c_embedding_grad","inputs":{"W":["w"],"Ids":["ids"],"Out@GRAD":["e"]},"outputs":{"W@GRAD":["dw"]},"attrs":{"start_index":4}},
      {"type":"c_softmax_with_cross_entropy","inputs":{"Logits":["logits"],"Label":["labels"]},
       "outputs":{"Softmax":["sm"],"Loss":["loss"]},"attrs":{"ring_id":0,"rank":0,"nranks":5}}]}]}]})";
    return loadJobFromText(text, "t.json");
  };
  auto with = job(R"(,"vocab_size":8)"), without = job("");
  auto bound = [](const Job& j, std::string_view var) { return valueDomain(*j.programs[0]->blocks[0]->lookup(var)).index_bound; };
  CHECK(bound(*with, "ids") == 8);      // c_embedding's vocab_size outranks its grad's shard rows
  CHECK(bound(*without, "ids") == 4);   // nobody says the vocab: the shard's rows
  CHECK(bound(*with, "labels") == 15);  // 3 classes x nranks 5
  Tensor t = fillInput(*with->programs[0]->blocks[0]->lookup("ids"), 0, 3);
  CHECK(*std::max_element(t.data<int64_t>(), t.data<int64_t>() + t.numel()) == 7);
}

TEST_CASE("a large input is filled in shares of rows that cross its leading dims, each element by its global index", "[runtime][inputs]") {
  // Local [3,70,1000] of global [3,140,1000] (dim 1 split over 2 ranks): 210 rows of 1000, filled
  // in shares of 65 rows, so shares start inside a dim-0 slab.
  for (int64_t rank = 0; rank < 2; ++rank) {
    auto job = jobWithVars(R"({"name":"big","shape":[3,70,1000],"dtype":"float64","dist_attr":{"process_mesh":{"shape":[2],"process_ids":[0,1]},"dims_mapping":[-1,0,-1]}})",
                           2, rank);
    Tensor t = fillInput(var0(*job), rank, 5);
    size_t wrong = 0;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 70; ++j)
        for (int64_t k = 0; k < 1000; ++k) {
          const uint64_t g = uint64_t((i * 140 + rank * 70 + j) * 1000 + k);
          wrong += t.data<double>()[(i * 70 + j) * 1000 + k] != elementUniform(5, "big", g);
        }
    CHECK(wrong == 0);
  }
}
