#pragma once
// Activation memory: the bytes of vars produced in forward and read by buffer in backward (the
// quantity Korthikanti et al. 2022, Table 2, count), per layer and by producing op.
// A grad op's slot that Paddle declares "no need buffer" (only its shape is read) keeps nothing.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace spopt {

// The layer of each op, called in program order: "layer_3" for an op whose op_namescope holds
// "/layer_3/"; an op inserted by resharding ("/auto_parallel/...") belongs to the layer of the op
// before it; else the scope's first component ("final_norm"), or "-" without a scope.
class LayerNamer {
 public:
  const std::string& next(const Op& op);

 private:
  std::string current_ = "-";
};

struct ActivationVar {
  const Var* var = nullptr;
  const Op* producer = nullptr;
  int64_t bytes = 0;
};

struct LayerActivations {
  std::string layer;
  int64_t bytes = 0;
  std::map<std::string, int64_t> by_op;  // producing op type -> bytes
  std::vector<ActivationVar> vars;       // program order of their producers
};

struct ActivationReport {
  bool has_backward = false;
  int64_t total_bytes = 0;
  std::vector<LayerActivations> layers;  // in order of first appearance
};

ActivationReport activationMemory(const Program& p);

}  // namespace spopt
