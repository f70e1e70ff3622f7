#pragma once
// Rendering dot text to SVG with Graphviz's `dot`, run as a subprocess.
#include <optional>
#include <string>
#include <string_view>

namespace spopt {

// The full path of an executable found on PATH, or nullopt.
std::optional<std::string> findOnPath(std::string_view tool);

// Pipes `dot_text` through `dot -Tsvg` and returns the SVG document, or nullopt when dot has not
// finished within `timeout_s` seconds (it is then killed: its layout time grows much faster than
// the graph, with no progress to show). Throws InputError (exit 2) naming the tool when `dot` is
// not on PATH, and with dot's own message when it fails.
std::optional<std::string> dotToSvg(const std::string& dot_text, double timeout_s);

}  // namespace spopt
