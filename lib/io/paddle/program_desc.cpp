// ProgramDesc <-> format v1 (docs/paddle.md has the mapping).
//
// Exactness: every entity (program shell, block shell, var, op) is mapped by a pair of functions,
// toJson and fromJson. On import each entity is mapped back at once and compared with the bytes it
// came from; where they differ (a field set that the mapping does not model, unknown fields, an
// unusual encoding) the entity's original bytes are kept beside it under "paddle": {"raw": hex}.
// On export the raw bytes are used only if they still map to the entity's current JSON, so an
// entity a pass edited is written from its JSON and an untouched one comes back byte for byte.
#include "io/paddle/program_desc.h"
#include "io/paddle/scope_vars.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "io/paddle/framework.pb.h"
#include "io/paddle/paddle_json.h"
#include "support/error.h"

namespace spopt::paddle {
namespace {

using pb::AttrType;
using pb::VarType;

// ---- attrs ----------------------------------------------------------------------------------

Json scalarToJson(const pb::Scalar& s) {
  switch (s.type()) {
    case pb::Scalar::BOOLEAN: return s.b();
    case pb::Scalar::LONG: return s.i();
    case pb::Scalar::FLOAT64: return doubleToJson(s.r());
    case pb::Scalar::COMPLEX128: return Json{{"real", doubleToJson(s.c().r())}, {"imag", doubleToJson(s.c().i())}};
  }
  return nullptr;
}
void scalarFromJson(const Json& j, pb::Scalar& s) {
  if (j.is_boolean()) {
    s.set_type(pb::Scalar::BOOLEAN);
    s.set_b(j.get<bool>());
  } else if (j.is_number_integer()) {
    s.set_type(pb::Scalar::LONG);
    s.set_i(j.get<int64_t>());
  } else if (j.is_object()) {
    s.set_type(pb::Scalar::COMPLEX128);
    s.mutable_c()->set_r(jsonToDouble(j.at("real")));
    s.mutable_c()->set_i(jsonToDouble(j.at("imag")));
  } else {
    s.set_type(pb::Scalar::FLOAT64);
    s.set_r(jsonToDouble(j));
  }
}

Json attrToJson(const pb::OpDesc::Attr& a) {
  Json v;
  switch (a.type()) {
    case pb::INT: return a.i();
    case pb::FLOAT: return floatToJson(a.f());
    case pb::STRING: return bytesToJson(a.s());
    case pb::INTS: v = Json::array(); for (auto x : a.ints()) v.push_back(x); return v;
    case pb::FLOATS: v = Json::array(); for (auto x : a.floats()) v.push_back(floatToJson(x)); return v;
    case pb::STRINGS: v = Json::array(); for (const auto& x : a.strings()) v.push_back(bytesToJson(x)); return v;
    case pb::BOOLEAN: return a.b();
    case pb::BOOLEANS: v = Json::array(); for (bool x : a.bools()) v.push_back(x); return v;
    case pb::BLOCK: return a.block_idx();
    case pb::LONG: return a.l();
    case pb::BLOCKS: v = Json::array(); for (auto x : a.blocks_idx()) v.push_back(x); return v;
    case pb::LONGS: v = Json::array(); for (auto x : a.longs()) v.push_back(x); return v;
    case pb::FLOAT64S: v = Json::array(); for (auto x : a.float64s()) v.push_back(doubleToJson(x)); return v;
    case pb::VAR: return a.var_name();
    case pb::VARS: v = Json::array(); for (const auto& x : a.vars_name()) v.push_back(x); return v;
    case pb::FLOAT64: return doubleToJson(a.float64());
    case pb::SCALAR: return scalarToJson(a.scalar());
    case pb::SCALARS: v = Json::array(); for (const auto& x : a.scalars()) v.push_back(scalarToJson(x)); return v;
  }
  return nullptr;
}

void attrFromJson(const std::string& name, const Json& v, AttrType type, pb::OpDesc::Attr& a) {
  a.set_name(name);
  a.set_type(type);
  switch (type) {
    case pb::INT: a.set_i(static_cast<int32_t>(v.get<int64_t>())); break;
    case pb::FLOAT: a.set_f(static_cast<float>(jsonToDouble(v))); break;
    case pb::STRING: a.set_s(jsonToBytes(v)); break;
    case pb::INTS: for (const auto& x : v) a.add_ints(static_cast<int32_t>(x.get<int64_t>())); break;
    case pb::FLOATS: for (const auto& x : v) a.add_floats(static_cast<float>(jsonToDouble(x))); break;
    case pb::STRINGS: for (const auto& x : v) a.add_strings(jsonToBytes(x)); break;
    case pb::BOOLEAN: a.set_b(v.get<bool>()); break;
    case pb::BOOLEANS: for (const auto& x : v) a.add_bools(x.get<bool>()); break;
    case pb::BLOCK: a.set_block_idx(static_cast<int32_t>(v.get<int64_t>())); break;
    case pb::LONG: a.set_l(v.get<int64_t>()); break;
    case pb::BLOCKS: for (const auto& x : v) a.add_blocks_idx(static_cast<int32_t>(x.get<int64_t>())); break;
    case pb::LONGS: for (const auto& x : v) a.add_longs(x.get<int64_t>()); break;
    case pb::FLOAT64S: for (const auto& x : v) a.add_float64s(jsonToDouble(x)); break;
    case pb::VAR: a.set_var_name(v.get<std::string>()); break;
    case pb::VARS: for (const auto& x : v) a.add_vars_name(x.get<std::string>()); break;
    case pb::FLOAT64: a.set_float64(jsonToDouble(v)); break;
    case pb::SCALAR: scalarFromJson(v, *a.mutable_scalar()); break;
    case pb::SCALARS: for (const auto& x : v) scalarFromJson(x, *a.add_scalars()); break;
  }
}

// The Paddle type of an attr that has none recorded (a pass added it): from its JSON spelling.
AttrType guessAttrType(const Json& v) {
  if (v.is_boolean()) return pb::BOOLEAN;
  if (v.is_number_integer()) {
    int64_t x = v.get<int64_t>();
    return x == static_cast<int32_t>(x) ? pb::INT : pb::LONG;
  }
  // A float that a 32-bit float does not hold exactly would lose digits as FLOAT.
  if (v.is_number()) return floatToJson(static_cast<float>(v.get<double>())) == v ? pb::FLOAT : pb::FLOAT64;
  if (v.is_string()) return pb::STRING;
  if (v.is_array()) {
    if (v.empty() || v[0].is_number_integer()) {
      for (const auto& x : v)
        if (x.is_number_integer() && x.get<int64_t>() != static_cast<int32_t>(x.get<int64_t>())) return pb::LONGS;
      return pb::INTS;
    }
    if (v[0].is_boolean()) return pb::BOOLEANS;
    if (v[0].is_number()) return pb::FLOATS;
    return pb::STRINGS;
  }
  return pb::STRING;
}

// ---- vars -----------------------------------------------------------------------------------

// The TensorDesc field a var type keeps its shape in, by VarType field name, or null.
const char* defaultTensorField(int type) {
  switch (type) {
    case VarType::LOD_TENSOR: return "lod_tensor";
    case VarType::SELECTED_ROWS: return "selected_rows";
    case VarType::LOD_TENSOR_ARRAY: return "tensor_array";
    case VarType::STRING: return "string";
    case VarType::STRINGS: return "strings";
    case VarType::VOCAB: return "vocab";
    case VarType::SPARSE_COO: return "sparse_coo";
    case VarType::SPARSE_CSR: return "sparse_csr";
    default: return nullptr;
  }
}
const VarType::TensorDesc* tensorOf(const VarType& t, std::string_view field) {
  if (field == "lod_tensor") return t.has_lod_tensor() ? &t.lod_tensor().tensor() : nullptr;
  if (field == "tensor_array") return t.has_tensor_array() ? &t.tensor_array().tensor() : nullptr;
  if (field == "selected_rows") return t.has_selected_rows() ? &t.selected_rows() : nullptr;
  if (field == "string") return t.has_string() ? &t.string() : nullptr;
  if (field == "strings") return t.has_strings() ? &t.strings() : nullptr;
  if (field == "vocab") return t.has_vocab() ? &t.vocab() : nullptr;
  if (field == "sparse_coo") return t.has_sparse_coo() ? &t.sparse_coo() : nullptr;
  if (field == "sparse_csr") return t.has_sparse_csr() ? &t.sparse_csr() : nullptr;
  return nullptr;
}
VarType::TensorDesc* mutableTensorOf(VarType& t, std::string_view field, int lod_level, bool has_lod) {
  auto lod = [&](VarType::LoDTensorDesc* d) {
    if (has_lod) d->set_lod_level(lod_level);
    return d->mutable_tensor();
  };
  if (field == "lod_tensor") return lod(t.mutable_lod_tensor());
  if (field == "tensor_array") return lod(t.mutable_tensor_array());
  if (field == "selected_rows") return t.mutable_selected_rows();
  if (field == "string") return t.mutable_string();
  if (field == "strings") return t.mutable_strings();
  if (field == "vocab") return t.mutable_vocab();
  if (field == "sparse_coo") return t.mutable_sparse_coo();
  if (field == "sparse_csr") return t.mutable_sparse_csr();
  return nullptr;
}
const char* kTensorFields[] = {"lod_tensor", "tensor_array", "selected_rows", "string", "strings", "vocab", "sparse_coo", "sparse_csr"};

Json varToJson(const pb::VarDesc& v) {
  Json j;
  j["name"] = v.name();
  const VarType& t = v.type();
  const char* field = defaultTensorField(t.type());
  for (const char* f : kTensorFields)
    if (!tensorOf(t, field ? field : "") && tensorOf(t, f)) field = f;
  const VarType::TensorDesc* tensor = field ? tensorOf(t, field) : nullptr;
  Json paddle;
  paddle["type"] = enumName(VarType::Type_descriptor(), t.type());
  if (tensor) {
    j["shape"] = shapeFromPaddle(std::vector<int64_t>(tensor->dims().begin(), tensor->dims().end()), paddle);
    auto [dtype, exact] = dtypeFromPaddle(enumName(VarType::Type_descriptor(), tensor->data_type()));
    j["dtype"] = dtype;
    if (!exact) paddle["dtype"] = enumName(VarType::Type_descriptor(), tensor->data_type());
    if (field != std::string_view(defaultTensorField(t.type()) ? defaultTensorField(t.type()) : ""))
      paddle["tensor"] = field;
    const VarType::LoDTensorDesc* lod = std::string_view(field) == "lod_tensor"     ? &t.lod_tensor()
                                        : std::string_view(field) == "tensor_array" ? &t.tensor_array()
                                                                                    : nullptr;
    if (lod && lod->has_lod_level()) paddle["lod_level"] = lod->lod_level();
  } else {
    // Feed/fetch lists, scopes, readers: no tensor. Format v1 wants a shape and dtype all the same.
    j["shape"] = Json::array();
    j["dtype"] = "float32";
    paddle["tensor"] = nullptr;
  }
  j["persistable"] = v.persistable();
  if (!v.has_persistable()) paddle["persistable"] = nullptr;  // absent in the file, not false
  if (v.has_need_check_feed()) paddle["need_check_feed"] = v.need_check_feed();
  if (v.has_is_parameter()) paddle["is_parameter"] = v.is_parameter();
  if (v.has_stop_gradient()) paddle["stop_gradient"] = v.stop_gradient();
  j["paddle"] = std::move(paddle);
  return j;
}

pb::VarDesc varFromJson(const Json& j) {
  pb::VarDesc v;
  v.set_name(j.at("name").get<std::string>());
  static const Json kNone = Json::object();
  const Json& p = j.contains("paddle") ? j["paddle"] : kNone;
  VarType& t = *v.mutable_type();
  int type = VarType::LOD_TENSOR;
  if (p.contains("type")) type = enumValue(VarType::Type_descriptor(), p["type"].get<std::string>());
  t.set_type(static_cast<VarType::Type>(type));
  std::string field = defaultTensorField(type) ? defaultTensorField(type) : "";
  if (p.contains("tensor")) field = p["tensor"].is_null() ? "" : p["tensor"].get<std::string>();
  if (!field.empty()) {
    bool has_lod = p.contains("lod_level");
    auto* tensor = mutableTensorOf(t, field, has_lod ? p["lod_level"].get<int>() : 0, has_lod);
    if (!tensor) throw std::invalid_argument("unknown tensor field '" + field + "'");
    std::string dtype = j.at("dtype").get<std::string>();
    std::string paddle_dtype = dtypeToPaddle(dtype);
    // The Paddle dtype kept for a dtype sp-opt lacks still holds if the var's dtype is its stand-in.
    if (p.contains("dtype") && dtypeFromPaddle(p["dtype"].get<std::string>()).first == dtype)
      paddle_dtype = p["dtype"].get<std::string>();
    tensor->set_data_type(static_cast<VarType::Type>(enumValue(VarType::Type_descriptor(), paddle_dtype)));
    for (int64_t d : dimsToPaddle(j.at("shape"), p)) tensor->add_dims(d);
  }
  if (!(p.contains("persistable") && p["persistable"].is_null())) v.set_persistable(j.value("persistable", false));
  if (p.contains("need_check_feed")) v.set_need_check_feed(p["need_check_feed"].get<bool>());
  if (p.contains("is_parameter")) v.set_is_parameter(p["is_parameter"].get<bool>());
  if (p.contains("stop_gradient")) v.set_stop_gradient(p["stop_gradient"].get<bool>());
  return v;
}

// ---- ops ------------------------------------------------------------------------------------

Json slotsToJson(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots) {
  Json j = Json::object();
  for (const auto& s : slots) {
    Json& args = j[s.parameter()];
    if (args.is_null()) args = Json::array();
    for (const auto& a : s.arguments()) args.push_back(a);
  }
  return j;
}

Json opToJson(const pb::OpDesc& op) {
  Json j;
  j["type"] = op.type();
  j["inputs"] = slotsToJson(op.inputs());
  j["outputs"] = slotsToJson(op.outputs());
  Json attrs = Json::object(), types = Json::object();
  for (const auto& a : op.attrs()) {
    attrs[a.name()] = attrToJson(a);
    types[a.name()] = enumName(pb::AttrType_descriptor(), a.type());
  }
  j["attrs"] = std::move(attrs);
  Json paddle;
  paddle["attr_types"] = std::move(types);
  if (op.has_is_target()) paddle["is_target"] = op.is_target();
  j["paddle"] = std::move(paddle);
  return j;
}

pb::OpDesc opFromJson(const Json& j) {
  pb::OpDesc op;
  for (const auto& [slot, args] : j.at("inputs").items()) {
    auto* s = op.add_inputs();
    s->set_parameter(slot);
    for (const auto& a : args) s->add_arguments(a.get<std::string>());
  }
  for (const auto& [slot, args] : j.at("outputs").items()) {
    auto* s = op.add_outputs();
    s->set_parameter(slot);
    for (const auto& a : args) s->add_arguments(a.get<std::string>());
  }
  op.set_type(j.at("type").get<std::string>());
  static const Json kNone = Json::object();
  const Json& p = j.contains("paddle") ? j["paddle"] : kNone;
  const Json& types = p.contains("attr_types") ? p["attr_types"] : kNone;
  if (j.contains("attrs"))
    for (const auto& [name, value] : j["attrs"].items()) {
      AttrType type = types.contains(name)
                          ? static_cast<AttrType>(enumValue(pb::AttrType_descriptor(), types[name].get<std::string>()))
                          : guessAttrType(value);
      attrFromJson(name, value, type, *op.add_attrs());
    }
  if (p.contains("is_target")) op.set_is_target(p["is_target"].get<bool>());
  return op;
}

// ---- shells: a program or block without its blocks / vars / ops ----------------------------

Json programShellToJson(const pb::ProgramDesc& p) {
  Json j = Json::object();
  if (p.has_version()) j["version"] = p.version().has_version() ? Json(p.version().version()) : Json(nullptr);
  if (p.has_op_version_map()) {
    Json m = Json::array();
    for (const auto& pair : p.op_version_map().pair()) m.push_back({pair.op_name(), pair.op_version().version()});
    j["op_version_map"] = std::move(m);
  }
  return j;
}
pb::ProgramDesc programShellFromJson(const Json& j) {
  pb::ProgramDesc p;
  if (j.contains("version")) {
    auto* v = p.mutable_version();
    if (!j["version"].is_null()) v->set_version(j["version"].get<int64_t>());
  }
  if (j.contains("op_version_map")) {
    auto* m = p.mutable_op_version_map();
    for (const auto& pair : j["op_version_map"]) {
      auto* e = m->add_pair();
      e->set_op_name(pair.at(0).get<std::string>());
      e->mutable_op_version()->set_version(pair.at(1).get<int32_t>());
    }
  }
  return p;
}
Json blockShellToJson(const pb::BlockDesc& b) {
  Json j = Json::object();
  if (b.has_forward_block_idx()) j["forward_block_idx"] = b.forward_block_idx();
  if (!b.has_parent_idx()) j["parent_idx"] = nullptr;
  return j;
}
pb::BlockDesc blockShellFromJson(const Json& j, const Json& block) {
  pb::BlockDesc b;
  b.set_idx(block.at("idx").get<int32_t>());
  if (!(j.contains("parent_idx") && j["parent_idx"].is_null())) b.set_parent_idx(block.value("parent_idx", -1));
  if (j.contains("forward_block_idx")) b.set_forward_block_idx(j["forward_block_idx"].get<int32_t>());
  return b;
}

// `entity["paddle"]["raw"]` = the original bytes when mapping back does not give them exactly.
template <typename Msg>
void keepRawIfLossy(const Msg& original, const Msg& mapped_back, Json& paddle) {
  std::string a = original.SerializeAsString(), b = mapped_back.SerializeAsString();
  if (a != b) paddle["raw"] = toHex(a);
}
// The raw bytes kept for an entity, if they still map to what the entity's JSON says now.
template <typename Msg, typename ToJson>
bool rawStillHolds(const Json& paddle, const Json& current, ToJson to_json, Msg& out) {
  if (!paddle.is_object() || !paddle.contains("raw")) return false;
  std::string bytes = fromHex(paddle["raw"].get<std::string>());
  if (!out.ParseFromString(bytes)) return false;
  Json now = current;
  if (now.contains("paddle")) now["paddle"].erase("raw");
  return to_json(out) == now;
}

// ---- keys a ProgramDesc has no field for (the `spopt` field, framework.proto) -------------------

// The keys an import produces for an entity, in the order it produces them.
const std::vector<std::string> kVarKeys = {"name", "shape", "dtype", "persistable", "paddle"};
const std::vector<std::string> kOpKeys = {"type", "inputs", "outputs", "attrs", "paddle"};
const std::vector<std::string> kBlockKeys = {"idx", "parent_idx", "vars", "ops", "paddle"};
const std::vector<std::string> kProgramKeys = {"rank", "blocks", "paddle"};

// {"keys": [...], "values": {...}} when the entity has keys outside `mapped` or its keys are not
// in the order an import gives; empty when the ProgramDesc fields say everything.
// `imported_paddle`: the "paddle" object an import of the written message would give; where the
// entity's own differs (it came from program text, or a pass edited it), it is kept as a value.
std::string extraKeys(const Json& j, const std::vector<std::string>& mapped, const Json& imported_paddle) {
  Json values = Json::object(), keys = Json::array();
  if (j.contains("paddle") && j["paddle"] != imported_paddle) values["paddle"] = j["paddle"];
  std::vector<std::string> expected;
  for (const auto& k : mapped)
    if (j.contains(k)) expected.push_back(k);
  std::vector<std::string> actual;
  for (const auto& [k, v] : j.items()) {
    keys.push_back(k);
    if (std::find(mapped.begin(), mapped.end(), k) == mapped.end() || values.contains(k)) values[k] = v;
    else actual.push_back(k);
  }
  // An import adds "paddle" where the entity had none: the key list says to drop it again.
  bool paddle_as_imported = j.contains("paddle") == !imported_paddle.is_null();
  if (values.empty() && actual == expected && paddle_as_imported) return "";
  return Json{{"keys", std::move(keys)}, {"values", std::move(values)}}.dump();
}
void restoreExtraKeys(Json& j, const std::string& extra, const std::string& path, const std::string& where) {
  Json e;
  try {
    e = Json::parse(extra);
  } catch (const std::exception&) {
    throw InputError(path, "", where + ": the spopt field (52001) is not JSON");
  }
  if (!e.is_object() || !e.contains("keys") || !e["keys"].is_array())
    throw InputError(path, "", where + ": the spopt field (52001) has no key list");
  Json out = Json::object();
  for (const auto& k : e["keys"]) {
    if (!k.is_string()) continue;
    std::string key = k.get<std::string>();
    if (e.contains("values") && e["values"].is_object() && e["values"].contains(key)) out[key] = e["values"][key];
    else if (j.contains(key)) out[key] = std::move(j[key]);
  }
  j = std::move(out);
}
// Imports ignore the spopt field when checking that an entity maps back exactly.
template <typename Msg>
const Msg& withoutExtra(const Msg& m, Msg& scratch) {
  if (!m.has_spopt()) return m;
  scratch = m;
  scratch.clear_spopt();
  return scratch;
}

// What an import of `m` puts under the entity's "paddle" key (null when it puts none).
template <typename Msg, typename ToJson, typename FromJson>
Json importedPaddle(const Msg& m, ToJson to_json, FromJson from_json) {
  Json j = to_json(m);
  if (!j.contains("paddle")) return nullptr;
  keepRawIfLossy(m, from_json(j), j["paddle"]);
  return j["paddle"];
}

}  // namespace

bool looksLikeProgramDesc(std::string_view bytes) {
  // A ProgramDesc starts with a field tag: blocks (1), version (4) or op_version_map (5), all
  // length-delimited. Text formats were tried before this one.
  if (bytes.empty()) return false;
  unsigned char c = static_cast<unsigned char>(bytes[0]);
  return c == 0x0a || c == 0x22 || c == 0x2a;
}

namespace {
ImportedProgram convertProgramDesc(const std::string& path, std::string_view bytes);
}

ImportedProgram readProgramDesc(const std::string& path, std::string_view bytes) {
  try {
    ImportedProgram imported = convertProgramDesc(path, bytes);
    imported.path = path;
    noteScopeVars(imported);
    return imported;
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path, "", std::string("invalid ProgramDesc: ") + e.what());
  }
}

