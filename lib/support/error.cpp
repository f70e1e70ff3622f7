#include "support/error.h"

namespace spopt {

std::string Diagnostic::line() const {
  std::string out = file;
  out += ": ";
  if (!pointer.empty()) {
    out += pointer;
    out += ": ";
  }
  out += message;
  return out;
}

InputError::InputError(Diagnostic d) : std::runtime_error(d.line()), diag_(std::move(d)) {}
InputError::InputError(std::string file, std::string pointer, std::string message)
    : InputError(Diagnostic{std::move(file), std::move(pointer), std::move(message)}) {}

static std::string joinLines(const std::vector<Diagnostic>& diags) {
  std::string out;
  for (const auto& d : diags) {
    if (!out.empty()) out += '\n';
    out += d.line();
  }
  return out;
}

InputErrors::InputErrors(std::vector<Diagnostic> diags)
    : std::runtime_error(joinLines(diags)), diags_(std::move(diags)) {}

std::string pointerToken(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

ErrorReport describeError(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const InputError& e) {
    return {e.what(), kExitBadInput};
  } catch (const InputErrors& e) {
    return {e.what(), kExitBadInput};
  } catch (const std::bad_alloc&) {
    return {"sp-opt: out of memory", kExitBadInput};
  } catch (const std::exception& e) {
    return {std::string("sp-opt: internal error: ") + e.what(), kExitInternal};
  } catch (...) {
    return {"sp-opt: internal error: unknown exception", kExitInternal};
  }
}

}  // namespace spopt
