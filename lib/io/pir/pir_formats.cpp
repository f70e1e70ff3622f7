#include "io/pir/pir_formats.h"

#include <cctype>

#include "io/pir/pir_json.h"
#include "io/pir/pir_text.h"

namespace spopt::pir {
namespace {
// The bytes from the first non-space one.
std::string_view skipSpace(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}
}  // namespace

bool looksLikePirJson(std::string_view bytes) {
  std::string_view s = skipSpace(bytes);
  if (s.empty() || s[0] != '{') return false;
  s = skipSpace(s.substr(1));
  return s.substr(0, 11) == "\"base_code\"" || s.substr(0, 9) == "\"program\"";
}

paddle::ImportedProgram readPirJsonFormat(const std::string& path, std::string_view bytes) {
  paddle::ImportedProgram p;
  p.program = pirJsonToProgram(bytes, path);
  return p;
}

std::string writePirJsonFormat(const paddle::Json& program, const std::string& where) {
  return writePirJson(program, where);
}

bool looksLikePirText(std::string_view bytes) {
  std::string_view s = skipSpace(bytes);
  if (s.empty() || s[0] != '{') return false;
  s = skipSpace(s.substr(1));
  return s.substr(0, 2) == "(%" || s.substr(0, 2) == "()" || (!s.empty() && (s[0] == '"' || s[0] == '}'));
}

paddle::ImportedProgram readPirTextFormat(const std::string& path, std::string_view bytes) {
  paddle::ImportedProgram p;
  p.program = pirTextToProgram(bytes, path);
  return p;
}

std::string writePirTextFormat(const paddle::Json& program, const std::string& where) {
  return writePirText(program, where);
}

}  // namespace spopt::pir
