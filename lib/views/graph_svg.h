#pragma once
// A static SVG of a ViewGraph laid out by layered_layout.h: what `graph --format svg` falls back to
// when Graphviz's dot does not finish in time. Plainer than dot's drawing (straight edges, rows
// centred) but linear-ish in the graph and always there.
#include <string>

#include "views/view_graph.h"

namespace spopt {

std::string layeredSvg(const ViewGraph& g, const std::string& title);

}  // namespace spopt
