#pragma once
// The diff as text for terminals and CI logs: a unified listing per rank, like diff -u.
#include <string>

#include "analysis/job_diff.h"

namespace spopt {

struct TextStyle {
  bool color = false;  // ANSI colours: removed red, added green, changed yellow
  bool html = false;   // HTML-escaped lines in <span class="del|add|chg|hdr"> (for the html view)
  bool summary = false;  // per rank its counts and collectives only, no op or var listing
};

std::string renderDiffText(const JobDiff& diff, const TextStyle& style);

}  // namespace spopt
