#include "ir/resolve.h"

#include <algorithm>
#include <vector>

#include "ir/json_pointer.h"
#include "support/error.h"

namespace spopt {
namespace {
// "1 -> 2 -> 1": block idxs from `b` up its parents until one repeats.
std::string parentChain(const Block& b) {
  std::string chain = std::to_string(b.idx);
  std::vector<const Block*> seen{&b};
  for (const Block* x = b.parent; x; x = x->parent) {
    chain += " -> " + std::to_string(x->idx);
    if (std::find(seen.begin(), seen.end(), x) != seen.end()) break;
    seen.push_back(x);
  }
  return chain;
}
}  // namespace

void resolveNames(Job& job) {
  for (auto& prog : job.programs) {
    Program& p = *prog;
    for (auto& b : p.blocks) {
      if (b->parent_idx == -1) continue;
      b->parent = p.block(b->parent_idx);
      std::string where = blockPointer(p.position, b->position) + "/parent_idx";
      if (b->parent == b.get()) throw InputError(job.path, where, "block " + std::to_string(b->idx) + " is its own parent");
      if (!b->parent) throw InputError(job.path, where, "parent block " + std::to_string(b->parent_idx) + " does not exist");
    }
    // Parent chains must end: a cycle would make lookups loop.
    for (auto& b : p.blocks) {
      const Block* x = b.get();
      for (size_t steps = 0; x; x = x->parent)
        if (++steps > p.blocks.size())
          throw InputError(job.path, blockPointer(p.position, b->position) + "/parent_idx",
                           "block parents form a cycle: " + parentChain(*b));
    }
    for (auto& b : p.blocks) {
      size_t op_index = 0;
      for (Op& op : b->ops) {
        for (int dir = 0; dir < 2; ++dir) {
          auto& slots = dir == 0 ? op.inputs : op.outputs;
          for (auto& slot : slots) {
            for (size_t i = 0; i < slot.args.size(); ++i) {
              Arg& a = slot.args[i];
              if (!a.var) a.var = b->lookup(a.name);
              if (!a.var) {
                std::string where = opPointer(p.position, b->position, op_index) + (dir == 0 ? "/inputs/" : "/outputs/") +
                                    pointerToken(slot.name) + "/" + std::to_string(i);
                throw InputError(job.path, where,
                                 "var \"" + std::string(a.name) + "\" is not declared in block " + std::to_string(b->idx) +
                                     " or its ancestors");
              }
              (dir == 0 ? a.var->readers : a.var->writers).push_back(&op);
            }
          }
        }
        ++op_index;
      }
    }
  }
}

}  // namespace spopt
