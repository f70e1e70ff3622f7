#pragma once
// Pieces of the self-contained html views: one file, inline CSS and SVG, nothing fetched.
#include <string>
#include <string_view>
#include <vector>

#include "analysis/comm_stats.h"

namespace spopt {

std::string escapeHtml(std::string_view text);

// "<!DOCTYPE html>... <body>" with the page's CSS (and `extra_css`), and the closing tags.
std::string htmlHead(const std::string& title, const std::string& extra_css = "");
std::string htmlTail();

// The SVG document that `dot -Tsvg` printed, reduced to its <svg> element (no XML prolog or
// DOCTYPE, which would name an external DTD) so that it can sit inline in the page.
std::string inlineSvg(const std::string& svg_document);

// The graph in a box, scaled to the window's width unless the reader unticks "fit to width".
std::string graphBox(const std::string& svg_document);

// A colour key for the graph's node statuses; `clustered`: the keys of the clustered view.
std::string graphLegend(bool diff, bool clustered = false);

// One row of the collectives table: a label and before/after statistics.
struct CommRow {
  std::string label;
  CommStats before, after;
};
// A table of collectives and bytes moved; with `compare` false only the "after" column is shown.
std::string commTable(const std::vector<CommRow>& rows, bool compare);

}  // namespace spopt
