#pragma once
// Values of a program's inputs (vars read before any op writes them).
//
// THE RULE (the `gen` helper and the README rely on it exactly):
//  - Every input var is a slice of ONE global tensor. Global shape: the var's local shape with dim i
//    multiplied by process_mesh.shape[dims_mapping[i]] where dims_mapping[i] >= 0. A var without
//    dist_attr, or with dims_mapping all -1, is replicated: global shape = local shape, the same
//    values on every rank.
//  - The rank's mesh coordinate = unravel(index of the rank in process_mesh.process_ids, mesh shape)
//    (row-major). Local dim i starts at coordinate[dims_mapping[i]] * local_dim_i in the global tensor.
//  - Element with row-major global index g: u = elementUniform(seed, var name, g), uniform in
//    [-1, 1); floating vars get u, times 1/sqrt(global last dim) when the var is persistable
//    (a parameter) and its last dim is > 0, and |u| (times the same) when an op reads it where its
//    catalogue definition says non_negative (Adam's second moment and decay powers).
//    int32/int64 vars get floor((u + 1) * B / 2) in [0, B): B is 8, or, when an op reads the var
//    as indices into another operand (the catalogue's index_of: lookup ids into W's rows, labels
//    into the classes), the smallest such dim, or the bound its definition's index_bound gives
//    (a vocab shard's global ids: c_embedding's vocab_size, c_softmax_with_cross_entropy's classes
//    x nranks); a shard op that cannot say its global bound (c_embedding_grad, no vocab_size)
//    bounds by its shard's dim only when no other reader bounds the var; reads through a View op (reshape2, unsqueeze2)
//    count as reads of its result. bool/uint8 vars get 1 when u >= 0, else 0.
//  - A floating var an op reads as a rotary table (the catalogue's `rotary`: the sin and cos of
//    fused_rotary_position_embedding) is no noise but the table its callers compute (ops/op_def.h,
//    RotaryTable): global element g of a table with last dim d sits at position g / d, column
//    g mod d, with the reading op's use_neox_rotary_style (default true) and rotary_emb_base
//    (default 10000); computed in double, stored in the var's type.
//  - elementUniform: h = splitmix64(seed ^ fnv1a64(name)); x = splitmix64(h + g);
//    u = (x >> 11) * 2^-52 - 1  (53 random bits, exact in double; cast to the var's float type).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ops/op_def.h"
#include "runtime/tensor.h"

#include "support/hash.h"

namespace spopt::rt {

double elementUniform(uint64_t seed, std::string_view name, uint64_t global_index);

// Where a rank's local tensor of `var` lies in its global tensor.
struct ShardLayout {
  std::vector<int64_t> global_shape;
  std::vector<int64_t> offset;  // start of the local block in each global dim
};
// Throws InputError (var pointer) on a malformed dist_attr or a rank outside the var's mesh.
ShardLayout shardLayout(const Var& var, int64_t rank);

// What the ops reading `var` accept (THE RULE's B and |u|).
struct ValueDomain {
  int64_t index_bound = 8;
  bool non_negative = false;
  RotaryTable rotary = RotaryTable::None;
  bool rotary_neighbours = true;  // use_neox_rotary_style
  double rotary_base = 10000.0;
};
ValueDomain valueDomain(const Var& var);

// The input value of `var` on `rank` by THE RULE above.
Tensor fillInput(const Var& var, int64_t rank, uint64_t seed);

// Copies the rank's block out of a global tensor (any storage; converts to `dtype`).
Tensor sliceGlobal(const Tensor& global, const ShardLayout& layout, const std::vector<int64_t>& local_shape, DType dtype);

}  // namespace spopt::rt
