#pragma once
// Pieces shared by building view graphs (view_graph.cpp) and folding them (view_graph_fold.cpp).
#include <cstdint>
#include <functional>
#include <string_view>

#include "analysis/collectives.h"
#include "views/view_graph.h"

namespace spopt::view_detail {

constexpr uint32_t kNone = UINT32_MAX;

inline bool isCollective(const Op& op) {
  auto c = asCollective(op);
  return c && communicates(*c);
}

// An edge's identity: writer node, reader node and the var between them (or any other key).
struct EdgeKey {
  uint32_t from, to;
  std::string_view var;
  bool operator==(const EdgeKey&) const = default;
};
struct EdgeKeyHash {
  size_t operator()(const EdgeKey& k) const {
    size_t h = std::hash<std::string_view>{}(k.var);
    return h ^ ((static_cast<size_t>(k.from) << 32 | k.to) * 0x9E3779B97F4A7C15ull);
  }
};

}  // namespace spopt::view_detail
