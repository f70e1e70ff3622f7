// The text form (io/text_writer.h, io/text_reader.h): JSON -> text -> job -> text is exact, JSON
// -> text -> JSON keeps everything the text shows, and bad text gets one FILE:LINE:COL line.
#include <catch2/catch.hpp>

#include "test_files.h"
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/loader.h"
#include "io/text_reader.h"
#include "io/text_writer.h"
#include "io/writer.h"
#include "support/error.h"
#include "verify/verifier.h"

namespace fs = std::filesystem;
using namespace spopt;
using J = nlohmann::ordered_json;

namespace {

std::vector<fs::path> jobFiles() {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(fs::path(SPOPT_SOURCE_DIR) / "testdata/jobs"))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// What the text shows of a JSON job, with the defaults of absent keys filled in.
J shown(const J& job) {
  J out = {{"world_size", job["world_size"]}, {"groups", J::array()}, {"programs", J::array()}};
  for (const auto& g : job.value("process_groups", J::array())) out["groups"].push_back({g["ring_id"], g["ranks"]});
  for (const auto& p : job["programs"]) {
    J prog = {{"rank", p["rank"]}, {"fetch", p.contains("fetch") ? p["fetch"] : J()}, {"blocks", J::array()}};
    for (const auto& b : p["blocks"]) {
      J blk = {{"idx", b["idx"]}, {"parent", b.value("parent_idx", J(-1))}, {"vars", J::array()}, {"ops", J::array()}};
      for (const auto& v : b["vars"])
        blk["vars"].push_back({v["name"], v["shape"], v["dtype"], v.value("persistable", false), v.value("dist_attr", J())});
      for (const auto& o : b["ops"])
        blk["ops"].push_back({o["type"], o.value("inputs", J::object()), o.value("outputs", J::object()),
                              o.value("attrs", J::object()), o.value("dist_attr", J())});
      prog["blocks"].push_back(blk);
    }
    out["programs"].push_back(prog);
  }
  return out;
}

std::string textErrorOf(std::string_view text, const std::string& name = "t.sptxt") {
  try {
    loadJobFromText(text, name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kSmall = R"(sp-opt.program text 1
world_size 2
group ring_id=0 ranks=[0,1]
mesh #mp = {"shape":[2],"process_ids":[0,1],"dim_names":["mp"]}

rank 0 fetch=[z] {
  block 0 parent=-1 {
    var x : float32[8,4]
    var y : float32[8,4] dist={process_mesh=#mp, dims_mapping=[-1,-1], chunk_id=0}
    var z : float32[8,4]
    {Out=[y]} = scale(X=[x]) {scale=1.0, bias=0, bias_after_scale=true}
    {Out=[z]} = c_allreduce_sum(X=[y]) {ring_id=0}
  }
}
)";

}  // namespace

TEST_CASE("every testdata job: JSON -> text -> job -> text is identical", "[io][text]") {
  auto files = jobFiles();
  REQUIRE(files.size() >= 10);
  for (const auto& path : files) {
    INFO(path.string());
    auto job = loadJob(path.string());
    std::string text = jobToText(*job);
    REQUIRE(looksLikeTextJob(text));
    auto again = loadJobFromText(text, "again.sptxt");
    CHECK(jobToText(*again) == text);
    CHECK(verifyJob(*again).size() == verifyJob(*job).size());
  }
}

TEST_CASE("every testdata job: JSON -> text -> JSON keeps everything the text shows", "[io][text]") {
  for (const auto& path : jobFiles()) {
    INFO(path.string());
    std::string json = spopt::test::readFileBytes(path);
    auto via_text = loadJobFromText(jobToText(*loadJobFromText(json, "j")), "t.sptxt");
    CHECK(shown(J::parse(jobToString(*via_text))) == shown(J::parse(json)));
  }
}

TEST_CASE("text keeps integers, floats, key order and odd names as they are", "[io][text]") {
  auto job = loadJobFromText(kSmall, "small.sptxt");
  std::string text = jobToText(*job);
  CHECK(text == kSmall);  // the writer's own spelling comes back byte for byte
  J json = J::parse(jobToString(*job));
  J op = json["programs"][0]["blocks"][0]["ops"][0];
  CHECK(op["attrs"].dump() == R"({"scale":1.0,"bias":0,"bias_after_scale":true})");
  CHECK(json["programs"][0]["blocks"][0]["vars"][1]["dist_attr"]["process_mesh"]["dim_names"][0] == "mp");
  // def-use is built as by the JSON loader
  const Block& b = *job->programs[0]->blocks[0];
  CHECK(b.findLocal("y")->writers.size() == 1);
  CHECK(b.findLocal("y")->readers.size() == 1);

  // Names outside the bare-word set are JSON strings; keys with such characters too.
  std::string odd = R"(sp-opt.program text 1
world_size 1

rank 0 {
  block 0 parent=-1 {
    var "a b" : int64[]
    var "c\"d" : bool[-1,2] persistable
    {"Out x"=["c\"d"]} = "my op"(X=["a b"]) {"k/1"="v", list=[1,2.5e-3,{"x":null}]}
  }
}
)";
  auto odd_job = loadJobFromText(odd, "odd.sptxt");
  CHECK(jobToText(*odd_job) == odd);
  J oj = J::parse(jobToString(*odd_job));
  CHECK(oj["programs"][0]["blocks"][0]["ops"][0]["type"] == "my op");
  CHECK(oj["programs"][0]["blocks"][0]["vars"][1]["name"] == "c\"d");
  // The attribute text is kept as written (2.5e-3 is not respelled 0.0025).
  CHECK(jobToString(*odd_job).find(R"("attrs":{"k/1":"v","list":[1,2.5e-3,{"x":null}]})") != std::string::npos);
}

TEST_CASE("hand-written text: comments, spacing and aliases are read, the writer respells", "[io][text]") {
  std::string hand = R"(// a comment line before the magic
sp-opt.program text 1
world_size 2   // trailing comment
group ring_id=0 ranks=[ 0 , 1 ]
dist #mine = {execution_stream="s1", events_to_wait=[]}

rank 1 {
  block 0 {
    {Out=[y]} = relu( X = [x] )   {  } dist=#mine
    var x : float32[2]
    var y : float32[2]
    {Out=[z]} = relu(X=[y]) { a = [1, 2] } dist=#mine
    var z : float32[2]
  }
}
)";
  auto job = loadJobFromText(hand, "hand.sptxt");
  std::string text = jobToText(*job);
  CHECK(text.find("dist #s1 = {execution_stream=\"s1\", events_to_wait=[]}") != std::string::npos);
  CHECK(text.find("{Out=[z]} = relu(X=[y]) {a=[1,2]} dist=#s1") != std::string::npos);
  CHECK(text.find("block 0 parent=-1 {") != std::string::npos);
  CHECK(jobToText(*loadJobFromText(text, "again")) == text);
  // Vars declared after their use resolve; def-use is complete.
  CHECK(job->programs[0]->blocks[0]->findLocal("y")->readers.size() == 1);
}

TEST_CASE("bad text: one FILE:LINE:COL line", "[io][text]") {
  std::string s = kSmall;
  auto replace = [&](std::string from, std::string to) {
    std::string t = s;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  CHECK(textErrorOf(replace("  }\n}\n", "  }\n")) == "t.sptxt:14:1: expected \"}\" to close rank 0 (opened at line 6)");
  CHECK(textErrorOf(replace("X=[x]", "X=[q]")) == "t.sptxt:11:26: var \"q\" is not declared in block 0 or its ancestors");
  CHECK(textErrorOf(replace("x : float32", "x : float8")) ==
        "t.sptxt:8:13: unknown dtype \"float8\" (expected float32, float64, float16, bfloat16, int32, int64, bool or uint8)");
  CHECK(textErrorOf(replace("{scale=1.0,", "{scale=1.,")) == "t.sptxt:11:37: malformed number");
  CHECK(textErrorOf(replace("#mp,", "#mq,")) == "t.sptxt:9:45: alias #mq is not defined above");
  CHECK(textErrorOf(replace("var z", "var y")) == "t.sptxt:10:9: var \"y\" is declared twice in this block");
  CHECK(textErrorOf(replace("world_size 2", "world_size 0")) == "t.sptxt:2:12: world_size must be between 1 and 16777216");
  CHECK(textErrorOf(replace("text 1", "text 2")) == "t.sptxt:1:21: format version 2 is not supported (this build reads version 1)");
  CHECK(textErrorOf(replace("{ring_id=0}", "{ring_id=0} extra")) == "t.sptxt:12:52: unexpected \"extra\" after the op");
  CHECK(textErrorOf(replace("[8,4]\n    var y", "[8,-2]\n    var y")) ==
        "t.sptxt:8:20: negative dimension -2 (only -1, unknown, is allowed)");
  CHECK(textErrorOf("sp-opt.program text 1\n") == "t.sptxt:1:1: the job lacks a \"world_size N\" line");
  CHECK(textErrorOf(std::string(kSmall) + "\xff\n") == "t.sptxt:15:1: invalid UTF-8");
}

TEST_CASE("the loader tells text from JSON by content", "[io][text]") {
  CHECK(looksLikeTextJob("sp-opt.program text 1\n"));
  CHECK(looksLikeTextJob("\n// comment\n  sp-opt.program text 1"));
  CHECK_FALSE(looksLikeTextJob("{\"format\":\"sp-opt.program\"}"));
  CHECK_FALSE(looksLikeTextJob(""));
  CHECK(isTextJobPath("out.sptxt"));
  CHECK_FALSE(isTextJobPath("out.json"));
  // Not text: the JSON loader's messages are unchanged.
  CHECK(textErrorOf("sp-opt.program\n", "x.json").rfind("x.json: ", 0) == 0);
}

TEST_CASE("print --rank: the header stays, one program is printed", "[io][text]") {
  auto job = loadJob(std::string(SPOPT_SOURCE_DIR) + "/testdata/jobs/gen_mlp_tp4_sp.json");
  TextWriteOptions opts;
  opts.rank = 2;
  std::string text = jobToText(*job, opts);
  CHECK(text.find("world_size 4\ngroup ring_id=0 ranks=[0,1,2,3]\n") != std::string::npos);
  CHECK(text.find("\nrank 2 ") != std::string::npos);
  CHECK(text.find("\nrank 0 ") == std::string::npos);
  auto back = loadJobFromText(text, "r2.sptxt");
  REQUIRE(back->programs.size() == 1);
  CHECK(back->programs[0]->rank == 2);
}

TEST_CASE("JSON corners survive text: escaped keys, empty slot names, unicode, big numbers", "[io][text]") {
  std::string json = R"({"format":"sp-opt.program","version":1,"world_size":1,"programs":[{"rank":0,"blocks":[{"idx":0,"vars":[)"
                     R"({"name":"x\u00e9","shape":[],"dtype":"int64"},{"name":"a\tb","shape":[2],"dtype":"bool","extra":1}],"ops":[)"
                     R"({"type":"t","inputs":{"":["x\u00e9"]},"outputs":{"Out":["a\tb"]},"attrs":{"k\"q":18446744073709551615,"e":-0.0E+2,"s":"\u00e9//#"}}]}]}]})";
  auto job = loadJobFromText(json, "corner.json");
  std::string text = jobToText(*job);
  INFO(text);
  auto back = loadJobFromText(text, "corner.sptxt");
  CHECK(jobToText(*back) == text);
  std::string again = jobToString(*back);
  CHECK(again.find(R"("attrs":{"k\"q":18446744073709551615,"e":-0.0E+2,"s":"\u00e9//#"})") != std::string::npos);
  CHECK(again.find(R"("inputs":{"":["xé"]})") != std::string::npos);
  CHECK(again.find("\"extra\"") == std::string::npos);  // unknown keys do not survive text (docs/text-format.md)
}
