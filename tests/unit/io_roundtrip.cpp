// Lossless I/O: every valid testdata job written back is the same JSON value with the same key
// order; writing is deterministic and atomic.
#include <catch2/catch.hpp>

#include "test_files.h"
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ir/json_text.h"
#include "support/error.h"
#include "verify/verifier.h"

namespace fs = std::filesystem;
using namespace spopt;

static std::vector<fs::path> validJobs() {
  std::vector<fs::path> out;
  fs::path root = fs::path(SPOPT_SOURCE_DIR) / "testdata";
  for (auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().extension() != ".json") continue;
    auto rel = e.path().lexically_relative(root).string();
    // pir/real/ holds Paddle's own files (PIR JSON), not format v1 jobs.
    if (rel.rfind("bad/", 0) == 0 || rel.rfind("pir/real/", 0) == 0 || rel.find("expected") != std::string::npos) continue;
    out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("every valid testdata job round-trips to the same JSON value and key order", "[io]") {
  auto jobs = validJobs();
  REQUIRE(!jobs.empty());
  for (const auto& path : jobs) {
    INFO(path.string());
    std::string text = spopt::test::readFileBytes(path);
    auto job = loadJobFromText(text, path.string());
    std::string written = jobToString(*job);
    // ordered_json compares objects as ordered sequences: key order must match too.
    auto before = nlohmann::ordered_json::parse(text);
    auto after = nlohmann::ordered_json::parse(written);
    CHECK(before == after);
    // Deterministic and idempotent: writing what we wrote gives the same bytes.
    auto again = loadJobFromText(written, "again");
    CHECK(jobToString(*again) == written);
  }
}

TEST_CASE("a job loaded from its file (mapped) equals the job loaded from its text", "[io]") {
  for (const auto& path : validJobs()) {
    INFO(path.string());
    auto mapped = loadJob(path.string());
    auto copied = loadJobFromText(spopt::test::readFileBytes(path), path.string());
    CHECK(jobToString(*mapped) == jobToString(*copied));
  }
}

TEST_CASE("files ending at or near a page boundary load (the padding lies past the mapping)", "[io]") {
  auto jobs = validJobs();
  auto smallest = *std::min_element(jobs.begin(), jobs.end(), [](auto& a, auto& b) { return fs::file_size(a) < fs::file_size(b); });
  std::string text = spopt::test::readFileBytes(smallest);
  while (text.back() == '\n' || text.back() == ' ') text.pop_back();
  REQUIRE(text.size() < 4095);
  fs::path file = fs::temp_directory_path() / ("spopt-page-" + std::to_string(::getpid()) + ".json");
  for (size_t size : {size_t(4095), size_t(4096), size_t(4097), size_t(8192 - 63), size_t(8192)}) {
    INFO(size);
    std::string padded = text + std::string(size - text.size(), ' ');
    std::ofstream(file, std::ios::binary) << padded;
    REQUIRE(fs::file_size(file) == size);
    CHECK(jobToString(*loadJob(file.string())) == jobToString(*loadJobFromText(padded, "t")));
  }
  fs::remove(file);
}

TEST_CASE("a loaded job keeps no view of its file, which is unmapped when loading ends", "[io]") {
  // An escaped "programs" key makes the top-level scan give up, so the whole document is parsed
  // from the mapping (the path where the header's text used to view the file's bytes); the
  // job's format, key names and unknown top-level keys must all live in its arenas.
  std::string text = spopt::test::readFileBytes(validJobs().front());
  auto at = text.find("\"programs\"");
  REQUIRE(at != std::string::npos);
  text.replace(at, 10, "\"progr\\u0061ms\"");
  text.insert(text.find('{') + 1, "\"note_from_the_user\": {\"kept\": [1, 2.50]}, ");
  fs::path file = fs::temp_directory_path() / ("spopt-unmapped-" + std::to_string(::getpid()) + ".json");
  std::ofstream(file, std::ios::binary) << text;
  auto job = loadJob(file.string());
  fs::remove(file);
  std::string written = jobToString(*job);  // reads every kept text: a view of the unmapped file would fault
  CHECK(nlohmann::ordered_json::parse(written) == nlohmann::ordered_json::parse(text));
  CHECK(job->format == "sp-opt.program");
}

TEST_CASE("numbers keep their spelling: integers stay integers, 1.0 stays 1.0", "[io]") {
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"z":{"a":1.0,"b":1,"c":1e3,"d":-0.0},
    "programs":[{"rank":0,"blocks":[{"idx":0,"vars":[{"name":"x","shape":[2],"dtype":"float32","u":[1.50,2]}],
    "ops":[{"type":"scale","inputs":{"X":["x"]},"outputs":{"Out":["x"]},"attrs":{"scale":2.0,"bias":0,"s":"a\"b\u00e9"}}]}]}]})";
  auto job = loadJobFromText(text, "t.json");
  std::string out = jobToString(*job);
  CHECK(out.find(R"("z": {"a":1.0,"b":1,"c":1e3,"d":-0.0})") != std::string::npos);
  CHECK(out.find(R"("u":[1.50,2])") != std::string::npos);
  CHECK(out.find(R"("scale":2.0,"bias":0)") != std::string::npos);
  const Op& op = job->programs[0]->blocks[0]->ops.front();
  CHECK(op.attrs.getString("s") == std::optional<std::string>("a\"b\xc3\xa9"));
  CHECK(op.attrs.getNumber("scale") == Approx(2.0));
  CHECK(!op.attrs.getInt("scale"));  // 2.0 is not an integer
}

