#pragma once
// Writes one rank's block as JSON text while the model code runs, without building an IR.
//
// A block lists its vars before its ops, but the model code declares vars as it emits ops. So the
// model runs twice over the same builder logic: in the Vars phase only declare() writes, in the
// Ops phase only op() writes. The model code is deterministic, so both runs see the same names.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gen/json_emitter.h"
#include "gen/topology.h"
#include "ir/ir.h"
#include "ir/op_role.h"

namespace spopt::gen {

// Paddle's OpRole bits (format.md), defined once in ir/op_role.h.
inline constexpr int kForward = op_role::kForward;
inline constexpr int kBackward = op_role::kBackward;
inline constexpr int kOptimize = op_role::kOptimize;
inline constexpr int kLoss = op_role::kLoss;

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;  // this rank's local shape
  std::vector<Axis> axes;      // per dim: the mesh axis sharding it
  DType dtype = DType::Float32;
  bool persistable = false;
};

// Paddle-style unique names: "linear_0", "linear_1", ...; "tmp_0", "tmp_1", ...
class Naming {
 public:
  std::string unique(std::string_view prefix);
  std::string tmp() { return unique("tmp"); }
  // How many names `prefix` has given out: the N of the next "prefix_N".
  int64_t issued(std::string_view prefix) const {
    auto it = next_.find(std::string(prefix));
    return it == next_.end() ? 0 : it->second;
  }

 private:
  std::unordered_map<std::string, int64_t> next_;
};

class ProgramBuilder;

// Mixed precision (--amp): parameters are float32 masters, each cast to the compute type where it
// is declared (nn.h's parameter()); the model's loss is scaled by loss_scaling.
struct MixedPrecision {
  DType compute = DType::BFloat16;
  Tensor loss_scaling, good_steps, bad_steps;  // update_loss_scaling's state
  Tensor loss_fp32, scaled_loss;                // the fetched loss cast up, times loss_scaling
  std::unordered_map<std::string, Tensor> masters;  // compute copy's name -> master
};

// One op being written: inputs, then outputs, then attributes (that order, as the JSON has it).
// op_role, op_namescope and the op's dist_attr are appended when the next op starts.
class OpWriter {
 public:
  OpWriter& in(std::string_view slot, const Tensor& t) { return in(slot, {&t}); }
  OpWriter& in(std::string_view slot, std::initializer_list<const Tensor*> ts);
  OpWriter& in(std::string_view slot, const std::vector<Tensor>& ts);
  OpWriter& out(std::string_view slot, const Tensor& t) { return out(slot, {&t}); }
  OpWriter& out(std::string_view slot, std::initializer_list<const Tensor*> ts);
  OpWriter& out(std::string_view slot, const std::vector<Tensor>& ts);
  OpWriter& flag(std::string_view key, bool v);
  OpWriter& integer(std::string_view key, int64_t v);
  OpWriter& real(std::string_view key, double v);
  OpWriter& text(std::string_view key, std::string_view v);
  OpWriter& ints(std::string_view key, const std::vector<int64_t>& v);
  OpWriter& role(int r);                    // instead of the builder's current role
  OpWriter& scope(std::string_view s);      // instead of the builder's current namescope

 private:
  friend class ProgramBuilder;

// Mixed precision (--amp): parameters are float32 masters, each cast to the compute type where it
// is declared (nn.h's parameter()); the model's loss is scaled by loss_scaling.
struct MixedPrecision {
  DType compute = DType::BFloat16;
  Tensor loss_scaling, good_steps, bad_steps;  // update_loss_scaling's state
  Tensor loss_fp32, scaled_loss;                // the fetched loss cast up, times loss_scaling
  std::unordered_map<std::string, Tensor> masters;  // compute copy's name -> master
};
  enum Section { kNone, kInputs, kOutputs, kAttrs };
  explicit OpWriter(ProgramBuilder& b) : b_(b) {}
  void slotNames(std::string_view slot, const Tensor* const* ts, size_t n);
  void enter(Section s);
  void key(std::string_view k);
  void finish();

  ProgramBuilder& b_;
  bool active_ = false;   // an op is open and being written
  Section section_ = kNone;
  bool first_in_section_ = true;
  int role_ = 0;
  std::string scope_;
};

class ProgramBuilder {
 public:
  enum class Phase { Vars, Ops };
  // `indent` precedes each var or op (a newline and spaces), entries are separated by commas.
  ProgramBuilder(JsonEmitter& out, const Topology& topo, Phase phase, std::string_view indent);

  Phase phase() const { return phase_; }
  const Topology& topology() const { return topo_; }
  Naming& names() { return names_; }
  // Null unless the model enabled mixed precision (before declaring anything).
  MixedPrecision* mixedPrecision() { return amp_ ? &*amp_ : nullptr; }
  MixedPrecision& enableMixedPrecision() { return amp_.emplace(); }

  Tensor declare(std::string name, std::vector<int64_t> shape, std::vector<Axis> axes, DType dtype,
                 bool persistable = false);
  // name@GRAD, same shape, sharding and dtype as `t`, never persistable.
  Tensor grad(const Tensor& t);
  // One of several partial gradients of `t` before they are summed (Paddle's @RENAME form).
  Tensor gradPart(const Tensor& t, int index);
  // A fresh tmp_N with t's shape, sharding and dtype.
  Tensor like(const Tensor& t);

  OpWriter& op(std::string_view type);
  void setRole(int role) { role_ = role; }
  void setScope(std::string scope) { scope_ = std::move(scope); }
  const std::string& scope() const { return scope_; }
  void finish();  // closes the last op
  size_t written() const { return count_; }

 private:
  friend class OpWriter;
  void entry();  // separator and indent before a var or op

  JsonEmitter& out_;
  const Topology& topo_;
  Phase phase_;
  std::string indent_;
  std::string op_dist_attr_;
  Naming names_;
  std::optional<MixedPrecision> amp_;
  OpWriter writer_;
  size_t count_ = 0;
  int role_ = kForward;
  std::string scope_ = "/";
};

}  // namespace spopt::gen
