#pragma once
// How T x D ranks are arranged: rank r = d * T + t, with t its position in its tensor-parallel
// ring and d its position in its data-parallel ring. Ring ids are fixed by (T, D) alone:
// tensor-parallel ring of data-parallel group d = d; data-parallel ring of position t =
// (T > 1 ? D : 0) + t. A degree of 1 has no rings and no collectives.
#include <cstdint>
#include <string>
#include <vector>

namespace spopt::gen {

// Which mesh dimension shards a tensor dim: none, the tensor-parallel one, or the data-parallel one.
enum class Axis : uint8_t { Rep, Mp, Dp };

class Topology {
 public:
  Topology(int64_t tp, int64_t dp);

  int64_t tp() const { return tp_; }
  int64_t dp() const { return dp_; }
  int64_t world() const { return tp_ * dp_; }
  int64_t tpIndex(int64_t rank) const { return rank % tp_; }
  int64_t dpIndex(int64_t rank) const { return rank / tp_; }

  bool hasTpRings() const { return tp_ > 1; }
  bool hasDpRings() const { return dp_ > 1; }
  int64_t tpRing(int64_t dp_index) const { return dp_index; }
  int64_t dpRing(int64_t tp_index) const { return (tp_ > 1 ? dp_ : 0) + tp_index; }
  std::vector<int64_t> tpRingRanks(int64_t dp_index) const;
  std::vector<int64_t> dpRingRanks(int64_t tp_index) const;

  // The process mesh: [D, T] named ["dp", "mp"] when D > 1, else [T] named ["mp"]; process ids
  // in rank order, so a rank's mesh coordinate is (d, t).
  int64_t meshDim(Axis a) const;  // -1 for Rep, or for Dp when D == 1
  const std::string& meshJson() const { return mesh_json_; }  // compact JSON object

 private:
  int64_t tp_, dp_;
  std::string mesh_json_;
};

}  // namespace spopt::gen
