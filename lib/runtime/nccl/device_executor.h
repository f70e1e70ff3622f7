#pragma once
// Runs one rank's program on a GPU: the host executor's structure (executor.h: checkReplayable,
// liveness, inputs filled on the host by programInput and copied up, kept vars reported through
// host copies) with device tensors, CUDA kernels / cuBLAS (device_ops.h) and NCCL collectives.
//
// Streams: compute ops run on the rank's compute stream; an op whose dist_attr names an
// execution_stream other than "default" runs on a stream of that name (one per name, created on
// first use), which is how collectives overlap compute. A var produced on one stream and read on
// another is ordered by a CUDA event; event_to_record / events_to_wait record and wait on named
// events. A var's buffer is freed on the compute stream after every stream that used it.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>

#include "runtime/communicator.h"
#include "runtime/executor.h"
#include "runtime/nccl/cuda_util.h"

namespace spopt::rt {

// One rank's NCCL communicators for a job. Each call checks the members' headers on the host
// (a mismatch throws CollectiveMismatch) and then enqueues the NCCL call on `s`.
class DeviceComm {
 public:
  virtual ~DeviceComm() = default;
  virtual void allReduce(int64_t ring, const DevTensor& in, DevTensor& out, ReduceOp op, const OpDesc& d, cudaStream_t s) = 0;
  virtual void reduceScatter(int64_t ring, const DevTensor& in, DevTensor& out, const OpDesc& d, cudaStream_t s) = 0;
  virtual void allGather(int64_t ring, const DevTensor& in, DevTensor& out, const OpDesc& d, cudaStream_t s) = 0;
  virtual void broadcast(int64_t ring, const DevTensor& in, DevTensor& out, int64_t root, const OpDesc& d, cudaStream_t s) = 0;
  // The sum on `root` (a global rank); the others' out is their input.
  virtual void reduce(int64_t ring, const DevTensor& in, DevTensor& out, int64_t root, const OpDesc& d, cudaStream_t s) = 0;
  // A send (reads `t`) or receive (writes `t`) with global rank `peer` on ring `ring`, enqueued on
  // `s`. The ops of one group (analysis/p2p.h sameP2PGroup) go between ncclGroupStart (`opens`,
  // on its first) and ncclGroupEnd (`closes`, on its last), so a ring exchange does not deadlock.
  // Headers are not compared across ranks here: the verifier pairs every send with its receive
  // (dtype, size) before replay.
  virtual void sendRecv(int64_t ring, P2PKind kind, int64_t peer, DevTensor& t, const OpDesc& d, cudaStream_t s, bool opens,
                        bool closes) = 0;
  // Another rank failed or a collective hung: ncclCommAbort every ring (unblocks the device).
  virtual void abort() = 0;
};

struct DeviceRunOptions {
  int device = 0;
  std::chrono::milliseconds timeout{60'000};   // for the final device synchronisation
  const std::atomic<bool>* aborted = nullptr;  // raised when another rank failed
};

RankRun executeOnDevice(const Program& p, DeviceComm& comm, const ExecOptions& o, const DeviceRunOptions& d);

}  // namespace spopt::rt
