#include "ops/recompute_rule.h"

#include "ops/op_view.h"

namespace spopt {

std::optional<NotRecomputable> whyNotRecomputable(const Op& op) {
  OpView v(op);
  std::string type(op.type);
  if (!v.known()) return NotRecomputable{"not-catalogued", type + " is not in the op catalogue"};
  const OpDef& d = *v.def();
  if (d.collective) return NotRecomputable{"collective", type + " is a collective: it is never recomputed on one rank of its ring"};
  if (d.has(trait::SideEffects)) return NotRecomputable{"side-effects", type + " has side effects"};
  if (v.inplace() || d.has(trait::InPlace)) return NotRecomputable{"in-place", type + " overwrites its input"};
  if (!d.has(trait::Recomputable)) return NotRecomputable{"not-recomputable", type + " is not marked recomputable in the catalogue"};
  if (d.has(trait::Random) && !(d.copy_draws_same && d.copy_draws_same(v)))
    return NotRecomputable{"random-unseeded", type + " draws numbers a copy would not draw again (no fixed seed)"};
  return std::nullopt;
}

}  // namespace spopt
