// libFuzzer targets over the Paddle readers (lib/io/paddle): built twice, as fuzz-programdesc
// (SPOPT_FUZZ_PROGRAMDESC: ProgramDesc bytes, then written back) and fuzz-paddle-text (legacy
// program text, then assembled into a job). Any input must end in a result or an InputError,
// never a crash, a hang or another exception.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "io/paddle/assemble.h"
#include "io/paddle/legacy_text.h"
#include "io/paddle/program_desc.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  using namespace spopt::paddle;
  try {
#ifdef SPOPT_FUZZ_PROGRAMDESC
    ImportedProgram p = readProgramDesc("fuzz.pdmodel", bytes);
    (void)writeProgramDesc(p.program, "fuzz.json");
#else
    ImportedProgram p = readLegacyText("fuzz.txt", bytes);
    std::vector<ImportedProgram> mains;
    mains.push_back(std::move(p));
    AssembleOptions options;
    options.rings[0] = {0};
    (void)assembleJob(std::move(mains), options).dump();
#endif
  } catch (const spopt::InputError&) {
  }
  return 0;
}
