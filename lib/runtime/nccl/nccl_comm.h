#pragma once
// One rank's NCCL communicators for a job (one per ring it belongs to), shared by the in-process
// (nccl_backend.cpp) and the mpirun (nccl_mpi.cpp) launch modes, which differ only in how a
// ring's unique id reaches its members and how the members compare collective headers.
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/nccl/device_executor.h"

namespace spopt::rt {

void ncclCheck(ncclResult_t r, const std::string& what);  // DeviceError naming the call

// The members of a ring compare what they are about to issue at position `seq` before NCCL moves
// data: a mismatch throws CollectiveMismatch (NCCL itself would hang or corrupt); a member that
// never arrives is a timeout error naming it.
class HeaderAgreement {
 public:
  virtual ~HeaderAgreement() = default;
  virtual void agree(int64_t ring_id, const std::vector<int64_t>& ranks, int position, uint64_t seq, const CollectiveHeader& h,
                     const OpDesc& d) = 0;
};

class NcclRankComm final : public DeviceComm {
 public:
  // Creates the communicators of every ring holding `rank` (non-blocking, polled against the
  // timeout and `aborted`) on `device`; ids: each such ring's unique id.
  NcclRankComm(const Job& job, int64_t rank, int device, const std::map<int64_t, ncclUniqueId>& ids, HeaderAgreement& agreement,
               std::chrono::milliseconds timeout, const std::atomic<bool>& aborted);
  ~NcclRankComm() override;  // ncclCommDestroy, or ncclCommAbort when unwinding an error

  void allReduce(int64_t ring, const DevTensor& in, DevTensor& out, ReduceOp op, const OpDesc& d, cudaStream_t s) override;
  void reduceScatter(int64_t ring, const DevTensor& in, DevTensor& out, const OpDesc& d, cudaStream_t s) override;
  void allGather(int64_t ring, const DevTensor& in, DevTensor& out, const OpDesc& d, cudaStream_t s) override;
  void broadcast(int64_t ring, const DevTensor& in, DevTensor& out, int64_t root, const OpDesc& d, cudaStream_t s) override;
  void reduce(int64_t ring, const DevTensor& in, DevTensor& out, int64_t root, const OpDesc& d, cudaStream_t s) override;
  void sendRecv(int64_t ring, P2PKind kind, int64_t peer, DevTensor& t, const OpDesc& d, cudaStream_t s, bool opens, bool closes) override;
  void abort() override;

 private:
  struct Ring {
    ncclComm_t comm = nullptr;
    std::vector<int64_t> ranks;
    int position = -1;
    uint64_t seq = 0;
  };
  int64_t rank_;
  HeaderAgreement& agreement_;
  std::chrono::milliseconds timeout_;
  const std::atomic<bool>& aborted_;
  std::unordered_map<int64_t, Ring> rings_;

  Ring& agree(int64_t ring_id, const CollectiveHeader& h, const DevTensor& in, const DevTensor& out, const OpDesc& d);
  void settle(Ring& r, const std::string& what);
};

}  // namespace spopt::rt
