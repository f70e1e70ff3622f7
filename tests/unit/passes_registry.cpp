// The pass registry: lookup, listing order, duplicate and malformed registrations.
#include <catch2/catch.hpp>

#include "passes/registry.h"

using namespace spopt;

namespace {
class RegistryNoopPass : public Pass {
 public:
  bool run(Job&, PassContext&) override { return false; }
};
PassInfo info(std::string name) {
  return {std::move(name), "test", {}, [](const OptionValues&) { return std::make_unique<RegistryNoopPass>(); }};
}
}  // namespace

TEST_CASE("registry finds passes by name and lists them sorted", "[passes][registry]") {
  PassRegistry r;
  r.add(info("zeta"));
  r.add(info("alpha"));
  CHECK(r.find("zeta") != nullptr);
  CHECK(r.find("alpha")->name == "alpha");
  CHECK(r.find("beta") == nullptr);
  auto all = r.all();
  REQUIRE(all.size() == 2);
  CHECK(all[0]->name == "alpha");
  CHECK(all[1]->name == "zeta");
  CHECK(r.namesText() == "alpha, zeta");
  CHECK(PassRegistry().namesText() == "(none)");
}

TEST_CASE("registering a name twice or without a factory is a programming error", "[passes][registry]") {
  PassRegistry r;
  r.add(info("a"));
  CHECK_THROWS_AS(r.add(info("a")), std::logic_error);
  PassInfo broken = info("b");
  broken.create = nullptr;
  CHECK_THROWS_AS(r.add(broken), std::logic_error);
}

TEST_CASE("bad option defaults and undeclared options are programming errors", "[passes][registry]") {
  CHECK_THROWS_AS(OptionValues({{"n", OptionKind::Int, "many", "bad default"}}), std::logic_error);
  OptionValues v({{"n", OptionKind::Int, "2", ""}});
  CHECK(v.getInt("n") == 2);
  CHECK_THROWS_AS(v.getInt("m"), std::logic_error);
  CHECK_THROWS(v.getBool("n"));  // wrong type
}

TEST_CASE("the built-in registry holds fuse-allreduce-split with its options", "[passes][registry]") {
  const PassInfo* p = PassRegistry::builtin().find("fuse-allreduce-split");
  REQUIRE(p != nullptr);
  CHECK_FALSE(p->description.empty());
  REQUIRE(p->option("reshard-only") != nullptr);
  CHECK(p->option("reshard-only")->kind == OptionKind::Bool);
  REQUIRE(p->option("max-fusions") != nullptr);
  CHECK(p->option("max-fusions")->kind == OptionKind::Int);
  REQUIRE(p->option("unsafe-skip-agreement") != nullptr);
  CHECK(p->option("unsafe-skip-agreement")->hidden);
  // Every declared default parses (OptionValues would throw otherwise).
  for (const PassInfo* info : PassRegistry::builtin().all()) CHECK_NOTHROW(OptionValues(info->options));
}
