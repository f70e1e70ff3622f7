#include "passes/registry.h"

#include <algorithm>
#include <stdexcept>

#include "passes/builtin_passes.h"

namespace spopt {

const OptionSpec* PassInfo::option(const std::string& opt) const {
  for (const auto& o : options)
    if (o.name == opt) return &o;
  return nullptr;
}

const PassRegistry& PassRegistry::builtin() {
  static const PassRegistry registry = [] {
    PassRegistry r;
#define SPOPT_ADD_PASS(fn) r.add(fn());
    SPOPT_BUILTIN_PASSES(SPOPT_ADD_PASS)
#undef SPOPT_ADD_PASS
    return r;
  }();
  return registry;
}

void PassRegistry::add(PassInfo info) {
  if (find(info.name)) throw std::logic_error("pass '" + info.name + "' is registered twice");
  if (!info.create) throw std::logic_error("pass '" + info.name + "' has no factory");
  passes_.push_back(std::move(info));
}

const PassInfo* PassRegistry::find(const std::string& name) const {
  for (const auto& p : passes_)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<const PassInfo*> PassRegistry::all() const {
  std::vector<const PassInfo*> out;
  for (const auto& p : passes_) out.push_back(&p);
  std::sort(out.begin(), out.end(), [](const PassInfo* a, const PassInfo* b) { return a->name < b->name; });
  return out;
}

std::string PassRegistry::namesText() const {
  std::string s;
  for (const PassInfo* p : all()) s += (s.empty() ? "" : ", ") + p->name;
  return s.empty() ? "(none)" : s;
}

}  // namespace spopt
