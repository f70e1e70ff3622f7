// JsonObject's two read paths agree: raw() on an object nobody split reads its text in place (and
// leaves it unsplit), find() splits it; both after edits. resolveOp's per-thread cache by address
// never answers for other text at a reused address.
#include <catch2/catch.hpp>

#include <string>

#include "ir/arena.h"
#include "ir/json_object.h"
#include "ops/op_def.h"

using namespace spopt;

TEST_CASE("JsonObject raw reads an unsplit object as find reads the split one", "[ir][json_object]") {
  const std::string text = R"({"ring_id":0,"s":"a,}\"b","nested":{"x":[1,{"y":2}]},"op_role":1,"":3})";
  JsonObject unsplit = JsonObject::fromCompactText(text);
  JsonObject split = JsonObject::fromCompactText(text);
  split.items();
  for (const char* key : {"ring_id", "s", "nested", "op_role", "", "x", "y", "missing"}) {
    INFO(key);
    auto a = unsplit.raw(key);
    const std::string_view* b = split.find(key);
    REQUIRE(a.has_value() == (b != nullptr));
    if (b) CHECK(*a == *b);
  }
  CHECK(unsplit.getInt("op_role") == 1);
  CHECK(unsplit.getString("s") == std::string("a,}\"b"));
  CHECK(unsplit.has("nested"));
  CHECK_FALSE(unsplit.has("x"));
  CHECK(unsplit.compactText() == text);  // reading did not split or edit it

  Arena arena;
  unsplit.setInt(arena, "op_role", 2);
  CHECK(unsplit.raw("op_role") == std::string_view("2"));
  CHECK(unsplit.getInt("ring_id") == 0);
  JsonObject empty;
  CHECK_FALSE(empty.raw("a").has_value());
}

TEST_CASE("resolveOp answers by text, whatever the address held before", "[ir][catalogue]") {
  std::string buf = "relu";
  ResolvedOp a = resolveOp(buf);
  REQUIRE(a);
  buf.replace(0, buf.size(), "gelu");  // same address, other text
  ResolvedOp b = resolveOp(std::string_view(buf.data(), 4));
  REQUIRE(b);
  CHECK(b.def != a.def);
  CHECK(b.def == &opDef("gelu"));
  buf.replace(0, buf.size(), "nope");
  CHECK_FALSE(resolveOp(std::string_view(buf.data(), 4)));
}
