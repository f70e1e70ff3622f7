#include "io/paddle/legacy_text.h"
#include "support/error.h"
namespace spopt::paddle {
bool looksLikeLegacyText(std::string_view bytes) { return bytes.substr(0, 12) == "{ // block 0"; }
ImportedProgram readLegacyText(const std::string& path, std::string_view) { throw InputError(path, "", "todo"); }
}
