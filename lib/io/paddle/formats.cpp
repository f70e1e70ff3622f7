// The table of Paddle program formats (see formats.h for how to add one).
#include "io/paddle/formats.h"

#include "io/paddle/legacy_text.h"
#include "io/paddle/program_desc.h"
#include "io/pir/pir_formats.h"
#include "io/source.h"
#include "support/error.h"

namespace spopt::paddle {

const std::vector<ProgramFormat>& programFormats() {
  // Order matters for detection: the cheapest, most certain tests first. A protobuf binary is
  // tried last because "not text" is all that distinguishes it.
  static const std::vector<ProgramFormat> formats = {
      {"pir-json", "json", "Paddle 3 PIR JSON ({\"base_code\":{\"magic\":\"pir\"},\"program\":...})",
       pir::looksLikePirJson, pir::readPirJsonFormat, pir::writePirJsonFormat},
      {"pir-text", "pirtxt", "Paddle 3 PIR text as a program prints ({ (%1) = \"pd_op.full\" () {...} : ...)",
       pir::looksLikePirText, pir::readPirTextFormat, pir::writePirTextFormat},
      {"paddle-text", "txt", "legacy program text as print(program) writes it ({ // block 0 ...)",
       looksLikeLegacyText, readLegacyText, nullptr},
      {"pdmodel", "pdmodel", "ProgramDesc protobuf (*.pdmodel, __model__, desc.serialize_to_string())",
       looksLikeProgramDesc, readProgramDesc, writeProgramDesc},
  };
  return formats;
}

std::string formatNames(bool writable_only) {
  std::string names;
  for (const auto& f : programFormats()) {
    if (writable_only && !f.write) continue;
    if (!names.empty()) names += ", ";
    names += f.name;
  }
  return names;
}

const ProgramFormat& formatByName(std::string_view name, bool for_writing) {
  for (const auto& f : programFormats())
    if (f.name == name && (!for_writing || f.write)) return f;
  throw InputError(for_writing ? "--to" : "--from", "", std::string("unknown ") + (for_writing ? "export" : "import") + " format '" +
                               std::string(name) + "' (known: " + formatNames(for_writing) + ")");
}

ImportedProgram readProgramFile(const std::string& path, std::string_view forced_format) {
  std::string bytes = readInputFile(path);  // a FIFO or pipe too, up to --max-input-bytes
  if (bytes.empty()) throw InputError(path, "", "empty file: not a Paddle program");
  const ProgramFormat* format = nullptr;
  if (!forced_format.empty()) {
    format = &formatByName(forced_format);
  } else {
    for (const auto& f : programFormats())
      if (f.detect(bytes)) {
        format = &f;
        break;
      }
    if (!format)
      throw InputError(path, "", "not a Paddle program this build reads (formats: " + formatNames() +
                                     "; --from forces one)");
  }
  ImportedProgram imported = format->read(path, bytes);
  imported.path = path;
  imported.format = std::string(format->name);
  return imported;
}

}  // namespace spopt::paddle
