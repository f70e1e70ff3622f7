#include "gen/topology.h"

namespace spopt::gen {

Topology::Topology(int64_t tp, int64_t dp) : tp_(tp), dp_(dp) {
  std::string ids;
  for (int64_t r = 0; r < world(); ++r) {
    if (r) ids += ',';
    ids += std::to_string(r);
  }
  if (dp_ > 1)
    mesh_json_ = "{\"shape\":[" + std::to_string(dp_) + "," + std::to_string(tp_) + "],\"process_ids\":[" + ids +
                 "],\"dim_names\":[\"dp\",\"mp\"]}";
  else
    mesh_json_ = "{\"shape\":[" + std::to_string(tp_) + "],\"process_ids\":[" + ids + "],\"dim_names\":[\"mp\"]}";
}

std::vector<int64_t> Topology::tpRingRanks(int64_t dp_index) const {
  std::vector<int64_t> ranks;
  for (int64_t t = 0; t < tp_; ++t) ranks.push_back(dp_index * tp_ + t);
  return ranks;
}

std::vector<int64_t> Topology::dpRingRanks(int64_t tp_index) const {
  std::vector<int64_t> ranks;
  for (int64_t d = 0; d < dp_; ++d) ranks.push_back(d * tp_ + tp_index);
  return ranks;
}

int64_t Topology::meshDim(Axis a) const {
  switch (a) {
    case Axis::Rep: return -1;
    case Axis::Mp: return dp_ > 1 ? 1 : 0;
    case Axis::Dp: return dp_ > 1 ? 0 : -1;
  }
  return -1;
}

}  // namespace spopt::gen
