// libFuzzer target over the text reader (io/text_reader.h): any input ends in a job or an
// InputError, never a crash, a hang or another exception; and the writer's text of a job that
// loads reads back to the same text (the round trip is exact), else the fuzzer aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/text_reader.h"
#include "io/text_writer.h"
#include "support/error.h"
#include "verify/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto job = spopt::readTextJob(text, "fuzz.sptxt");
    (void)spopt::verifyJob(*job);
    std::string printed = spopt::jobToText(*job);
    auto again = spopt::readTextJob(printed, "again.sptxt");
    if (spopt::jobToText(*again) != printed) std::abort();
  } catch (const spopt::InputError&) {
  } catch (const spopt::InputErrors&) {
  }
  return 0;
}
