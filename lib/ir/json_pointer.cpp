#include "ir/json_pointer.h"

namespace spopt {

std::string programPointer(size_t program) { return "/programs/" + std::to_string(program); }

std::string blockPointer(size_t program, size_t block) { return programPointer(program) + "/blocks/" + std::to_string(block); }

std::string opPointer(size_t program, size_t block, size_t op) { return blockPointer(program, block) + "/ops/" + std::to_string(op); }

std::string opPointerAt(const Op& op, size_t position) {
  return opPointer(op.block->program->position, op.block->position, position);
}

std::string opPointer(const Op& op) { return opPointerAt(op, op.block->opPosition(&op)); }

std::string varPointer(const Var& v) {
  size_t i = 0;
  for (const auto& x : v.block->vars) {
    if (x.get() == &v) break;
    if (!x->removed) ++i;
  }
  return blockPointer(v.block->program->position, v.block->position) + "/vars/" + std::to_string(i);
}

}  // namespace spopt
