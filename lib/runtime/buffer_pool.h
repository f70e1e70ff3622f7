#pragma once
// Tensor buffers. Replay gives every op output a fresh buffer and frees it after its last reader,
// so a ResNet step allocates and frees gigabytes in buffers of a few sizes. Fresh pages from the
// kernel cost a fault each (4 KiB; 425k faults, half the CPU time of a 4-rank ResNet replay on a
// VM), so buffers of 64 KiB and more come from a process-wide pool: freed ones are kept (up to a
// cap) and handed out again for a request of the same size class, and new ones are mapped 2 MiB
// aligned and advised as transparent huge pages. Smaller buffers go to malloc.
// A replay is one step, so nearly every buffer it uses is fresh memory; faulting it in (the
// kernel zeroes each huge page, and on a VM the host faults in its backing too) cost a fifth of
// a GPT replay's CPU time inside its kernels. reserveBuffers() pays that before the run starts.
#include <cstddef>
#include <memory>

namespace spopt::rt {

// `bytes` bytes (at least 1), 64-byte aligned, zero-filled when `zero`. Throws std::bad_alloc.
std::shared_ptr<std::byte> allocateBuffer(size_t bytes, bool zero = true);

// Maps `bytes` (rounded up to 2 MiB) as huge pages and faults them in now, on up to `threads`
// threads; later requests that would map fresh memory are cut from it first (a reservation
// adds to any left from an earlier one). For the executor: reserve a run's peak before its clock
// starts, so that its kernels do not take the page faults. No-op under AddressSanitizer.
void reserveBuffers(size_t bytes, int threads = 1);

struct BufferPoolStats {
  size_t mapped = 0;  // bytes held from the kernel by the pool (live and idle)
  size_t idle = 0;    // of which kept for reuse
  size_t reused = 0;  // requests served from the idle list
  size_t fresh = 0;   // requests that mapped new memory (or took reserved memory)
  size_t reserved = 0;  // reserved bytes not yet handed out
};
BufferPoolStats bufferPoolStats();
// False under AddressSanitizer: every buffer comes from malloc there, where ASan guards it.
bool bufferPoolActive();

}  // namespace spopt::rt
