#pragma once
// Errors that reach the user as one line: "FILE: /json/pointer: message".
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace spopt {

// Exit codes shared by every subcommand.
enum ExitCode : int { kExitOk = 0, kExitDiffers = 1, kExitBadInput = 2, kExitPassBroke = 3, kExitInternal = 70 };

struct Diagnostic {
  std::string file;     // the input file as the user named it
  std::string pointer;  // RFC 6901 JSON pointer into that file ("" = whole document)
  std::string message;
  std::string line() const;  // "file: /pointer: message"
};

// Bad input: malformed JSON, schema violations, unsupported ops... Always exit 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(Diagnostic d);
  InputError(std::string file, std::string pointer, std::string message);
  const Diagnostic& diagnostic() const { return diag_; }

 private:
  Diagnostic diag_;
};

// Several problems at once (the verifier reports all it finds).
class InputErrors : public std::runtime_error {
 public:
  explicit InputErrors(std::vector<Diagnostic> diags);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

// What an escaped exception tells the user (its line(s), without the trailing newline) and the
// exit code it means: bad input and out-of-memory 2, anything else an internal error (70).
struct ErrorReport {
  std::string text;
  int code;
};
ErrorReport describeError(const std::exception_ptr& error);

// Escapes one reference token of a JSON pointer ("~" -> "~0", "/" -> "~1").
std::string pointerToken(std::string_view token);

}  // namespace spopt
