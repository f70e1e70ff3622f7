#include "views/html_page.h"

#include "views/describe.h"
#include "views/graph_dot.h"

namespace spopt {

std::string escapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string htmlHead(const std::string& title, const std::string& extra_css) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escapeHtml(title) +
         "</title>\n<style>\n"
         "body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 1.2em 2em; color: #222; }\n"
         "h1 { font-size: 1.4em; margin: 0 0 .3em; } h2 { font-size: 1.15em; margin: 1.2em 0 .4em; }\n"
         ".files { color: #555; font-family: monospace; }\n"
         ".verdict { display: inline-block; padding: .15em .6em; border-radius: .3em; font-weight: bold; }\n"
         ".same { background: #dff3df; color: #1e6b1e; } .differ { background: #fde2c0; color: #8a4b00; }\n"
         ".graph { border: 1px solid #ddd; border-radius: .4em; padding: .5em; overflow: auto; }\n"
         "#fit:checked ~ .graph svg { max-width: 100%; width: auto; height: auto; }\n"
         "#fit:checked ~ .graph { text-align: center; }\n"
         ".fit { font-size: .85em; color: #555; }\n"
         ".note { background: #fff6dd; border: 1px solid #e8d08a; padding: .5em .8em; border-radius: .3em; }\n"
         ".legend span { display: inline-block; margin-right: 1em; font-size: .9em; }\n"
         ".legend i { display: inline-block; width: 1em; height: .8em; margin-right: .3em; border: 1px solid; vertical-align: middle; }\n"
         "table { border-collapse: collapse; font-size: .92em; } th, td { border: 1px solid #ccc; padding: .25em .7em; }\n"
         "th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }\n"
         "td.up { color: #b02020; } td.down { color: #1e7a1e; }\n"
         "pre.changes { background: #fafafa; border: 1px solid #e4e4e4; padding: .6em; overflow: auto; font-size: .88em; }\n"
         ".del { color: #b01818; } .add { color: #187818; } .chg { color: #946000; } .hdr { font-weight: bold; }\n"
         + extra_css + "</style>\n</head>\n<body>\n";
}

std::string htmlTail() { return "</body>\n</html>\n"; }

std::string inlineSvg(const std::string& svg_document) {
  size_t start = svg_document.find("<svg");
  if (start == std::string::npos) return svg_document;
  return svg_document.substr(start);
}

std::string graphBox(const std::string& svg) {
  // A checkbox and CSS alone toggle between fitting the window and full size: no script needed.
  return "<input type=\"checkbox\" id=\"fit\" checked><label class=\"fit\" for=\"fit\"> fit to width</label>\n"
         "<div class=\"graph\">\n" + inlineSvg(svg) + "</div>\n";
}

std::string graphLegend(bool diff, bool clustered) {
  std::string out = "<div class=\"legend\">";
  auto item = [&](ViewStatus s, const char* what) {
    out += std::string("<span><i style=\"background:") + statusFill(s) + ";border-color:" + statusStroke(s) + "\"></i>" +
           what + "</span>";
  };
  if (diff) {
    item(ViewStatus::Removed, "removed");
    item(ViewStatus::Added, "added");
    item(ViewStatus::Changed, "changed");
    item(ViewStatus::Unchanged, "unchanged");
  } else {
    item(ViewStatus::Unchanged, "op");
  }
  if (clustered) {
    out += "<span>hexagon: collective (outline and badge colour: its ring)</span>"
           "<span>box with a count: a cluster (name scope / phase), click to open</span>"
           "<span>dashed edge: data flowing back up (backward)</span></div>\n";
    return out;
  }
  out += "<span>hexagon: collective (ring, bytes)</span><span>ellipse: program input / fetched var</span>";
  out += "<span>dashed box: folded ops</span></div>\n";
  return out;
}

namespace {
std::string delta(int64_t before, int64_t after, bool bytes) {
  if (before == after) return "<td class=\"num\">=</td>";
  int64_t d = after - before;
  std::string text = (d > 0 ? "+" : "\u2212") + (bytes ? humanBytes(d > 0 ? d : -d) : std::to_string(d > 0 ? d : -d));
  return std::string("<td class=\"num ") + (d > 0 ? "up" : "down") + "\">" + text + "</td>";
}
std::string bytesCell(const CommStats& s, int64_t CommStats::*figure) {
  std::string text = humanBytes(s.*figure);
  if (s.unknown_size) text += " + " + std::to_string(s.unknown_size) + " unknown";
  return "<td class=\"num\">" + escapeHtml(text) + "</td>";
}
}  // namespace

std::string commTable(const std::vector<CommRow>& rows, bool compare) {
  std::string out = "<table class=\"comm\">\n<tr><th></th>";
  out += compare ? "<th>collectives before</th><th>after</th><th>change</th><th>payload before</th><th>after</th><th>change</th>"
                   "<th>ring traffic before</th><th>after</th><th>change</th>"
                 : "<th>collectives</th><th>payload</th><th>ring traffic</th>";
  out += "</tr>\n";
  for (const CommRow& r : rows) {
    out += "<tr><td>" + escapeHtml(r.label) + "</td>";
    if (compare) {
      out += "<td class=\"num\">" + std::to_string(r.before.count) + "</td><td class=\"num\">" +
             std::to_string(r.after.count) + "</td>" + delta(r.before.count, r.after.count, false);
      for (auto figure : {&CommStats::payload_bytes, &CommStats::ring_bytes})
        out += bytesCell(r.before, figure) + bytesCell(r.after, figure) + delta(r.before.*figure, r.after.*figure, true);
    } else {
      out += "<td class=\"num\">" + std::to_string(r.after.count) + "</td>" + bytesCell(r.after, &CommStats::payload_bytes) +
             bytesCell(r.after, &CommStats::ring_bytes);
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace spopt
