#include "io/pir/pir_formats.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include "io/pir/pir_fetch.h"
#include "io/pir/pir_json.h"
#include "io/pir/pir_text.h"
#include "support/error.h"

namespace spopt::pir {
namespace {
// The bytes from the first non-space one.
std::string_view skipSpace(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Paddle's own PIR parser tests (test/cpp/pir/core/TestParserText.txt) keep cases between
// "//CHECK <kind>" and "//END" lines. What import reads of such a file: its program cases, every
// other line left blank so that a message's line numbers are the file's.
struct ParserTestFile {
  size_t programs = 0;
  std::string text;
};
std::optional<ParserTestFile> parserTestFile(std::string_view bytes) {
  if (skipSpace(bytes).substr(0, 7) != "//CHECK") return std::nullopt;
  ParserTestFile f;
  bool in_program = false;
  for (size_t at = 0; at < bytes.size();) {
    size_t end = std::min(bytes.find('\n', at), bytes.size());
    std::string_view line = bytes.substr(at, end - at);
    std::string_view word = skipSpace(line);
    if (word.substr(0, 7) == "//CHECK") {
      in_program = skipSpace(word.substr(7)).substr(0, 7) == "program";
      f.programs += in_program;
    } else if (word.substr(0, 5) == "//END") {
      in_program = false;
    } else if (in_program) {
      f.text += line;
    }
    f.text += '\n';
    at = end + 1;
  }
  return f;
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
  return writePirJson(withFetchOps(program), where);
}

bool looksLikePirText(std::string_view bytes) {
  if (parserTestFile(bytes)) return true;  // the reader says when it holds no program case
  std::string_view s = skipSpace(bytes);
  if (s.empty() || s[0] != '{') return false;
  s = skipSpace(s.substr(1));
  return s.substr(0, 2) == "(%" || s.substr(0, 2) == "()" || (!s.empty() && (s[0] == '"' || s[0] == '}'));
}

paddle::ImportedProgram readPirTextFormat(const std::string& path, std::string_view bytes) {
  paddle::ImportedProgram p;
  if (auto cases = parserTestFile(bytes)) {
    if (cases->programs != 1)
      throw InputError(path, "", "a PIR parser test file (//CHECK cases) with " + std::to_string(cases->programs) +
                                     " program cases: import reads exactly one");
    p.program = pirTextToProgram(cases->text, path);
    return p;
  }
  p.program = pirTextToProgram(bytes, path);
  return p;
}

std::string writePirTextFormat(const paddle::Json& program, const std::string& where) {
  return writePirText(withFetchOps(program), where);
}

}  // namespace spopt::pir
