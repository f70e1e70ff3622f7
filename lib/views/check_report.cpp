#include "views/check_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace spopt {
namespace {

const char* statusName(CheckCase::Status s) {
  switch (s) {
    case CheckCase::Passed: return "passed";
    case CheckCase::Failed: return "failed";
    case CheckCase::Skipped: return "skipped";
  }
  return "?";
}

size_t countStatus(const CheckSuite& s, CheckCase::Status status) {
  size_t n = 0;
  for (const CheckCase& c : s.cases) n += c.status == status;
  return n;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

// Workflow command data: % CR LF escaped; property values also : and , (GitHub's rules).
std::string githubData(const std::string& s, bool property) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else if (property && c == ':') out += "%3A";
    else if (property && c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

}  // namespace

bool CheckSuite::failed() const { return countStatus(*this, CheckCase::Failed) > 0; }

std::string xmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else if (c == '\'') out += "&apos;";
    else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') continue;
    else out += char(c);
  }
  return out;
}

std::string renderChecksText(const std::vector<CheckSuite>& suites) {
  std::string out;
  for (const CheckSuite& s : suites) {
    for (const CheckCase& c : s.cases) {
      for (const Diagnostic& d : c.failures) out += d.line() + "\n";
      for (const Diagnostic& d : c.warnings) out += "warning: " + d.line() + "\n";
    }
    size_t failed = countStatus(s, CheckCase::Failed);
    out += s.name + ": " + (failed ? "FAILED" : "passed") + " (" + std::to_string(s.cases.size()) + " checks, " +
           std::to_string(failed) + " failed)\n";
  }
  return out;
}

std::string renderChecksJson(const std::vector<CheckSuite>& suites) {
  using Json = nlohmann::ordered_json;
  Json all = Json::array();
  for (const CheckSuite& s : suites) {
    Json cases = Json::array();
    for (const CheckCase& c : s.cases) {
      Json j{{"name", c.name}, {"status", statusName(c.status)}};
      if (!c.detail.empty()) j["detail"] = c.detail;
      for (const auto& [key, value] : c.figures) j[key] = value;
      for (const char* key : {"failures", "warnings"}) {
        const auto& list = std::string(key) == "failures" ? c.failures : c.warnings;
        if (list.empty()) continue;
        Json items = Json::array();
        for (const Diagnostic& d : list) items.push_back({{"pointer", d.pointer}, {"message", d.message}});
        j[key] = items;
      }
      cases.push_back(j);
    }
    all.push_back({{"name", s.name}, {"passed", !s.failed()}, {"cases", cases}});
  }
  return Json{{"suites", all}}.dump(2) + "\n";
}

std::string renderChecksJunit(const std::vector<CheckSuite>& suites) {
  size_t tests = 0, failures = 0, skipped = 0;
  double total = 0;
  for (const CheckSuite& s : suites) {
    tests += s.cases.size();
    failures += countStatus(s, CheckCase::Failed);
    skipped += countStatus(s, CheckCase::Skipped);
    for (const CheckCase& c : s.cases) total += c.seconds;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"sp-opt\" tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) +
         "\" errors=\"0\" skipped=\"" + std::to_string(skipped) + "\" time=\"" + seconds(total) + "\">\n";
  for (size_t i = 0; i < suites.size(); ++i) {
    const CheckSuite& s = suites[i];
    double t = 0;
    for (const CheckCase& c : s.cases) t += c.seconds;
    out += "  <testsuite name=\"" + xmlEscape(s.name) + "\" id=\"" + std::to_string(i) + "\" tests=\"" +
           std::to_string(s.cases.size()) + "\" failures=\"" + std::to_string(countStatus(s, CheckCase::Failed)) +
           "\" errors=\"0\" skipped=\"" + std::to_string(countStatus(s, CheckCase::Skipped)) + "\" time=\"" + seconds(t) + "\">\n";
    for (const CheckCase& c : s.cases) {
      out += "    <testcase name=\"" + xmlEscape(c.name) + "\" classname=\"" + xmlEscape(s.name) + "\" time=\"" + seconds(c.seconds) + "\"";
      std::string body;
      if (c.status == CheckCase::Skipped) body += "      <skipped message=\"" + xmlEscape(c.detail) + "\"/>\n";
      if (c.status == CheckCase::Failed && !c.failures.empty()) {
        std::string all;
        for (const Diagnostic& d : c.failures) all += d.line() + "\n";
        body += "      <failure message=\"" + xmlEscape(c.failures.front().line()) + "\" type=\"" + xmlEscape(c.name) + "\">" +
                xmlEscape(all) + "</failure>\n";
      }
      std::string sysout = c.detail.empty() || c.status == CheckCase::Skipped ? "" : c.detail + "\n";
      for (const Diagnostic& d : c.warnings) sysout += "warning: " + d.line() + "\n";
      if (!sysout.empty()) body += "      <system-out>" + xmlEscape(sysout) + "</system-out>\n";
      out += body.empty() ? "/>\n" : ">\n" + body + "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  return out + "</testsuites>\n";
}

std::string renderChecksGithub(const std::vector<CheckSuite>& suites) {
  std::string out;
  auto command = [&](const char* level, const CheckSuite& s, const CheckCase& c, const Diagnostic& d) {
    std::string message = d.pointer.empty() ? d.message : d.pointer + ": " + d.message;
    out += std::string("::") + level + " file=" + githubData(d.file.empty() ? s.name : d.file, true) + ",title=" +
           githubData("sp-opt " + c.name, true) + "::" + githubData(message, false) + "\n";
  };
  for (const CheckSuite& s : suites) {
    for (const CheckCase& c : s.cases) {
      for (const Diagnostic& d : c.failures) command("error", s, c, d);
      for (const Diagnostic& d : c.warnings) command("warning", s, c, d);
    }
    size_t failed = countStatus(s, CheckCase::Failed);
    out += "::notice file=" + githubData(s.name, true) + ",title=sp-opt::" +
           githubData(std::to_string(s.cases.size()) + " checks, " + std::to_string(failed) + " failed", false) + "\n";
  }
  return out;
}

std::string renderChecks(const std::string& format, const std::vector<CheckSuite>& suites) {
  if (format == "json") return renderChecksJson(suites);
  if (format == "junit") return renderChecksJunit(suites);
  if (format == "github") return renderChecksGithub(suites);
  if (format == "text") return renderChecksText(suites);
  throw std::logic_error("renderChecks: unknown format " + format);
}

}  // namespace spopt
