// libFuzzer target over the loader, the verifier and the writer: any input must end in a
// result or an InputError(s), never a crash, a hang or another exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/loader.h"
#include "io/writer.h"
#include "support/error.h"
#include "verify/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto job = spopt::loadJobFromText(text, "fuzz.json");
    if (spopt::verifyJob(*job).empty()) (void)spopt::jobToString(*job);
  } catch (const spopt::InputError&) {
  } catch (const spopt::InputErrors&) {
  }
  return 0;
}
