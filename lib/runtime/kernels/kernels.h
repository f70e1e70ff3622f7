#pragma once
// CPU kernels for the compute and scheduling ops of ../shared/design/ops.md (not collectives: the
// executor runs those through a Communicator; a KernelAllReduce op's kernel gets its ring). A kernel reads its inputs and fills outputs that
// the executor has already allocated with each output var's declared dtype and shape.
//
// Families: matmul.cpp (cblas), elementwise.cpp (+ broadcast.h), activation.cpp (gelu, relu,
// sigmoid, hardsigmoid, hardswish, scale, softmax), norm.cpp, shape.cpp (+ permute.h), reduce.cpp,
// dropout.cpp, misc.cpp, conv.cpp (conv2d, pool2d; conv_gemm.h), conv_transpose.cpp, interp.cpp
// (nearest_interp), batch_norm.cpp, train_vision.cpp (mul, top_k_v2, accuracy, momentum),
// train_language.cpp (embedding, cross-entropy, adam, adamw), vocab_parallel.cpp (c_embedding,
// c_softmax_with_cross_entropy), amp.cpp (cast, loss scaling, clipping), llama.cpp (rms_norm,
// silu, swiglu, rotary embedding), index.cpp (tril/triu, where, full_like, gather_nd), slice.cpp
// (squeeze2, slice, stack, expand_v2); the registry is kernels.cpp. Every kernel is deterministic
// (fixed summation order, reductions in double) and thread-safe; float32 gelu/softmax use
// fast_math.h, float64 uses libm.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/collective_kind.h"
#include "ir/ir.h"
#include "ops/op_view.h"
#include "runtime/tensor.h"

namespace spopt::rt {

// Where a kernel finds its tensors, by canonical slot name (ops/op_view.h maps them to the op's
// dialect). Absent slots or args give nullptr / 0.
class KernelIO {
 public:
  virtual ~KernelIO() = default;
  virtual const Tensor* input(std::string_view slot, size_t i = 0) const = 0;
  virtual size_t inputCount(std::string_view slot) const = 0;
  virtual Tensor* output(std::string_view slot, size_t i = 0) = 0;
  virtual size_t outputCount(std::string_view slot) const = 0;
};

// The ring of an op whose catalogue definition's collective kind is KernelAllReduce: its kernel
// all-reduces small buffers over it. The members issue the same calls in the same order, paired
// like any collective (a mismatch or a missing member is the communicator's error, never a hang).
class KernelRing {
 public:
  virtual ~KernelRing() = default;
  virtual int64_t size() const = 0;      // members
  virtual int64_t position() const = 0;  // this rank's index in the ring's group
  // buf = the reduction of every member's buf, in group order (the same bits on every backend).
  virtual void allReduce(Tensor& buf, ReduceOp op) = 0;
};

struct KernelContext {
  const OpView& op;  // type, and slots and attrs by their canonical (legacy) names in any dialect
  int64_t rank;     // global rank running the op (dropout masks depend on it)
  uint64_t seed;    // the replay seed
  KernelIO& io;
  KernelRing* ring = nullptr;  // set for a KernelAllReduce op only
};

// Bad shapes or attributes for an op: the executor turns it into exit 2 naming op, rank, block, index.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using KernelFn = void (*)(KernelContext&);
// The kernel of an op's catalogue definition, by any spelling of it; nullptr when replay does not
// support the op.
KernelFn findKernel(std::string_view op_type);
KernelFn kernelFor(const OpDef& def);
// One spelling (the first) of each op that has a kernel, sorted.
std::vector<std::string_view> supportedKernelOps();

}  // namespace spopt::rt
