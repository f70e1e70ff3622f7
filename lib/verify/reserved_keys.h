#pragma once
// The keys the format reserves in an op's attrs and in op and var dist_attrs, each with the kind
// of value it must hold (schemas/program.schema.json states the same to JSON Schema validators;
// tests/unit/verify_reserved_keys.cpp holds the two together). sp-opt reads these keys everywhere
// (an op's phase from op_role, streams and events in replay and the simulator, the mesh and
// dims_mapping in sharding), and each reader takes a value of the wrong kind for an absent one:
// the verifier refuses it instead, so that a malformed events_to_wait is an error, not an event
// nobody waits for.
//
// ring_id, nranks and reduce_type are not here: the collective rules (verify/program_checker.cpp,
// analysis/collectives.h) check them on the ops that read them.
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <absl/container/flat_hash_map.h>

#include "ir/json_object.h"

namespace spopt {

enum class KeyKind {
  Integer,
  String,
  StringArray,
  DimsMapping,  // an array of integers >= -1
  Mesh,         // an object: shape (integers >= 1), process_ids (integers >= 0), dim_names (strings)
};
struct ReservedKey {
  std::string_view key;
  KeyKind kind;
};
enum class KeyOwner { OpAttrs, OpDistAttr, VarDistAttr };
std::span<const ReservedKey> reservedKeys(KeyOwner owner);

// The first reserved key of `obj` whose value is not of its kind: the JSON pointer below the
// object ("/op_role", "/process_mesh/shape") and why.
struct KindProblem {
  std::string pointer, message;
};
std::optional<KindProblem> checkReservedKeys(const JsonObject& obj, KeyOwner owner);

// checkReservedKeys, once per distinct loaded text: a job's ops and vars share a few dist_attr
// texts (interned by the loaders), so most checks are one lookup. Edited objects (no loaded text)
// are checked each time, but each distinct process_mesh text once (the ops a pass builds copy
// their mesh from one another).
class ReservedKeysCache {
 public:
  std::optional<KindProblem> check(const JsonObject& obj, KeyOwner owner);

 private:
  absl::flat_hash_map<std::pair<const char*, KeyOwner>, std::optional<KindProblem>> by_text_;
  absl::flat_hash_map<std::string_view, std::optional<KindProblem>> meshes_;  // by the mesh's text
};

}  // namespace spopt
