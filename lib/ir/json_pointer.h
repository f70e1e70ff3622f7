#pragma once
// JSON pointers (RFC 6901) to the entities of a job, as the writer would lay them out now: every
// message that names a program, block, op or var builds its pointer here, so the shape
// "/programs/P/blocks/B/ops/K" is spelled once.
#include <cstddef>
#include <string>

#include "ir/ir.h"

namespace spopt {

std::string programPointer(size_t program);                      // "/programs/P"
std::string blockPointer(size_t program, size_t block);          // "/programs/P/blocks/B"
std::string opPointer(size_t program, size_t block, size_t op);  // "/programs/P/blocks/B/ops/K"

// The op at `position` in its block (a caller that walks the block knows it).
std::string opPointerAt(const Op& op, size_t position);
// The op where it stands now: finding its position walks the block, so messages only.
std::string opPointer(const Op& op);
// The var where it would be written (positions skip removed vars).
std::string varPointer(const Var& v);

}  // namespace spopt
