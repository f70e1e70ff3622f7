// libFuzzer target over the PIR JSON reader and writer: any input ends in an InputError or in a
// job that loads, and then exporting it gives back the same JSON value (the lossless promise).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "io/loader.h"
#include "io/pir/pir_json.h"
#include "io/writer.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using spopt::pir::ojson;
  try {
    ojson program = spopt::pir::pirJsonToProgram(text, "fuzz.json");
    ojson job = {{"format", "sp-opt.program"}, {"version", 1}, {"world_size", 1}, {"programs", ojson::array()}};
    ojson p = {{"rank", 0}};
    for (auto it = program.begin(); it != program.end(); ++it) p[it.key()] = it.value();
    job["programs"].push_back(std::move(p));
    auto loaded = spopt::loadJobFromText(job.dump(), "fuzz-job.json");
    ojson written = ojson::parse(spopt::jobToString(*loaded));
    std::string back = spopt::pir::writePirJson(written["programs"][0], "fuzz-job.json");
    if (nlohmann::json::parse(back) != nlohmann::json::parse(text)) std::abort();
  } catch (const spopt::InputError&) {
  } catch (const spopt::InputErrors&) {
  }
  return 0;
}
