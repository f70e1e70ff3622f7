#pragma once
// The JSON walk of the loader (simdjson on-demand): a program, the job without its programs, or a
// whole document, parsed into a Job. Every text the IR keeps is copied into the arena it is given,
// so the parsed bytes can be handed back behind the parse. Errors are InputError(name, pointer).
// Arguments are not resolved here (ir/resolve.h), except those naming a var of their own block.
#include <memory>
#include <mutex>
#include <string>

#include "io/source.h"
#include "ir/ir.h"

namespace spopt {

class JobParser {
 public:
  // Text the IR keeps is copied into `arena` (one per thread). `shared_layouts` guards the job's
  // layout table when several parsers fill one job.
  JobParser(Job& job, const std::string& name, Arena& arena, std::mutex* shared_layouts = nullptr);
  ~JobParser();
  // Hands back parsed bytes as the parse goes (null: keep them).
  void releaseBehind(ReleaseBehind* release);

  // Element `index` of the "programs" array, as a document of its own, into `p`.
  void parseProgram(const char* text, size_t len, size_t capacity, size_t index, Program& p);
  // The job with its "programs" array replaced by [] (text padded for simdjson).
  void parseSkeleton(const char* text, size_t len);
  // A whole document; nothing but whitespace may follow the root object.
  void parseDocument(const char* text, size_t len, size_t capacity);

 private:
  class Walker;
  std::unique_ptr<Walker> walker_;
};

}  // namespace spopt