namespace {
ImportedProgram convertProgramDesc(const std::string& path, std::string_view bytes) {
  if (auto problem = findWireProblem(bytes)) throw InputError(path, "", *problem);
  pb::ProgramDesc desc;
  if (!desc.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw InputError(path, "", "invalid ProgramDesc (protobuf parse failed)");
  if (desc.blocks_size() == 0) throw InputError(path, "", "invalid ProgramDesc: no blocks");
  ImportedProgram result;
  Json program;
  Json blocks = Json::array();
  for (int bi = 0; bi < desc.blocks_size(); ++bi) {
    const pb::BlockDesc& b = desc.blocks(bi);
    std::string where = "block " + std::to_string(bi);
    if (!b.has_idx()) throw InputError(path, "", "invalid ProgramDesc: " + where + " has no idx");
    Json block;
    block["idx"] = b.idx();
    block["parent_idx"] = b.parent_idx();
    Json vars = Json::array(), ops = Json::array();
    for (int vi = 0; vi < b.vars_size(); ++vi) {
      const pb::VarDesc& v = b.vars(vi);
      if (!v.has_name() || !v.has_type())
        throw InputError(path, "", "invalid ProgramDesc: " + where + " var " + std::to_string(vi) + " has no name or type");
      pb::VarDesc scratch;
      const pb::VarDesc& plain = withoutExtra(v, scratch);
      Json j = varToJson(plain);
      keepRawIfLossy(plain, varFromJson(j), j["paddle"]);
      if (v.has_spopt()) restoreExtraKeys(j, v.spopt(), path, where + " var " + std::to_string(vi));
      vars.push_back(std::move(j));
    }
    for (int oi = 0; oi < b.ops_size(); ++oi) {
      const pb::OpDesc& op = b.ops(oi);
      if (!op.has_type()) throw InputError(path, "", "invalid ProgramDesc: " + where + " op " + std::to_string(oi) + " has no type");
      pb::OpDesc scratch;
      const pb::OpDesc& plain = withoutExtra(op, scratch);
      Json j = opToJson(plain);
      keepRawIfLossy(plain, opFromJson(j), j["paddle"]);
      if (op.has_spopt()) restoreExtraKeys(j, op.spopt(), path, where + " op " + std::to_string(oi));
      ops.push_back(std::move(j));
    }
    block["vars"] = std::move(vars);
    block["ops"] = std::move(ops);
    pb::BlockDesc shell = b;
    shell.clear_vars();
    shell.clear_ops();
    shell.clear_spopt();
    Json paddle = blockShellToJson(shell);
    keepRawIfLossy(shell, blockShellFromJson(paddle, block), paddle);
    if (!paddle.empty()) block["paddle"] = std::move(paddle);
    if (b.has_spopt()) restoreExtraKeys(block, b.spopt(), path, where);
    blocks.push_back(std::move(block));
  }
  program["blocks"] = std::move(blocks);
  pb::ProgramDesc shell = desc;
  shell.clear_blocks();
  shell.clear_spopt();
  Json paddle = programShellToJson(shell);
  keepRawIfLossy(shell, programShellFromJson(paddle), paddle);
  program["paddle"] = std::move(paddle);
  if (desc.has_spopt()) restoreExtraKeys(program, desc.spopt(), path, "program");
  result.program = std::move(program);
  return result;
}
}  // namespace

std::string writeProgramDesc(const Json& program, const std::string& where) {
  std::string pointer;
  try {
    pb::ProgramDesc desc;
    static const Json kNone = Json::object();
    const Json& ppaddle = program.contains("paddle") ? program["paddle"] : kNone;
    pb::ProgramDesc shell;
    if (!rawStillHolds(ppaddle, ppaddle, programShellToJson, shell)) shell = programShellFromJson(ppaddle);
    const auto& blocks = program.at("blocks");
    for (size_t bi = 0; bi < blocks.size(); ++bi) {
      const Json& block = blocks[bi];
      pointer = "/blocks/" + std::to_string(bi);
      const Json& bpaddle = block.contains("paddle") ? block["paddle"] : kNone;
      pb::BlockDesc* b = desc.add_blocks();
      if (!rawStillHolds(bpaddle, bpaddle, blockShellToJson, *b)) *b = blockShellFromJson(bpaddle, block);
      b->set_idx(block.at("idx").get<int32_t>());
      {
        pb::BlockDesc shell = *b;
        Json imported = blockShellToJson(shell);
        keepRawIfLossy(shell, blockShellFromJson(imported, block), imported);
        if (auto extra = extraKeys(block, kBlockKeys, imported.empty() ? Json() : imported); !extra.empty()) b->set_spopt(extra);
      }
      const Json& vars = block.at("vars");
      for (size_t vi = 0; vi < vars.size(); ++vi) {
        pointer = "/blocks/" + std::to_string(bi) + "/vars/" + std::to_string(vi);
        const Json& v = vars[vi];
        if (isScopeOnly(v)) continue;  // the importer declared it; Paddle's program does not
        pb::VarDesc* out = b->add_vars();
        if (!rawStillHolds(v.contains("paddle") ? v["paddle"] : kNone, v, varToJson, *out)) *out = varFromJson(v);
        if (auto extra = extraKeys(v, kVarKeys, importedPaddle(*out, varToJson, varFromJson)); !extra.empty())
          out->set_spopt(extra);
      }
      const Json& ops = block.at("ops");
      for (size_t oi = 0; oi < ops.size(); ++oi) {
        pointer = "/blocks/" + std::to_string(bi) + "/ops/" + std::to_string(oi);
        const Json& op = ops[oi];
        pb::OpDesc* out = b->add_ops();
        if (!rawStillHolds(op.contains("paddle") ? op["paddle"] : kNone, op, opToJson, *out)) *out = opFromJson(op);
        if (auto extra = extraKeys(op, kOpKeys, importedPaddle(*out, opToJson, opFromJson)); !extra.empty())
          out->set_spopt(extra);
      }
    }
    // Blocks first, then the shell's fields: the same field order as Paddle's own serializer.
    desc.MergeFrom(shell);
    Json imported = programShellToJson(shell);
    keepRawIfLossy(shell, programShellFromJson(imported), imported);
    if (auto extra = extraKeys(program, kProgramKeys, imported); !extra.empty()) desc.set_spopt(extra);
    return desc.SerializeAsString();
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(where, pointer, std::string("cannot write as ProgramDesc: ") + e.what());
  }
}

}  // namespace spopt::paddle
