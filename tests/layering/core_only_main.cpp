// Linked against the core library alone (IR, I/O, verifier), as the text-reader fuzzer is: a
// core source that comes to call into a layer above it fails to link here, in every build, not
// only in the clang build that makes the fuzzers. Runs the fuzzer's entry point on one job text.
#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main() {
  constexpr std::string_view kJob = "sp-opt.program text 1\nworld_size 1\n\nrank 0 {\n}\n";
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(kJob.data()), kJob.size());
}
