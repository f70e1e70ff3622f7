#include "verify/reserved_keys.h"

#include <algorithm>

#include "ir/json_text.h"

namespace spopt {
namespace {

constexpr ReservedKey kOpAttrs[] = {{"op_role", KeyKind::Integer}, {"op_namescope", KeyKind::String}};
constexpr ReservedKey kOpDistAttr[] = {
    {"process_mesh", KeyKind::Mesh},           {"chunk_id", KeyKind::Integer},        {"execution_stream", KeyKind::String},
    {"stream_priority", KeyKind::Integer},     {"scheduling_priority", KeyKind::Integer}, {"event_to_record", KeyKind::String},
    {"events_to_wait", KeyKind::StringArray},
};
constexpr ReservedKey kVarDistAttr[] = {
    {"process_mesh", KeyKind::Mesh}, {"dims_mapping", KeyKind::DimsMapping}, {"chunk_id", KeyKind::Integer}};

bool integersAtLeast(std::string_view raw, int64_t least) {
  auto v = rawToIntArray(raw);
  return v && std::all_of(v->begin(), v->end(), [&](int64_t x) { return x >= least; });
}

std::string expected(std::string_view what, std::string_view key) { return "expected " + std::string(what) + " for \"" + std::string(key) + "\""; }

std::optional<KindProblem> checkMesh(std::string_view raw) {
  if (raw.empty() || raw.front() != '{') return KindProblem{"", expected("an object", "process_mesh")};
  const JsonObject mesh = JsonObject::fromCompactText(raw);
  for (const Member& m : mesh.items()) {
    std::string_view what;
    if (m.key == "shape" && !integersAtLeast(m.raw, 1)) what = "an array of integers of at least 1";
    else if (m.key == "process_ids" && !integersAtLeast(m.raw, 0)) what = "an array of integers of at least 0";
    else if (m.key == "dim_names" && !rawToStringArray(m.raw)) what = "an array of strings";
    if (!what.empty()) return KindProblem{"/" + std::string(m.key), expected(what, m.key)};
  }
  return std::nullopt;
}

// Why `raw` is not of `kind` (the message and the pointer below the key), or nullopt.
std::optional<KindProblem> checkValue(std::string_view key, KeyKind kind, std::string_view raw,
                                      absl::flat_hash_map<std::string_view, std::optional<KindProblem>>* meshes) {
  switch (kind) {
    case KeyKind::Integer:
      if (!rawToInt(raw)) return KindProblem{"", expected("an integer", key)};
      return std::nullopt;
    case KeyKind::String:
      if (!rawIsString(raw)) return KindProblem{"", expected("a string", key)};
      return std::nullopt;
    case KeyKind::StringArray:
      if (!rawToStringArray(raw)) return KindProblem{"", expected("an array of strings", key)};
      return std::nullopt;
    case KeyKind::DimsMapping:
      if (!integersAtLeast(raw, -1)) return KindProblem{"", expected("an array of integers of at least -1", key)};
      return std::nullopt;
    case KeyKind::Mesh: {
      if (!meshes) return checkMesh(raw);
      auto [it, inserted] = meshes->try_emplace(raw);
      if (inserted) it->second = checkMesh(raw);
      return it->second;
    }
  }
  return std::nullopt;
}

std::optional<KindProblem> checkMembers(const JsonObject& obj, KeyOwner owner,
                                        absl::flat_hash_map<std::string_view, std::optional<KindProblem>>* meshes) {
  const std::span<const ReservedKey> keys = reservedKeys(owner);
  for (const Member& m : obj.items())
    for (const ReservedKey& k : keys)
      if (m.key == k.key) {
        if (auto p = checkValue(k.key, k.kind, m.raw, meshes)) {
          p->pointer = "/" + std::string(k.key) + p->pointer;
          return p;
        }
        break;
      }
  return std::nullopt;
}

}  // namespace

std::span<const ReservedKey> reservedKeys(KeyOwner owner) {
  switch (owner) {
    case KeyOwner::OpAttrs:
      return kOpAttrs;
    case KeyOwner::OpDistAttr:
      return kOpDistAttr;
    case KeyOwner::VarDistAttr:
      return kVarDistAttr;
  }
  return {};
}

std::optional<KindProblem> checkReservedKeys(const JsonObject& obj, KeyOwner owner) { return checkMembers(obj, owner, nullptr); }

std::optional<KindProblem> ReservedKeysCache::check(const JsonObject& obj, KeyOwner owner) {
  const std::string_view text = obj.compactText();
  if (text.empty()) return checkMembers(obj, owner, &meshes_);
  auto [it, inserted] = by_text_.try_emplace({text.data(), owner});
  if (inserted) it->second = checkMembers(obj, owner, &meshes_);
  return it->second;
}

}  // namespace spopt
