// The keys the format reserves in op attrs and dist_attrs (verify/reserved_keys.h): the verifier's
// table states what schemas/program.schema.json states, a value of the wrong kind is refused with
// its pointer, and the check after a pass sees a malformed execution attribute a pass wrote.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "io/loader.h"
#include "ir/op_role.h"
#include "verify/reserved_keys.h"
#include "verify/verifier.h"

using namespace spopt;

namespace {

// The schema's description of a kind, as the table's kind reads in it.
nlohmann::json schemaOf(KeyKind kind) {
  using J = nlohmann::json;
  switch (kind) {
    case KeyKind::Integer:
      return J{{"type", "integer"}};
    case KeyKind::String:
      return J{{"type", "string"}};
    case KeyKind::StringArray:
      return J{{"type", "array"}, {"items", {{"type", "string"}}}};
    case KeyKind::DimsMapping:
      return J{{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", -1}}}};
    case KeyKind::Mesh:
      return J{{"$ref", "#/$defs/process_mesh"}};
  }
  return {};
}

const char* kJob = R"({"format":"sp-opt.program","version":1,"world_size":1,"programs":[
 {"rank":0,"blocks":[{"idx":0,"parent_idx":-1,
  "vars":[{"name":"x","shape":[2,4],"dtype":"float32",
           "dist_attr":{"process_mesh":{"shape":[1],"process_ids":[0],"dim_names":["mp"]},"dims_mapping":[-1,-1],"chunk_id":0}},
          {"name":"y","shape":[2,4],"dtype":"float32"}],
  "ops":[{"type":"relu","inputs":{"X":["x"]},"outputs":{"Out":["y"]},"attrs":{"op_role":0,"op_namescope":"/a"},
          "dist_attr":{"execution_stream":"default","events_to_wait":[],"stream_priority":0}}]}]}]})";

// The first problem validate reports for kJob with `from` replaced by `to`.
std::string firstProblem(const std::string& from, const std::string& to) {
  std::string text = kJob;
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), to);
  auto problems = verifyJob(*loadJobFromText(text, "job.json"));
  return problems.empty() ? "" : problems[0].pointer + ": " + problems[0].message;
}

}  // namespace

TEST_CASE("the reserved keys are the schema's, with the schema's kinds", "[verify]") {
  std::ifstream in(std::string(SPOPT_SOURCE_DIR) + "/schemas/program.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  const auto& defs = schema["$defs"];
  struct Owner {
    KeyOwner owner;
    nlohmann::json properties;
    std::set<std::string> collective_rules;  // in the schema, checked by the collective rules instead
  };
  const Owner owners[] = {
      {KeyOwner::OpAttrs, defs["op"]["properties"]["attrs"]["properties"], {"ring_id", "nranks", "reduce_type"}},
      {KeyOwner::OpDistAttr, defs["op"]["properties"]["dist_attr"]["properties"], {}},
      {KeyOwner::VarDistAttr, defs["var"]["properties"]["dist_attr"]["properties"], {}},
  };
  for (const Owner& o : owners) {
    std::set<std::string> in_table;
    for (const ReservedKey& k : reservedKeys(o.owner)) {
      INFO(k.key);
      in_table.insert(std::string(k.key));
      REQUIRE(o.properties.contains(std::string(k.key)));
      CHECK(o.properties[std::string(k.key)] == schemaOf(k.kind));
    }
    for (const auto& [key, _] : o.properties.items()) {
      INFO(key);
      CHECK((in_table.count(key) || o.collective_rules.count(key)));
    }
  }
  const auto& mesh = defs["process_mesh"]["properties"];
  CHECK(mesh["shape"]["items"] == nlohmann::json{{"type", "integer"}, {"minimum", 1}});
  CHECK(mesh["process_ids"]["items"] == nlohmann::json{{"$ref", "#/$defs/rank"}});
  CHECK(defs["rank"] == nlohmann::json{{"type", "integer"}, {"minimum", 0}});
  CHECK(mesh["dim_names"]["items"] == nlohmann::json{{"type", "string"}});
}

TEST_CASE("a reserved key of the wrong kind is refused, with its pointer", "[verify]") {
  CHECK(firstProblem("", "").empty());
  const std::string op = "/programs/0/blocks/0/ops/0", var = "/programs/0/blocks/0/vars/0";
  struct Case {
    std::string from, to, problem;
  };
  const Case cases[] = {
      {R"("op_role":0)", R"("op_role":"0")", op + R"(/attrs/op_role: expected an integer for "op_role")"},
      {R"("op_namescope":"/a")", R"("op_namescope":1)", op + R"(/attrs/op_namescope: expected a string for "op_namescope")"},
      {R"("events_to_wait":[])", R"("events_to_wait":["e",1])",
       op + R"(/dist_attr/events_to_wait: expected an array of strings for "events_to_wait")"},
      {R"("execution_stream":"default")", R"("execution_stream":0)", op + R"(/dist_attr/execution_stream: expected a string for "execution_stream")"},
      {R"("stream_priority":0)", R"("stream_priority":0.5)", op + R"(/dist_attr/stream_priority: expected an integer for "stream_priority")"},
      {R"("dims_mapping":[-1,-1])", R"("dims_mapping":["a",-1])",
       var + R"(/dist_attr/dims_mapping: expected an array of integers of at least -1 for "dims_mapping")"},
      {R"("dims_mapping":[-1,-1])", R"("dims_mapping":[-2,-1])",
       var + R"(/dist_attr/dims_mapping: expected an array of integers of at least -1 for "dims_mapping")"},
      {R"("chunk_id":0)", R"("chunk_id":null)", var + R"(/dist_attr/chunk_id: expected an integer for "chunk_id")"},
      {R"("shape":[1])", R"("shape":[0])", var + R"(/dist_attr/process_mesh/shape: expected an array of integers of at least 1 for "shape")"},
      {R"("process_ids":[0])", R"("process_ids":[-1])",
       var + R"(/dist_attr/process_mesh/process_ids: expected an array of integers of at least 0 for "process_ids")"},
      {R"("dim_names":["mp"])", R"("dim_names":"mp")", var + R"(/dist_attr/process_mesh/dim_names: expected an array of strings for "dim_names")"},
      {R"({"shape":[1],"process_ids":[0],"dim_names":["mp"]})", "[0]", var + R"(/dist_attr/process_mesh: expected an object for "process_mesh")"},
  };
  for (const Case& c : cases) {
    INFO(c.to);
    CHECK(firstProblem(c.from, c.to) == c.problem);
  }
}

TEST_CASE("the check after a pass refuses a malformed execution attribute the pass wrote", "[verify][passes]") {
  auto job = loadJobFromText(kJob, "job.json");
  Op& relu = job->program(0)->blocks[0]->ops.front();
  EditJournal j;
  job->journal = &j;
  setExecutionStream(relu, *job, "comm_0");          // a well-formed edit: still valid
  relu.dist_attr.setRaw(job->arena, "events_to_wait", "\"e\"");  // as a careless pass might
  job->journal = nullptr;
  REQUIRE(j.execution == std::vector<Op*>{&relu});
  VerifyOptions scoped;
  scoped.touched = &j;
  auto found = verifyJob(*job, scoped);
  REQUIRE(found.size() == 1);
  CHECK(found[0].pointer == "/programs/0/blocks/0/ops/0/dist_attr/events_to_wait");
  auto full = verifyJob(*job);
  REQUIRE(full.size() == 1);
  CHECK(full[0].message == found[0].message);
}
