#pragma once
// Writes a job as format v1: every entity's keys in their original order, unknown keys and
// attribute values as their raw text. Deterministic: the same IR gives the same bytes.
// Layout: structure indented, each var and op on one line (diffable, greppable).
#include <string>

#include "ir/ir.h"

namespace spopt {

class AtomicFile;

void writeJob(const Job& job, AtomicFile& out);
void writeJobFile(const Job& job, const std::string& path);  // atomic; "-" = stdout
std::string jobToString(const Job& job);

// One entity as compact JSON text (used by diff and messages).
std::string varToJson(const Var& v);
std::string opToJson(const Op& op);

}  // namespace spopt
