#include "analysis/value_names.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ops/op_builder.h"
#include "ops/op_def.h"

namespace spopt {
namespace {

// Gives each write of a temporary after its first a var of its own, and points the reads that
// follow at it: SSA form, as a PIR file has it (an in-place all-reduce of a gradient writes a new
// value there, the same var in a legacy program).
void splitRewrittenTemporaries(Program& program) {
  for (auto& block : program.blocks) {
    OpBuilder builder(*block);
    std::unordered_map<const Var*, Var*> latest;
    std::unordered_set<const Var*> written;
    for (Op& op : block->ops) {
      for (Slot& slot : op.inputs)
        for (size_t i = 0; i < slot.args.size(); ++i)
          if (auto it = latest.find(slot.args[i].var); it != latest.end()) setInputArg(op, slot.name, i, it->second);
      for (Slot& slot : op.outputs)
        for (size_t i = 0; i < slot.args.size(); ++i) {
          Var* v = slot.args[i].var;
          if (!v || v->persistable || written.insert(v).second) continue;
          Var* write = builder.freshVar(v->name, v->shape, v->dtype, v);
          setOutputArg(op, slot.name, i, write);
          latest[v] = write;
          written.insert(write);
        }
    }
  }
}

}  // namespace

void nameTemporariesByPosition(Job& job) {
  for (auto& program : job.programs) {
    splitRewrittenTemporaries(*program);
    auto taken = [&](const std::string& n) {
      for (const auto& b : program->blocks)
        if (b->findLocal(n)) return true;
      return false;
    };
    int64_t next = 0;
    std::unordered_set<const Var*> renamed;  // an in-place write keeps its first name
    for (auto& block : program->blocks)
      for (Op& op : block->ops) {
        const OpDef* def = resolveOp(op.type).def;
        if (def && def->has(trait::Source)) continue;
        for (Slot& slot : op.outputs)
          for (Arg& a : slot.args) {
            Var* v = a.var;
            if (!v || v->persistable || !renamed.insert(v).second) continue;
            std::string name;
            do name = "%" + std::to_string(next++);
            while (taken(name));
            v->block->renameVar(v, job.editArena().store(name));
          }
      }
  }
}

}  // namespace spopt
