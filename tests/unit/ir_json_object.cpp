// JsonObject: an object of shared (interned) text and one of text split on its own read alike, and
// keep their text until edited; an edit of one object sharing a split leaves the others as they
// were. resolveOp's per-thread cache by address never answers for other text at a reused address.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "ir/arena.h"
#include "ir/json_object.h"
#include "ir/json_text.h"
#include "ops/op_def.h"

using namespace spopt;

TEST_CASE("JsonObject reads a shared object as one split on its own", "[ir][json_object]") {
  const std::string text = R"({"ring_id":0,"s":"a,}\"b","nested":{"x":[1,{"y":2}]},"op_role":1,"":3})";
  Arena shared_arena;
  const SharedObject* shared = JsonObject::share(shared_arena, text);
  REQUIRE(shared->members.size() == 5);
  JsonObject unsplit = JsonObject::fromShared(shared);
  JsonObject split = JsonObject::fromCompactText(text);
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
  CHECK(unsplit.compactText() == text);  // reading did not edit it
  CHECK(split.compactText() == text);

  Arena arena;
  JsonObject other = JsonObject::fromShared(shared);
  unsplit.setInt(arena, "op_role", 2);
  CHECK(unsplit.raw("op_role") == std::string_view("2"));
  CHECK(unsplit.getInt("ring_id") == 0);
  CHECK(unsplit.compactText().empty());
  CHECK(unsplit.toJson() == R"({"ring_id":0,"s":"a,}\"b","nested":{"x":[1,{"y":2}]},"op_role":2,"":3})");
  CHECK(other.getInt("op_role") == 1);  // the shared split is not the edited object's
  CHECK(other.compactText() == text);
  CHECK(split.erase("s"));
  CHECK_FALSE(split.erase("s"));
  CHECK(split.toJson() == R"({"ring_id":0,"nested":{"x":[1,{"y":2}]},"op_role":1,"":3})");
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

TEST_CASE("an int array reads the same on the plain-spelling path as through the full JSON parser", "[ir][json]") {
  // rawToIntArray reads the common spelling itself and hands anything else to nlohmann::json: both
  // paths must agree on every input, the odd ones included.
  auto reference = [](std::string_view raw) -> std::optional<std::vector<int64_t>> {
    auto j = nlohmann::json::parse(raw, nullptr, false);
    if (!j.is_array()) return std::nullopt;
    std::vector<int64_t> out;
    for (const auto& e : j) {
      if (!e.is_number_integer()) return std::nullopt;
      out.push_back(e.get<int64_t>());
    }
    return out;
  };
  for (std::string_view raw :
       {"[]", "[ ]", "[1]", "[1,2,3]", " [ -1 , 0 ,\n 7 ]\t", "[-0]", "[01]", "[-01]", "[0]", "[1.0]", "[1e3]", "[1,]",
        "[,1]", "[1 2]", "[-]", "[", "]", "", "[1]x", "[\"1\"]", "[true]", "[[1]]", "[9223372036854775807]",
        "[-9223372036854775808]", "[1,-2,+3]", "[ 4096 , 12288 ]", "[0E0]", "[5] [6]", "1", "{}"}) {
    INFO(raw);
    CHECK(rawToIntArray(raw) == reference(raw));
  }
}
