// sp-opt gen mlp|gpt|llama ...: write a tensor/sequence-parallel training job (lib/gen).
#include <iostream>
#include <memory>

#include "command.h"
#include "gen/generate.h"
#include "io/atomic_file.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ops/translate.h"
#include "support/error.h"

namespace spopt::app::cmd_gen {
namespace {

struct Options {
  gen::GenOptions gen;
  std::string model = "mlp", dtype = "float32", dialect = "legacy", optimizer = "sgd", amp = "none", output;
  bool no_backward = false;
  CLI::Option* optimizer_flag = nullptr;
};

int runGen(Options& o) {
  o.gen.model = o.model == "gpt" ? gen::Model::Gpt : o.model == "llama" ? gen::Model::Llama : gen::Model::Mlp;
  o.gen.dtype = *parseDType(o.dtype);
  // PIR: the legacy program, translated as Paddle's translator would (ops/translate.h).
  bool pir = o.dialect == "pir";
  o.gen.dialect = o.dialect == "current" ? gen::Dialect::Current : gen::Dialect::Legacy;
  o.gen.backward = !o.no_backward;
  o.gen.amp = o.amp == "bf16";
  // Without a backward pass there is nothing to optimise, unless --optimizer says otherwise.
  bool optimize = o.gen.backward || o.optimizer_flag->count() > 0;
  o.gen.optimizer = !optimize || o.optimizer == "none" ? gen::Optimizer::None
                    : o.optimizer == "adamw"          ? gen::Optimizer::AdamW
                                                      : gen::Optimizer::Sgd;
  gen::checkOptions(o.gen);
  // PIR passes check_finite_and_unscale's gradients as one vector, which replay holds as equal
  // parts: the gradients of a model's parameters are not.
  AtomicFile out(o.output);
  gen::GenStats stats;
  if (pir) {
    auto job = loadJobFromText(gen::generateJobText(o.gen), o.output);
    translateToPir(*job);
    writeJob(*job, out);
    stats.ranks = int64_t(job->programs.size());
    stats.ops = stats.vars = 0;
    for (const auto& p : job->programs)
      for (const auto& b : p->blocks) {
        stats.ops += int64_t(b->ops.size());
        for (const auto& v : b->vars) stats.vars += v->removed ? 0 : 1;
      }
  } else {
    stats = gen::generateJob(o.gen, out);
  }
  out.finish();
  if (o.output != "-")
    std::cout << o.output << ": " << stats.ranks << " ranks, " << stats.ops << " ops, " << stats.vars << " vars\n";
  flushStdout();  // the message reached stdout, or the job does not appear
  out.publish();
  return kExitOk;
}

const Registrar reg{{"gen", "Generate a tensor/sequence-parallel training job (mlp, gpt or llama) in format v1",
                     "sp-opt gen mlp --tp 4 --layers 2 --sequence-parallel -o mlp_tp4_sp.json", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       auto& g = o->gen;
                       sub.add_option("model", o->model,
                                      "mlp (Paddle's sequence-parallel test), gpt (decoder layers) or llama (RMSNorm, rotary, SwiGLU)")
                           ->required()
                           ->check(CLI::IsMember({"mlp", "gpt", "llama"}));
                       sub.add_option("--tp", g.tp, "Tensor-parallel degree T")->capture_default_str();
                       sub.add_option("--dp", g.dp, "Data-parallel degree D (world = T x D)")->capture_default_str();
                       sub.add_option("--layers", g.layers, "Layers")->capture_default_str();
                       sub.add_option("--batch", g.batch, "Global batch")->capture_default_str();
                       sub.add_option("--seq", g.seq, "Sequence length")->capture_default_str();
                       sub.add_option("--hidden", g.hidden, "Hidden size")->capture_default_str();
                       sub.add_option("--heads", g.heads, "Attention heads (gpt)")->capture_default_str();
                       sub.add_option("--ffn", g.ffn, "Feed-forward size (default 4 x hidden)");
                       sub.add_option("--vocab", g.vocab,
                                      "Vocabulary: token ids, vocab-parallel embedding, LM head and cross-entropy (gpt; llama defaults to 64)");
                       sub.add_option("--dtype", o->dtype, "Data type")
                           ->check(CLI::IsMember({"float32", "float64", "float16", "bfloat16"}))
                           ->capture_default_str();
                       sub.add_option("--amp", o->amp,
                                      "none, or bf16: bfloat16 compute from float32 master weights, loss scaling, float32 update")
                           ->check(CLI::IsMember({"none", "bf16"}))
                           ->capture_default_str();
                       sub.add_flag("--sequence-parallel", g.sequence_parallel,
                                    "Shard activations along the sequence between tensor-parallel regions");
                       sub.add_option("--dialect", o->dialect,
                                      "legacy (c_* collectives), current (all_*) or pir (Paddle 3: pd_op.*, as its translator writes it)")
                           ->check(CLI::IsMember({"legacy", "current", "pir"}))
                           ->capture_default_str();
                       sub.add_flag("--no-backward", o->no_backward, "Forward pass only (implies --optimizer none)");
                       o->optimizer_flag = sub.add_option("--optimizer", o->optimizer, "none, sgd or adamw")
                                               ->check(CLI::IsMember({"none", "sgd", "adamw"}))
                                               ->capture_default_str();
                       sub.add_option("--dropout", g.dropout, "Dropout probability")->capture_default_str();
                       sub.add_option("-o,--output", o->output, "Output job file (- for stdout)")->required();
                       return [o] { return runGen(*o); };
                     },
                     /*reads_input=*/false}};

}  // namespace
}  // namespace spopt::app::cmd_gen
