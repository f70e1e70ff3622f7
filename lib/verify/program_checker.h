#pragma once
// One program's own rules, as the verifier (verifier.h) checks them: its blocks, vars and ops,
// each read only from the program itself and the job's process groups. The verifier runs one
// checker per program, on threads (support/parallel.h), and merges what they found in program
// order; the rules across ranks (mesh agreement, ring issue orders, send/receive pairing) stay the
// verifier's, fed by what each checker gathered.
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "analysis/collectives.h"
#include "ir/ir.h"
#include "support/error.h"
#include "verify/reserved_keys.h"
#include "verify/sharding.h"
#include "verify/verifier.h"

namespace spopt {

// A communicating collective a program issues, with its parsed attributes and what the issue
// order check compares of its input (read on the checker's thread, beside the op).
struct IssuedCollective {
  const Op* op;
  Collective c;
  bool has_input = false;
  DType dtype = DType::Float32;
  int64_t numel = -1;
  IssuedCollective(const Op& o, const Collective& coll);
};

class ProgramChecker {
 public:
  ProgramChecker(const Job& job, const Program& p, const VerifyOptions& opts) : job_(job), program_(p), opts_(opts) {}

  // Its blocks' idx and its fetches; with `blocks`, also every var's and every op's own rules,
  // noting each communicating collective's issue (`issued`) and each var the mesh agreement
  // compares (`sharded`).
  void checkProgram(bool blocks);
  // A var's own rules: its byte size and its sharding.
  void checkVar(const Var& v);
  // An op's own rules; `note_issue`: note its issue when it is a communicating collective.
  void checkOp(const Op& op, bool note_issue);
  // The one rule an op's execution attributes bear on (the kinds of its dist_attr's keys): all
  // that can have changed for an op whose execution attributes alone a pass set.
  void checkExecution(const Op& op);
  // Notes the issue of every communicating collective of the program on one of `rings` (the rings
  // a journaled pass changed; null: every ring), and whether it has a send or receive (issues_p2p).
  void noteIssues(const std::set<int64_t>* rings);
  bool full() const { return problems.size() >= opts_.max_problems; }
  // Its vars' dist_attr parses, for the mesh agreement's reads of the same vars (not while the
  // checker runs on another thread).
  ShardingCache& shardings() { return shardings_; }

  std::vector<Diagnostic> problems;  // in the order found, at most max_problems
  std::map<int64_t, std::vector<IssuedCollective>> issued;  // ring -> issue order
  bool issues_p2p = false;  // some op checked or noted is a send or receive
  struct ShardedVar {
    size_t block = 0, index = 0;  // its block's index in the program, its index in the block
    const Var* var = nullptr;
  };
  std::vector<ShardedVar> sharded;  // vars with a dist_attr, in walk order

 private:
  const Job& job_;
  const Program& program_;
  const VerifyOptions& opts_;
  ShardingCache shardings_;
  ReservedKeysCache reserved_;

  void report(std::string pointer, std::string message);
  void checkBlock(const Block& b, size_t block_index);
  void checkVarSize(const Var& v);
  void checkSharding(const Var& v);
  bool checkReserved(const JsonObject& obj, KeyOwner owner, const Var* var, const Op* op);
  void checkCollective(const Op& op, const Collective& c);
  void checkShapes(const Op& op);
};

}  // namespace spopt
