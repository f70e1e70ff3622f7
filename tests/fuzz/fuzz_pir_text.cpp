// libFuzzer target over the PIR text reader: any input ends in a program or one InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/pir/pir_text.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)spopt::pir::pirTextToProgram(text, "fuzz.pirtxt");
  } catch (const spopt::InputError&) {
  }
  try {
    (void)spopt::pir::parsePirTextAttribute(text, "fuzz.txt");
  } catch (const spopt::InputError&) {
  }
  return 0;
}
