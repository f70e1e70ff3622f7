#pragma once
// Why a pass did not rewrite a candidate, or a caveat on one it did: the one refusal type of every
// pass, and the codes the passes that change collectives share (collective_rewrite_driver.h words
// them the same way in each of them, so `--explain` reads alike whichever pass refused).
#include <string>
#include <string_view>

namespace spopt {

struct Refusal {
  std::string code;    // short stable key: the --explain code, the key of PassStats::refused / notes
  std::string reason;  // plain words (may be left empty when nobody asked for --explain)
  bool empty() const { return code.empty(); }
};

// The codes of the cross-rank decision, the same in every pass that changes collectives. A
// pass's own codes (what its matcher checks) are listed with the pass in docs/passes.md.
namespace refusal_code {
// Another member of the ring cannot make the change at this aligned position, so none does; the
// reason names that rank and its own reason.
inline constexpr std::string_view kPeerRefused = "peer-refused";
// (note) Members of the ring are not in the file: changed by the present members' agreement alone.
inline constexpr std::string_view kPeersAbsent = "peers-absent";
// (note) Changed although a peer cannot (a testing option skipped the agreement).
inline constexpr std::string_view kAgreementSkipped = "agreement-skipped";
// The change would leave the ring's collective order different on some member.
inline constexpr std::string_view kRingOrder = "ring-order";
// The ring has no process group, or the rank is not in it.
inline constexpr std::string_view kNoGroup = "no-group";
inline constexpr std::string_view kNotMember = "not-member";
// A pass's count limit (for bisecting) was reached.
inline constexpr std::string_view kLimit = "limit";
}  // namespace refusal_code

}  // namespace spopt
