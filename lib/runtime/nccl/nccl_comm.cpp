#include "runtime/nccl/nccl_comm.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t ncclType(Storage s) {
  switch (s) {
    case Storage::F32: return ncclFloat32;
    case Storage::F64: return ncclFloat64;
    case Storage::I64: return ncclInt64;
    case Storage::U8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Prod: return ncclProd;
    case ReduceOp::Avg: return ncclAvg;
  }
  return ncclSum;
}

void checkCounts(CollectiveKind kind, const DevTensor& in, const DevTensor& out, int64_t members, const OpDesc& d) {
  auto fail = [&](const std::string& why) { throw InputError(d.file, d.pointer, d.text() + ": " + why); };
  if (in.storage() != out.storage()) fail("input and output dtypes differ");
  int64_t want = in.numel;
  if (kind == CollectiveKind::ReduceScatter) {
    if (in.shape.empty() || in.shape[0] % members != 0)
      fail("axis 0 of the input (" + std::to_string(in.shape.empty() ? 0 : in.shape[0]) + ") is not divisible by the group size " +
           std::to_string(members));
    want = in.numel / members;
  } else if (kind == CollectiveKind::AllGather) {
    want = in.numel * members;
  }
  if (out.numel != want) fail("output has " + std::to_string(out.numel) + " elements, the collective produces " + std::to_string(want));
}

}  // namespace

void ncclCheck(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess && r != ncclInProgress) throw DeviceError(what + " failed: " + ncclGetErrorString(r));
}

NcclRankComm::NcclRankComm(const Job& job, int64_t rank, int device, const std::map<int64_t, ncclUniqueId>& ids,
                           HeaderAgreement& agreement, std::chrono::milliseconds timeout, const std::atomic<bool>& aborted)
    : rank_(rank), agreement_(agreement), timeout_(timeout), aborted_(aborted) {
  cudaCheck(cudaSetDevice(device), "cudaSetDevice");
  // Non-blocking communicators: creation and every call are polled against the timeout and the
  // abort flag, so a rank that never joins cannot hang the others.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  // Only rings whose members all have a program get a communicator: a ring naming a rank the job
  // does not hold is valid while no collective uses it (replay checks that), but its
  // communicator could never complete. Every member applies the same rule, so they agree.
  auto hosted = [&](const ProcessGroup& g) {
    return std::all_of(g.ranks.begin(), g.ranks.end(), [&](int64_t r) { return job.program(r) != nullptr; });
  };
  bool group_open = false;
  try {
    ncclCheck(ncclGroupStart(), "ncclGroupStart");
    group_open = true;
    for (const auto& g : job.groups) {
      int pos = g.positionOf(rank);
      if (pos < 0 || !hosted(g)) continue;
      Ring r{nullptr, g.ranks, pos, 0};
      ncclResult_t res = ncclCommInitRankConfig(&r.comm, int(g.ranks.size()), ids.at(g.ring_id), pos, &config);
      if (r.comm) rings_[g.ring_id] = std::move(r);
      ncclCheck(res, "ncclCommInitRank (ring " + std::to_string(g.ring_id) + ")");
    }
    group_open = false;
    ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
    for (auto& [id, r] : rings_) settle(r, "ncclCommInitRank (ring " + std::to_string(id) + ")");
  } catch (...) {
    // The destructor does not run for a constructor that throws: close the group and abort what
    // was created here.
    if (group_open) ncclGroupEnd();
    for (auto& [id, r] : rings_)
      if (r.comm) ncclCommAbort(r.comm);
    throw;
  }
}

NcclRankComm::~NcclRankComm() {
  const bool failing = std::uncaught_exceptions() > 0 || aborted_;
  for (auto& [id, r] : rings_) {
    if (!r.comm) continue;
    if (failing) {
      ncclCommAbort(r.comm);
      continue;
    }
    // A non-blocking communicator finalizes asynchronously: wait (bounded) before destroying it.
    ncclCommFinalize(r.comm);
    const auto deadline = Clock::now() + timeout_;
    ncclResult_t state = ncclInProgress;
    while (ncclCommGetAsyncError(r.comm, &state) == ncclSuccess && state == ncclInProgress && Clock::now() < deadline)
      std::this_thread::yield();
    if (state == ncclSuccess) ncclCommDestroy(r.comm);
    else ncclCommAbort(r.comm);
  }
}

