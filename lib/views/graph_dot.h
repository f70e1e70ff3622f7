#pragma once
// Graphviz dot text for a ViewGraph. Colours: removed red, added green, changed amber, unchanged
// grey; collectives are hexagons labelled with their ring and bytes; folded runs are dashed boxes.
#include <string>

#include "views/view_graph.h"

namespace spopt {

std::string graphToDot(const ViewGraph& g, const std::string& title);

// Fill colours of the node statuses, also used by the html legend (and looked for by the
// browser test in screenshots).
const char* statusFill(ViewStatus s);
const char* statusStroke(ViewStatus s);

}  // namespace spopt
