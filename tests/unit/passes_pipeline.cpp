// The textual pipeline parser: syntax, typed options, defaults, and the exit-2 messages.
#include <catch2/catch.hpp>

#include "passes/pipeline.h"
#include "support/error.h"

using namespace spopt;

namespace {

class NoopPass : public Pass {
 public:
  bool run(Job&, PassContext&) override { return false; }
};

PassRegistry testRegistry() {
  PassRegistry r;
  r.add({"alpha", "first test pass",
         {{"flag", OptionKind::Bool, "false", "a bool"},
          {"count", OptionKind::Int, "3", "an int"},
          {"label", OptionKind::String, "none", "a string"},
          {"secret", OptionKind::Bool, "false", "hidden", true}},
         [](const OptionValues&) { return std::make_unique<NoopPass>(); }});
  r.add({"beta-2", "second test pass", {}, [](const OptionValues&) { return std::make_unique<NoopPass>(); }});
  return r;
}

std::string pipelineErrorOf(std::string_view text) {
  auto reg = testRegistry();
  try {
    parsePipeline(text, reg);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("empty text is the empty pipeline", "[passes][pipeline]") {
  auto reg = testRegistry();
  CHECK(parsePipeline("", reg).empty());
  CHECK(parsePipeline("  ", reg).empty());
}

TEST_CASE("passes in order with defaults filled in", "[passes][pipeline]") {
  auto reg = testRegistry();
  auto p = parsePipeline("beta-2, alpha ,beta-2", reg);
  REQUIRE(p.size() == 3);
  CHECK(p[0].info->name == "beta-2");
  CHECK(p[1].info->name == "alpha");
  CHECK(p[2].info->name == "beta-2");
  CHECK(p[1].options.getBool("flag") == false);
  CHECK(p[1].options.getInt("count") == 3);
  CHECK(p[1].options.getString("label") == "none");
  CHECK(pipelineText(p) == "beta-2,alpha,beta-2");
}

TEST_CASE("typed options", "[passes][pipeline]") {
  auto reg = testRegistry();
  auto p = parsePipeline("alpha{flag=true, count=-12,label=x y},beta-2,alpha{flag=0}", reg);
  REQUIRE(p.size() == 3);
  CHECK(p[0].options.getBool("flag"));
  CHECK(p[0].options.getInt("count") == -12);
  CHECK(p[0].options.getString("label") == "x y");
  CHECK_FALSE(p[2].options.getBool("flag"));
  CHECK(p[2].options.getInt("count") == 3);
  CHECK(pipelineText(p) == "alpha{flag=true,count=-12,label=x y},beta-2,alpha{flag=0}");
  // Hidden options parse like any other.
  CHECK(parsePipeline("alpha{secret=true}", reg)[0].options.getBool("secret"));
  // Empty braces are allowed.
  CHECK(parsePipeline("alpha{}", reg).size() == 1);
}

TEST_CASE("unknown passes and options list the valid names", "[passes][pipeline]") {
  CHECK(pipelineErrorOf("alpha,gamma") == "--passes: unknown pass \"gamma\"; valid passes: alpha, beta-2");
  CHECK(pipelineErrorOf("alpha{nope=1}") == "--passes: pass alpha has no option \"nope\"; valid options: flag, count, label");
  CHECK(pipelineErrorOf("beta-2{x=1}") == "--passes: pass beta-2 has no option \"x\"; valid options: (none)");
}

TEST_CASE("bad option values", "[passes][pipeline]") {
  CHECK(pipelineErrorOf("alpha{flag=yes}") == "--passes: option flag of pass alpha takes true or false, got \"yes\"");
  CHECK(pipelineErrorOf("alpha{count=1.5}") == "--passes: option count of pass alpha takes an integer, got \"1.5\"");
  CHECK(pipelineErrorOf("alpha{count=}") == "--passes: option count of pass alpha takes an integer, got \"\"");
  CHECK(pipelineErrorOf("alpha{count=99999999999999999999}").find("takes an integer") != std::string::npos);
  CHECK(pipelineErrorOf("alpha{flag}") == "--passes: option flag of pass alpha needs a value (flag=...)");
  CHECK(pipelineErrorOf("alpha{flag=true,flag=false}") == "--passes: option flag of pass alpha is given twice");
}

TEST_CASE("an int option with a minimum refuses smaller values in one line", "[passes][pipeline]") {
  PassRegistry reg;
  reg.add({"gamma", "a pass with a ranged option", {atLeast({"pieces", OptionKind::Int, "1", "pieces"}, 1)},
           [](const OptionValues&) { return std::make_unique<NoopPass>(); }});
  auto error = [&](std::string_view text) -> std::string {
    try {
      parsePipeline(text, reg);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(parsePipeline("gamma{pieces=1}", reg)[0].options.getInt("pieces") == 1);
  CHECK(parsePipeline("gamma{pieces=16}", reg)[0].options.getInt("pieces") == 16);
  CHECK(error("gamma{pieces=0}") == "--passes: option pieces of pass gamma takes an integer >= 1, got \"0\"");
  CHECK(error("gamma{pieces=-2}") == "--passes: option pieces of pass gamma takes an integer >= 1, got \"-2\"");
  CHECK(error("gamma{pieces=two}") == "--passes: option pieces of pass gamma takes an integer >= 1, got \"two\"");
}

TEST_CASE("syntax errors", "[passes][pipeline]") {
  CHECK(pipelineErrorOf("alpha,,beta-2").find("empty pass name") != std::string::npos);
  CHECK(pipelineErrorOf("alpha,").find("empty pass name") != std::string::npos);
  CHECK(pipelineErrorOf("alpha{flag=true").find("missing '}'") != std::string::npos);
  CHECK(pipelineErrorOf("alpha}").find("'}' without '{'") != std::string::npos);
  CHECK(pipelineErrorOf("alpha{flag={x}}").find("'{' inside options") != std::string::npos);
  CHECK(pipelineErrorOf("alpha{flag=true}x").find("text after '}'") != std::string::npos);
  CHECK(pipelineErrorOf("alpha{flag=true}{count=1}").find("two option lists") != std::string::npos);
  CHECK(pipelineErrorOf("Alpha").find("bad pass name \"Alpha\"; valid passes: alpha, beta-2") != std::string::npos);
}

TEST_CASE("the default pipeline parses against the built-in registry", "[passes][pipeline]") {
  auto p = parsePipeline(kDefaultPipeline, PassRegistry::builtin());
  REQUIRE_FALSE(p.empty());
  CHECK(pipelineText(p) == kDefaultPipeline);
}

namespace {
// A pass's options as a struct: each option's name is written once, in bindOption.
struct BoundOptions {
  bool fast = true;
  int64_t budget = -1;
  double cap = 0.25;
  std::string mode = "auto";
};
}  // namespace

TEST_CASE("options bound to a struct: kinds and defaults from the members, values bound back", "[passes][pipeline]") {
  std::vector<OptionSpec> specs = {
      bindOption(&BoundOptions::fast, "fast", "a bool"),
      bindOption(&BoundOptions::budget, "budget", "an int"),
      bindOption(&BoundOptions::cap, "cap", "a float"),
      bindOption(&BoundOptions::mode, "mode", "a choice", false, {"always", "auto", "off"}),
  };
  CHECK(specs[0].kind == OptionKind::Bool);
  CHECK(specs[0].default_text == "true");
  CHECK(specs[1].kind == OptionKind::Int);
  CHECK(specs[1].default_text == "-1");
  CHECK(specs[2].kind == OptionKind::Float);
  CHECK(specs[2].default_text == "0.25");
  CHECK(specs[3].default_text == "auto");
  PassRegistry r;
  r.add({"bound", "bound options", specs, [](const OptionValues&) { return std::make_unique<NoopPass>(); }});
  auto p = parsePipeline("bound{budget=1024,cap=0.5,mode=off}", r);
  auto o = p[0].options.bind<BoundOptions>(p[0].info->options);
  CHECK(o.fast);
  CHECK(o.budget == 1024);
  CHECK(o.cap == 0.5);
  CHECK(o.mode == "off");
  std::string err;
  try {
    parsePipeline("bound{mode=sometimes}", r);
  } catch (const InputError& e) {
    err = e.what();
  }
  CHECK(err == "--passes: option mode of pass bound takes one of always, auto, off, got \"sometimes\"");
}

TEST_CASE("the sequence-parallel alias expands in place to the whole chain", "[passes][pipeline]") {
  const auto& reg = PassRegistry::builtin();
  auto p = parsePipeline("sequence-parallel", reg);
  CHECK(pipelineText(p) == kSequenceParallelPipeline);
  auto q = parsePipeline("split-matmul-grad,sequence-parallel", reg);
  REQUIRE(q.size() == p.size() + 1);
  CHECK(q.front().info->name == "split-matmul-grad");
  CHECK(q.back().info->name == "overlap-collectives");
  REQUIRE(findPipelineAlias("sequence-parallel") != nullptr);
  CHECK(findPipelineAlias("fuse-allreduce-split") == nullptr);
  try {
    parsePipeline("sequence-parallel{max-in-flight=1}", reg);
    FAIL("an alias with options parsed");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("alias \"sequence-parallel\" takes no options") != std::string::npos);
  }
}

TEST_CASE("a value may hold commas: a piece with no '=' that names no option continues it", "[passes][pipeline]") {
  auto reg = testRegistry();
  auto p = parsePipeline("alpha{label=0.02,100,count=4}", reg);
  CHECK(p[0].options.getString("label") == "0.02,100");
  CHECK(p[0].options.getInt("count") == 4);
  CHECK(pipelineText(p) == "alpha{label=0.02,100,count=4}");
  CHECK(pipelineText(parsePipeline(pipelineText(p), reg)) == pipelineText(p));
  // An option's name alone is still a missing value, an empty piece still an empty option.
  CHECK(pipelineErrorOf("alpha{label=x,flag}") == "--passes: option flag of pass alpha needs a value (flag=...)");
  CHECK(pipelineErrorOf("alpha{label=x,,count=1}").find("empty option of pass alpha") != std::string::npos);
  CHECK(pipelineErrorOf("alpha{count=1,2}") == "--passes: option count of pass alpha takes an integer, got \"1,2\"");
}

TEST_CASE("machine options: preset (host included) and link, checked when parsed", "[passes][pipeline]") {
  const auto& reg = PassRegistry::builtin();
  auto p = parsePipeline("overlap-collectives{preset=host,link=0.02,100,window=4}", reg);
  CHECK(p[0].options.getString("preset") == "host");
  CHECK(p[0].options.getString("link") == "0.02,100");
  CHECK(p[0].options.getInt("window") == 4);
  auto err = [&](std::string_view text) {
    try {
      parsePipeline(text, reg);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(err("overlap-collectives{link=0,100}") ==
        "--passes: option link of pass overlap-collectives takes BW_GBPS[,LATENCY_US] (GB/s > 0, microseconds >= 0), got "
        "\"0,100\"");
  CHECK(err("overlap-collectives{link=fast}").find("takes BW_GBPS[,LATENCY_US]") != std::string::npos);
  CHECK(err("overlap-collectives{link=1,-5}").find("got \"1,-5\"") != std::string::npos);
  CHECK(err("overlap-collectives{preset=tpu}").find("takes one of h100-nvlink, h200-nvlink, a100-nvlink, host") != std::string::npos);
}

TEST_CASE("a pipeline-wide option reaches every pass that declares it, unless its braces gave it", "[passes][pipeline]") {
  const auto& reg = PassRegistry::builtin();
  auto p = parsePipeline("fuse-allreduce-split,decompose-collective-matmul,overlap-collectives{preset=a100-nvlink}", reg);
  CHECK(setPipelineOption(p, "preset", "h200-nvlink", "--preset") == 1);
  CHECK(setPipelineOption(p, "link", "0.1,100", "--link") == 2);
  CHECK(pipelineText(p) ==
        "fuse-allreduce-split,decompose-collective-matmul{preset=h200-nvlink,link=0.1,100},"
        "overlap-collectives{preset=a100-nvlink,link=0.1,100}");
  CHECK(p[1].options.getString("preset") == "h200-nvlink");
  CHECK(p[2].options.getString("preset") == "a100-nvlink");
  // Given once, an option stays: a second pipeline-wide value leaves it.
  CHECK(setPipelineOption(p, "preset", "a100-nvlink", "--preset") == 0);
  CHECK(p[1].options.getString("preset") == "h200-nvlink");
  std::string err;
  try {
    auto fresh = parsePipeline("decompose-collective-matmul", reg);
    setPipelineOption(fresh, "preset", "tpu", "--preset");
  } catch (const InputError& e) {
    err = e.what();
  }
  CHECK(err.rfind("--preset: option preset of pass decompose-collective-matmul takes one of ", 0) == 0);
}
