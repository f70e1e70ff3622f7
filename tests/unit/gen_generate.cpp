// sp-opt gen: the jobs it writes are valid, lossless under load+write, deterministic, and shard
// the same model whatever T and D are.
#include <catch2/catch.hpp>

#include <array>
#include <map>
#include <set>

#include "analysis/collectives.h"
#include "gen/generate.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ir/json_text.h"
#include "support/error.h"
#include "verify/verifier.h"

using namespace spopt;
using gen::GenOptions;

namespace {

GenOptions opts(gen::Model m, int64_t tp, int64_t dp, bool sp, gen::Dialect d = gen::Dialect::Legacy) {
  GenOptions o;
  o.model = m;
  o.tp = tp;
  o.dp = dp;
  o.sequence_parallel = sp;
  o.dialect = d;
  o.batch = 4;
  return o;
}

// gpt with the language-model ends (--vocab 32) and adamw.
GenOptions lmGpt(int64_t tp, int64_t dp, bool sp, gen::Dialect d = gen::Dialect::Legacy) {
  GenOptions o = opts(gen::Model::Gpt, tp, dp, sp, d);
  o.vocab = 32;
  o.optimizer = gen::Optimizer::AdamW;
  return o;
}

std::vector<GenOptions> variety() {
  std::vector<GenOptions> all;
  for (auto d : {gen::Dialect::Legacy, gen::Dialect::Current})
    for (int64_t tp : {1, 2, 4})
      for (int64_t dp : {1, 2})
        for (bool sp : {false, true}) {
          for (auto m : {gen::Model::Mlp, gen::Model::Gpt, gen::Model::Llama}) all.push_back(opts(m, tp, dp, sp, d));
          all.push_back(lmGpt(tp, dp, sp, d));
          GenOptions amp = lmGpt(tp, dp, sp, d);
          amp.amp = true;
          all.push_back(amp);
          amp.model = gen::Model::Llama;
          all.push_back(amp);
        }
  return all;
}

std::string describe(const GenOptions& o) {
  const char* model = o.model == gen::Model::Mlp ? "mlp" : o.model == gen::Model::Gpt ? "gpt" : "llama";
  return std::string(model) + (o.vocab ? " vocab " + std::to_string(o.vocab) : "") + (o.amp ? " amp" : "") + " tp" + std::to_string(o.tp) + " dp" +
         std::to_string(o.dp) + (o.sequence_parallel ? " sp" : "") + (o.dialect == gen::Dialect::Current ? " current" : "");
}

std::unique_ptr<Job> load(const std::string& text) { return loadJobFromText(text, "gen.json"); }

const Program& rank(const Job& job, int64_t r) { return *job.program(r); }

}  // namespace

TEST_CASE("generated jobs verify and round-trip byte for byte through the loader and writer", "[gen]") {
  for (const auto& o : variety()) {
    INFO(describe(o));
    std::string text = gen::generateJobText(o);
    auto job = load(text);
    auto problems = verifyJob(*job);
    for (const auto& p : problems) INFO(p.line());
    CHECK(problems.empty());
    CHECK(jobToString(*job) == text);
  }
}

TEST_CASE("same options give the same bytes", "[gen]") {
  auto o = opts(gen::Model::Gpt, 2, 2, true);
  CHECK(gen::generateJobText(o) == gen::generateJobText(o));
}

