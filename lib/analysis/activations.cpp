#include "analysis/activations.h"

#include <unordered_map>

#include "analysis/memory.h"
#include "ops/op_view.h"
#include "support/checked_size.h"
#include "ir/op_role.h"

namespace spopt {

const std::string& LayerNamer::next(const Op& op) {
  std::string scope = op.attrs.getString("op_namescope").value_or("");
  size_t at = scope.find("/layer_");
  if (at != std::string::npos) {
    size_t end = scope.find('/', at + 1);
    current_ = scope.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
  } else if (scope.find("/auto_parallel/") == std::string::npos) {
    size_t begin = scope.find_first_not_of('/');
    size_t end = begin == std::string::npos ? begin : scope.find('/', begin);
    current_ = begin == std::string::npos ? "-" : scope.substr(begin, end == std::string::npos ? end : end - begin);
  }
  return current_;
}

ActivationReport activationMemory(const Program& p) {
  ActivationReport r;
  std::unordered_map<std::string, size_t> layer_index;
  LayerNamer layers;
  for (const auto& b : p.blocks)
    for (const Op& op : b->ops) {
      const std::string& layer = layers.next(op);
      Phase phase = phaseOf(op);
      if (isBackward(phase)) r.has_backward = true;
      if (phase != Phase::Forward) continue;
      for (const Slot& s : op.outputs)
        for (const Arg& a : s.args) {
          const Var* v = a.var;
          if (!v || v->persistable || v->writers.size() != 1 || v->numel() <= 0) continue;
          bool kept = false;
          for (const Op* reader : v->readers) {
            if (!isBackward(phaseOf(*reader))) continue;
            for (const Slot& in : reader->inputs) {
              if (!readsBuffer(*reader, in.name)) continue;
              for (const Arg& ia : in.args) kept = kept || ia.var == v;
            }
          }
          if (!kept) continue;
          auto [it, fresh] = layer_index.try_emplace(layer, r.layers.size());
          if (fresh) r.layers.push_back({layer, 0, {}, {}});
          LayerActivations& l = r.layers[it->second];
          int64_t bytes = varBytes(*v);
          l.bytes = saturatingAdd(l.bytes, bytes);
          int64_t& by_op = l.by_op[std::string(op.type)];
          by_op = saturatingAdd(by_op, bytes);
          l.vars.push_back({v, &op, bytes});
          r.total_bytes = saturatingAdd(r.total_bytes, bytes);
        }
    }
  return r;
}

}  // namespace spopt