TEST_CASE("a failed write leaves the destination untouched and no temp file", "[io]") {
  fs::path dir = fs::temp_directory_path() / "spopt-atomic-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path dest = dir / "out.json";
  writeFileAtomic(dest.string(), "old");
  {
    AtomicFile f(dest.string());
    f.write("partial new content");
    // destroyed without commit: as if an error was thrown mid-write
  }
  CHECK(spopt::test::readFileBytes(dest) == "old");
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files == 1);
  fs::remove_all(dir);
}

TEST_CASE("loader errors name the JSON pointer", "[io]") {
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"programs":[{"rank":0,"blocks":[{"idx":0,
    "vars":[{"name":"a/b~c","shape":[1],"dtype":"float32"}],"ops":[{"type":"x","inputs":{"X":["missing"]}}]}]}]})";
  try {
    loadJobFromText(text, "t.json");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "t.json: /programs/0/blocks/0/ops/0/inputs/X/0: var \"missing\" is not declared in block 0 or its ancestors");
  }
  CHECK(pointerToken("a/b~c") == "a~1b~0c");
}

TEST_CASE("def-use stays current through insert, erase and replaceAllUses", "[ir]") {
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"programs":[{"rank":0,"blocks":[{"idx":0,
    "vars":[{"name":"a","shape":[2],"dtype":"float32"},{"name":"b","shape":[2],"dtype":"float32"},{"name":"c","shape":[2],"dtype":"float32"}],
    "ops":[{"type":"relu","inputs":{"X":["a"]},"outputs":{"Out":["b"]}},{"type":"relu","inputs":{"X":["b"]},"outputs":{"Out":["c"]}}]}]}]})";
  auto job = loadJobFromText(text, "t.json");
  Block& b = *job->programs[0]->blocks[0];
  Var *a = b.findLocal("a"), *bv = b.findLocal("b"), *c = b.findLocal("c");
  CHECK(a->readers.size() == 1);
  CHECK(bv->writers.size() == 1);
  CHECK(bv->readers.size() == 1);
  Op* second = bv->readers[0];
  CHECK(replaceAllUses(bv, a) == 1);
  CHECK(bv->readers.empty());
  CHECK(a->readers.size() == 2);
  Op op = makeOp(*job, "scale");
  addInput(op, *job, "X", {"c"});
  addOutput(op, *job, "Out", {"c"});
  Op* inserted = b.insertOp(b.ops.end(), std::move(op));
  CHECK(c->readers.size() == 1);
  CHECK(c->writers.size() == 2);
  b.eraseOp(inserted);
  b.eraseOp(second);
  CHECK(c->writers.size() == 0);
  CHECK(a->readers.size() == 1);
  CHECK(verifyJob(*job).empty());
}