TEST_CASE("mlp --tp 4 --layers 2 --sequence-parallel has Paddle's pre-fusion collectives on rank 2", "[gen]") {
  auto o = opts(gen::Model::Mlp, 4, 1, true);
  o.batch = 2;
  auto job = load(gen::generateJobText(o));
  const Program& p = rank(*job, 2);
  std::map<CollectiveKind, int> kinds;
  std::set<int64_t> rings;
  int reshard_splits = 0, fusable = 0, norm_grad_sums = 0;
  for (const Op& op : p.blocks[0]->ops) {
    if (auto c = asCollective(op)) {
      kinds[c->kind]++;
      rings.insert(c->ring_id);
      CHECK(op.attrs.getInt("nranks") == 4);
      if (c->kind == CollectiveKind::AllReduce) {
        const Var* out = op.out(c->out_slot);
        bool into_split = out->readers.size() == 1 && out->readers[0]->type == "split";
        fusable += into_split;
        if (!into_split) {
          std::string in(op.in(c->in_slot)->name);
          CHECK(in.rfind("layer_norm_", 0) == 0);
          CHECK(in.size() > 9);
          CHECK(in.substr(in.size() - 9) == ".w_0@GRAD");
          norm_grad_sums++;
        }
      }
    }
    if (op.type == "split" && op.attrs.getString("op_namescope")->find("/auto_parallel/reshard") != std::string::npos) {
      reshard_splits++;
      CHECK(op.attrs.getInt("axis") == 0);
      CHECK(op.output("Out")->args.size() == 4);
    }
  }
  CHECK(kinds[CollectiveKind::AllGather] == 4);
  CHECK(kinds[CollectiveKind::AllReduce] == 8);
  CHECK(fusable == 4);
  CHECK(norm_grad_sums == 4);
  CHECK(reshard_splits == 4);
  CHECK(rings == std::set<int64_t>{0});
}

TEST_CASE("each rank consumes exactly its own chunk of every reshard split", "[gen]") {
  for (bool current : {false, true}) {
    auto o = opts(gen::Model::Gpt, 4, 2, true, current ? gen::Dialect::Current : gen::Dialect::Legacy);
    auto job = load(gen::generateJobText(o));
    int splits = 0;
    for (const auto& p : job->programs) {
      int64_t position = p->rank % 4;  // rank = d * T + t
      for (const Op& op : p->blocks[0]->ops) {
        if (op.type != "split" || op.attrs.getInt("axis") != 0) continue;
        const auto& outs = op.output("Out")->args;
        for (size_t i = 0; i < outs.size(); ++i) {
          INFO("rank " << p->rank << " chunk " << i);
          CHECK(outs[i].var->readers.empty() == (int64_t(i) != position));
        }
        splits++;
      }
      // The tensor-parallel ring of rank r holds r at its position.
      for (const Op& op : p->blocks[0]->ops)
        if (auto c = asCollective(op); c && c->kind == CollectiveKind::AllGather)
          CHECK(job->group(c->ring_id)->positionOf(p->rank) == position);
    }
    CHECK(splits == 8 * 2 * 2 * 2);  // ranks x layers x (attention, mlp) x (forward, backward)
  }
}

namespace {
// Persistable vars of rank 0 by name: the global shape (local dims times the mesh dims sharding them).
std::map<std::string, std::vector<int64_t>> globalParams(const Job& job) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& v : job.programs[0]->blocks[0]->vars) {
    if (!v->persistable) continue;
    auto mesh = rawMember(*v->dist_attr.find("process_mesh"), "shape");
    auto mesh_shape = rawToIntArray(*mesh);
    auto mapping = v->dimsMapping();
    std::vector<int64_t> shape = v->shape;
    for (size_t i = 0; i < shape.size(); ++i)
      if (mapping[i] >= 0) shape[i] *= (*mesh_shape)[size_t(mapping[i])];
    out[std::string(v->name)] = shape;
  }
  return out;
}
}  // namespace

TEST_CASE("parameters have the same names and global shapes whatever T, D and sequence parallelism", "[gen]") {
  auto make = [](int m, int64_t tp, int64_t dp, bool sp) {
    return m == 3 ? lmGpt(tp, dp, sp) : opts(std::array{gen::Model::Mlp, gen::Model::Gpt, gen::Model::Llama}[size_t(m)], tp, dp, sp);
  };
  for (int m = 0; m < 4; ++m) {
    auto reference = globalParams(*load(gen::generateJobText(make(m, 1, 1, false))));
    CHECK(reference.count("learning_rate_0"));
    if (m >= 2) CHECK(reference.count("embedding_0.w_0"));
    for (auto [tp, dp, sp] : {std::tuple{4, 1, false}, {4, 1, true}, {2, 2, true}, {1, 2, false}}) {
      INFO(describe(make(m, tp, dp, sp)));
      CHECK(globalParams(*load(gen::generateJobText(make(m, tp, dp, sp)))) == reference);
    }
  }
}

