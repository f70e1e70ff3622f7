#pragma once
// Passes by name. Each pass file defines a PassInfo (name, one-line description, option specs,
// statistic specs, factory); registry.cpp lists the built-in ones in one place. Explicit
// registration rather than static initialisers, because the linker drops unreferenced objects from
// the static library.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace spopt {

struct PassInfo {
  std::string name;         // lower-case-with-dashes
  std::string description;  // one line
  std::vector<OptionSpec> options;
  std::function<std::unique_ptr<Pass>(const OptionValues&)> create;
  std::vector<StatisticSpec> statistics = {};  // what --stats reports, declared once (statistic.h)
  // Every edit the pass makes goes through the IR's journaled edit functions (ir.h EditJournal):
  // the verifier after it checks only what it touched. False: the whole job is verified.
  bool journaled = false;

  const OptionSpec* option(const std::string& opt) const;
};

class PassRegistry {
 public:
  // Every built-in pass.
  static const PassRegistry& builtin();

  void add(PassInfo info);  // a duplicate name is a programming error (std::logic_error)
  const PassInfo* find(const std::string& name) const;
  // Sorted by name.
  std::vector<const PassInfo*> all() const;
  std::string namesText() const;  // "a, b, c" for messages

 private:
  std::vector<PassInfo> passes_;
};

}  // namespace spopt
