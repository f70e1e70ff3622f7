#include "runtime/communicator.h"

#include <cstdio>
#include <cstring>

#include "support/error.h"

namespace spopt::rt {

std::string OpDesc::text() const {
  return type + " (rank " + std::to_string(rank) + ", block " + std::to_string(block) + ", op " + std::to_string(index) + ")";
}

std::string CollectiveHeader::text() const {
  std::string s = std::string(collectiveKindName(kind)) + " " + std::string(dtypeName(dtype)) + " x" + std::to_string(count);
  if (kind == CollectiveKind::AllReduce) s += " reduce_type " + std::to_string(extra);
  if (!collectiveRootAttr(kind).empty()) s += " root " + std::to_string(extra);
  return s;
}

std::string mismatchMessage(int64_t ring, uint64_t seq, const OpDesc& a, const CollectiveHeader& ha, const OpDesc& b,
                            const CollectiveHeader& hb) {
  return "collective mismatch on ring " + std::to_string(ring) + " at collective #" + std::to_string(seq) + ": rank " +
         std::to_string(a.rank) + " issued " + ha.text() + " from " + a.text() + " but rank " + std::to_string(b.rank) +
         " issued " + hb.text() + " from " + b.text();
}

std::string p2pMismatchMessage(int64_t ring, uint64_t k, const P2PSide& send, const P2PSide& recv) {
  auto side = [](const P2PSide& t) { return std::string(dtypeName(t.dtype)) + " x" + std::to_string(t.count) + " from " + t.desc.text(); };
  const std::string from = std::to_string(send.desc.rank), to = std::to_string(recv.desc.rank);
  return "send/recv mismatch on ring " + std::to_string(ring) + ", send #" + std::to_string(k) + " from rank " + from + " to rank " + to +
         ": rank " + from + " sends " + side(send) + " but rank " + to + " receives " + side(recv);
}

namespace {

template <typename T>
void reduceTyped(T* dst, const T* src, int64_t n, ReduceOp op, bool first) {
  if (first) {
    std::memcpy(dst, src, size_t(n) * sizeof(T));
    return;
  }
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
      break;
    case ReduceOp::Max:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] > dst[i] ? src[i] : dst[i];
      break;
    case ReduceOp::Min:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] < dst[i] ? src[i] : dst[i];
      break;
    case ReduceOp::Prod:
      for (int64_t i = 0; i < n; ++i) dst[i] *= src[i];
      break;
  }
}

}  // namespace

void reduceInto(Tensor& dst, const void* src, int64_t count, ReduceOp op, bool first) {
  switch (dst.storage()) {
    case Storage::F32: reduceTyped(dst.data<float>(), static_cast<const float*>(src), count, op, first); break;
    case Storage::F64: reduceTyped(dst.data<double>(), static_cast<const double*>(src), count, op, first); break;
    case Storage::I64: reduceTyped(dst.data<int64_t>(), static_cast<const int64_t*>(src), count, op, first); break;
    case Storage::U8: reduceTyped(dst.data<uint8_t>(), static_cast<const uint8_t*>(src), count, op, first); break;
  }
}

void finishReduce(Tensor& dst, ReduceOp op, int64_t members) {
  if (op != ReduceOp::Avg || members <= 1) return;
  int64_t n = dst.numel();
  switch (dst.storage()) {
    case Storage::F32: { auto* p = dst.data<float>(); for (int64_t i = 0; i < n; ++i) p[i] /= float(members); break; }
    case Storage::F64: { auto* p = dst.data<double>(); for (int64_t i = 0; i < n; ++i) p[i] /= double(members); break; }
    case Storage::I64: { auto* p = dst.data<int64_t>(); for (int64_t i = 0; i < n; ++i) p[i] /= members; break; }
    case Storage::U8: { auto* p = dst.data<uint8_t>(); for (int64_t i = 0; i < n; ++i) p[i] = uint8_t(p[i] / members); break; }
  }
}

void checkCollectiveShapes(CollectiveKind kind, const Tensor& in, const Tensor& out, int64_t members, const OpDesc& d) {
  auto fail = [&](const std::string& why) { throw InputError(d.file, d.pointer, d.text() + ": " + why); };
  if (in.storage() != out.storage()) fail("input and output dtypes differ");
  int64_t want = in.numel();
  switch (kind) {
    case CollectiveKind::ReduceScatter:
      if (in.shape().empty() || in.shape()[0] % members != 0)
        fail("axis 0 of the input (" + std::to_string(in.shape().empty() ? 0 : in.shape()[0]) +
             ") is not divisible by the group size " + std::to_string(members));
      want = in.numel() / members;
      break;
    case CollectiveKind::AllGather: want = in.numel() * members; break;
    default: break;
  }
  if (out.numel() != want)
    fail("output has " + std::to_string(out.numel()) + " elements, the collective produces " + std::to_string(want));
}

int Backend::reportError(const std::string& line, int code) {
  std::fprintf(stderr, "%s\n", line.c_str());
  return code;
}

}  // namespace spopt::rt