void NcclRankComm::allReduce(int64_t ring, const DevTensor& in, DevTensor& out, ReduceOp op, const OpDesc& d, cudaStream_t s) {
  if (op == ReduceOp::Avg && (in.storage() == Storage::I64 || in.storage() == Storage::U8))
    throw InputError(d.file, d.pointer, d.text() + ": the nccl backend averages floating tensors only");
  Ring& r = agree(ring, {CollectiveKind::AllReduce, in.dtype, in.numel, int64_t(op)}, in, out, d);
  ncclCheck(ncclAllReduce(in.buf.get(), out.buf.get(), size_t(in.numel), ncclType(in.storage()), ncclOp(op), r.comm, s), "ncclAllReduce");
  settle(r, "ncclAllReduce");
}
void NcclRankComm::reduceScatter(int64_t ring, const DevTensor& in, DevTensor& out, const OpDesc& d, cudaStream_t s) {
  Ring& r = agree(ring, {CollectiveKind::ReduceScatter, in.dtype, in.numel, 0}, in, out, d);
  ncclCheck(ncclReduceScatter(in.buf.get(), out.buf.get(), size_t(out.numel), ncclType(in.storage()), ncclSum, r.comm, s),
            "ncclReduceScatter");
  settle(r, "ncclReduceScatter");
}
void NcclRankComm::allGather(int64_t ring, const DevTensor& in, DevTensor& out, const OpDesc& d, cudaStream_t s) {
  Ring& r = agree(ring, {CollectiveKind::AllGather, in.dtype, in.numel, 0}, in, out, d);
  ncclCheck(ncclAllGather(in.buf.get(), out.buf.get(), size_t(in.numel), ncclType(in.storage()), r.comm, s), "ncclAllGather");
  settle(r, "ncclAllGather");
}
void NcclRankComm::broadcast(int64_t ring, const DevTensor& in, DevTensor& out, int64_t root, const OpDesc& d, cudaStream_t s) {
  Ring& r = agree(ring, {CollectiveKind::Broadcast, in.dtype, in.numel, root}, in, out, d);
  int root_pos = -1;
  for (size_t i = 0; i < r.ranks.size(); ++i)
    if (r.ranks[i] == root) root_pos = int(i);
  if (root_pos < 0) throw InputError(d.file, d.pointer, d.text() + ": root " + std::to_string(root) + " is not a member of ring " + std::to_string(ring));
  ncclCheck(ncclBroadcast(in.buf.get(), out.buf.get(), size_t(in.numel), ncclType(in.storage()), root_pos, r.comm, s), "ncclBroadcast");
  settle(r, "ncclBroadcast");
}
// ncclReduce writes the receive buffer on the root only: the others copy their input into out.
void NcclRankComm::reduce(int64_t ring, const DevTensor& in, DevTensor& out, int64_t root, const OpDesc& d, cudaStream_t s) {
  Ring& r = agree(ring, {CollectiveKind::Reduce, in.dtype, in.numel, root}, in, out, d);
  int root_pos = -1;
  for (size_t i = 0; i < r.ranks.size(); ++i)
    if (r.ranks[i] == root) root_pos = int(i);
  ncclCheck(ncclReduce(in.buf.get(), out.buf.get(), size_t(in.numel), ncclType(in.storage()), ncclSum, root_pos, r.comm, s), "ncclReduce");
  settle(r, "ncclReduce");
  if (root != rank_ && in.bytes() && out.buf.get() != in.buf.get())
    cudaCheck(cudaMemcpyAsync(out.buf.get(), in.buf.get(), in.bytes(), cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
}
void NcclRankComm::sendRecv(int64_t ring_id, P2PKind kind, int64_t peer, DevTensor& t, const OpDesc& d, cudaStream_t s, bool opens,
                            bool closes) {
  auto it = rings_.find(ring_id);
  if (it == rings_.end())
    throw InputError(d.file, d.pointer, d.text() + ": rank " + std::to_string(rank_) + " is not a member of ring " +
                                            std::to_string(ring_id) + " (or the ring has no process group)");
  Ring& r = it->second;
  auto peer_at = std::find(r.ranks.begin(), r.ranks.end(), peer);
  if (peer_at == r.ranks.end() || peer == rank_)
    throw InputError(d.file, d.pointer, d.text() + ": peer rank " + std::to_string(peer) + " is no other member of ring " + std::to_string(ring_id));
  const int peer_pos = int(peer_at - r.ranks.begin());
  const bool send = kind == P2PKind::Send;
  if (opens) ncclCheck(ncclGroupStart(), "ncclGroupStart");
  ncclResult_t res = send ? ncclSend(t.buf.get(), size_t(t.numel), ncclType(t.storage()), peer_pos, r.comm, s)
                          : ncclRecv(t.buf.get(), size_t(t.numel), ncclType(t.storage()), peer_pos, r.comm, s);
  if (res != ncclSuccess && res != ncclInProgress && !closes) ncclGroupEnd();  // close the group before reporting
  ncclCheck(res, send ? "ncclSend" : "ncclRecv");
  if (!closes) return;
  ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
  settle(r, send ? "ncclSend" : "ncclRecv");
}

void NcclRankComm::abort() {
  for (auto& [id, r] : rings_)
    if (r.comm) {
      ncclCommAbort(r.comm);
      r.comm = nullptr;
    }
}

NcclRankComm::Ring& NcclRankComm::agree(int64_t ring_id, const CollectiveHeader& h, const DevTensor& in, const DevTensor& out, const OpDesc& d) {
  auto it = rings_.find(ring_id);
  if (it == rings_.end())
    throw InputError(d.file, d.pointer, d.text() + ": rank " + std::to_string(rank_) + " is not a member of ring " +
                                            std::to_string(ring_id) + " (or the ring has no process group)");
  Ring& r = it->second;
  if (!collectiveRootAttr(h.kind).empty() && std::find(r.ranks.begin(), r.ranks.end(), h.extra) == r.ranks.end())
    throw InputError(d.file, d.pointer, d.text() + ": root " + std::to_string(h.extra) + " is not a member of ring " + std::to_string(ring_id));
  checkCounts(h.kind, in, out, int64_t(r.ranks.size()), d);
  agreement_.agree(ring_id, r.ranks, r.position, r.seq++, h, d);
  return r;
}

// Polls a non-blocking communicator until its last call is enqueued (or failed).
void NcclRankComm::settle(Ring& r, const std::string& what) {
  const auto deadline = Clock::now() + timeout_;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclCheck(ncclCommGetAsyncError(r.comm, &state), "ncclCommGetAsyncError");
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) throw DeviceError(what + " failed: " + ncclGetErrorString(state));
    if (aborted_) throw RankAborted("aborted: another rank failed");
    if (Clock::now() >= deadline) throw DeviceError(what + " did not complete within the timeout");
    std::this_thread::yield();
  }
}

}  // namespace spopt::rt
