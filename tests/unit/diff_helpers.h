#pragma once
// Small jobs written inline for the diff and graph tests.
#include <memory>
#include <string>
#include <vector>

#include "io/loader.h"

namespace spopt::test {

// A job of one program per entry of `programs`, each "VARS | OPS" with VARS and OPS as JSON
// array bodies; ranks are 0, 1, ... and form ring 0.
inline std::unique_ptr<Job> makeJob(const std::vector<std::pair<std::string, std::string>>& programs,
                                    const std::string& name = "job.json") {
  std::string ranks;
  for (size_t r = 0; r < programs.size(); ++r) ranks += (r ? "," : "") + std::to_string(r);
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":)" + std::to_string(programs.size()) +
                     R"(,"process_groups":[{"ring_id":0,"ranks":[)" + ranks + R"(]}],"programs":[)";
  for (size_t r = 0; r < programs.size(); ++r) {
    if (r) text += ",";
    text += R"({"rank":)" + std::to_string(r) + R"(,"blocks":[{"idx":0,"parent_idx":-1,"vars":[)" + programs[r].first +
            R"(],"ops":[)" + programs[r].second + "]}]}";
  }
  text += "]}";
  return loadJobFromText(text, name);
}

// A float32 var of the given shape.
inline std::string var(const std::string& name, const std::string& shape = "[4,4]", const std::string& extra = "") {
  return R"({"name":")" + name + R"(","shape":)" + shape + R"(,"dtype":"float32")" + extra + "}";
}

// An op with one input slot X and one output slot Out (names comma-separated, unquoted).
inline std::string op(const std::string& type, const std::string& x, const std::string& out,
                      const std::string& attrs = "{}", const std::string& in_slot = "X", const std::string& out_slot = "Out") {
  auto list = [](const std::string& names) {
    std::string out = "[", current;
    for (size_t i = 0; i <= names.size(); ++i) {
      if (i < names.size() && names[i] != ',') {
        current += names[i];
        continue;
      }
      out += (out.size() > 1 ? ",\"" : "\"") + current + "\"";
      current.clear();
    }
    return out + "]";
  };
  std::string ins = x.empty() ? "{}" : "{\"" + in_slot + "\":" + list(x) + "}";
  std::string outs = out.empty() ? "{}" : "{\"" + out_slot + "\":" + list(out) + "}";
  return R"({"type":")" + type + R"(","inputs":)" + ins + R"(,"outputs":)" + outs + R"(,"attrs":)" + attrs + "}";
}

inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out;
}

}  // namespace spopt::test