TEST_CASE("the input is one global tensor sharded by sequence over tp (with SP) and by batch over dp", "[gen]") {
  auto job = load(gen::generateJobText(opts(gen::Model::Mlp, 2, 2, true)));
  const Var* x = job->programs[3]->blocks[0]->lookup("input");
  REQUIRE(x);
  CHECK(x->shape == std::vector<int64_t>{4, 2, 16});  // seq 8 / 2, batch 4 / 2, hidden 16
  CHECK(x->dimsMapping() == std::vector<int64_t>{1, 0, -1});  // mesh [dp, mp]
}

TEST_CASE("data parallelism sums every parameter gradient over its own ring before sgd", "[gen]") {
  auto job = load(gen::generateJobText(opts(gen::Model::Mlp, 2, 2, false)));
  for (const auto& p : job->programs) {
    int64_t dp_ring = 2 + p->rank % 2;
    int sums = 0, sgd = 0;
    for (const Op& op : p->blocks[0]->ops) {
      auto c = asCollective(op);
      if (c && c->ring_id == dp_ring) {
        CHECK(sgd == 0);
        CHECK(op.in(c->in_slot) == op.out(c->out_slot));
        sums++;
      }
      sgd += op.type == "sgd";
    }
    CHECK(sums == 8);
    CHECK(sgd == 8);
  }
}

TEST_CASE("sizes that cannot be split are bad input", "[gen]") {
  auto bad = [](auto edit) {
    GenOptions o;
    edit(o);
    return o;
  };
  std::vector<std::pair<GenOptions, std::string>> cases = {
      {bad([](GenOptions& o) { o.layers = 0; }), "--layers must be at least 1"},
      {bad([](GenOptions& o) { o.tp = 3; }), "--tp 3 must divide --ffn 64"},
      {bad([](GenOptions& o) { o.tp = 16; o.ffn = 64; o.sequence_parallel = true; }), "--tp 16 must divide --seq 8"},
      {bad([](GenOptions& o) { o.model = gen::Model::Gpt; o.tp = 8; }), "--tp 8 must divide --heads 4"},
      {bad([](GenOptions& o) { o.model = gen::Model::Gpt; o.heads = 3; }), "--heads 3 must divide --hidden 16"},
      {bad([](GenOptions& o) { o.dp = 4; }), "--dp 4 must divide --batch 2"},
      {bad([](GenOptions& o) { o.model = gen::Model::Gpt; o.tp = 4; o.vocab = 50; }), "--tp 4 must divide --vocab 50"},
      {bad([](GenOptions& o) { o.vocab = 32; }), "--vocab is for gpt and llama, not mlp"},
      {bad([](GenOptions& o) { o.model = gen::Model::Llama; o.heads = 16; }), "--hidden / --heads = 1 must be even"},
      {bad([](GenOptions& o) { o.model = gen::Model::Llama; o.optimizer = gen::Optimizer::AdamW; o.backward = false; }),
       "--optimizer adamw needs the backward pass"},
      {bad([](GenOptions& o) { o.amp = true; o.dtype = DType::Float64; }), "--amp bf16 keeps float32 master weights"},
      {bad([](GenOptions& o) { o.dropout = 1.0; }), "--dropout must be in [0, 1)"},
      {bad([](GenOptions& o) { o.seq = 1 << 24; o.hidden = 1 << 24; o.ffn = 1 << 24; o.batch = 1 << 24; }), "more than 2^59"},
      {bad([](GenOptions& o) { o.hidden = 1 << 25; }), "--hidden 33554432 is larger than 16777216"},
  };
  for (const auto& [o, message] : cases) {
    INFO(message);
    try {
      gen::checkOptions(o);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find(message) != std::string::npos);
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
  }
}
