#pragma once
// The pattern of decompose-collective-matmul, apart from the decision and the rewrite: a
// collective that a matmul waits on (or that waits on a matmul), which can be cut into one chunk
// per ring member so that the matmul consumes one chunk while the next travels.
//
//   all-gather form    G = all_gather(S); Out = matmul(G, W)       (G concatenated along axis 0)
//     Out's rows are G's rows times W: chunk j of G (rank j's shard) gives rows j of Out, so the
//     matmul runs per chunk and the row blocks are concatenated (bitwise the whole GEMM's rows).
//     Legal when axis 0 of G is a row axis of the matmul: G is X, trans_x is false, W is 2-D.
//     Every such matmul reading G is decomposed; readers of G that are not (a dW GEMM, which
//     sums over G's rows) read G rebuilt from the chunks.
//   reduce-scatter form  P = matmul(X, W); O = reduce_scatter(P)    (P split along axis 0)
//     rows j of P are rows j of X times W: each rank computes the partial product of each
//     destination chunk j and the partials are summed on their destination (a sum in another
//     order: within check's tolerance). Legal when X's axis 0 is a row axis (trans_x false, W
//     2-D) and P is read by nothing else.
// In backward the dX GEMM of a matmul_v2_grad is such a matmul (G = dOut gathered; or
// P = dX reduce-scattered): the grad op is split first (matmul_grad_split.h), so the dW GEMM
// stays whole. A gathered input read only by a dW GEMM (the re-gathered input) is refused: its
// gathered axis is the one dW sums over (contracted-axis).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/collectives.h"
#include "ir/ir.h"
#include "passes/refusal.h"

namespace spopt {

enum class CollectiveMatmulForm { AllGather, ReduceScatter };

// One matmul of a site: the op, or the matmul_v2_grad whose dX GEMM it is (split before the
// rewrite).
struct SiteMatmul {
  Op* op = nullptr;
  bool grad = false;  // op is a matmul_v2_grad: its dX GEMM (Out@GRAD times Y^T)
  // The slots of the GEMM the site cuts by rows: its row operand and its product.
  const char* rowSlot() const { return grad ? "Out@GRAD" : "X"; }
  const char* productSlot() const { return grad ? "X@GRAD" : "Out"; }
};

struct CollectiveMatmulMatch {
  CollectiveMatmulForm form = CollectiveMatmulForm::AllGather;
  Op* collective = nullptr;
  Collective coll{};
  int64_t ranks = 0;                // ring size t (chunks)
  Var* shard = nullptr;             // all-gather: S; reduce-scatter: O (this rank's chunk)
  Var* whole = nullptr;             // all-gather: G; reduce-scatter: P
  std::vector<SiteMatmul> matmuls;  // all-gather: G's row readers; reduce-scatter: P's writer
  bool whole_read_elsewhere = false;  // all-gather: G has other readers (rebuilt from the chunks)
};

// How a site's ring runs: each member's shard in `chunks` row pieces; `directions` 1: every piece
// goes one way round the ring, t-1 steps; 2 (t >= 3; XLA's bidirectional windowed einsum,
// TransformerEngine's ring exchange): half the chunks each way, t/2 steps, each exchange carrying a
// piece to each neighbour at once (so the ring pays half the latencies and the same bytes: a
// rank's two sends share its link).
// `direct` (reduce-scatter form): each partial goes straight to its chunk's owner, the member k
// positions away at step k (a switch connects every pair), so nothing is summed on the way and no
// exchange waits for an add; the same steps, sends and bytes as the ring.
struct RingShape {
  int64_t chunks = 1;
  int directions = 1;
  bool direct = false;
  int64_t mainSteps(int64_t t) const;    // steps of the chain every ring has: t-1, or t/2 both ways
  int64_t secondSteps(int64_t t) const;  // of the other way's chain: 0, or (t-1)/2
};

struct CollectiveMatmulResult {
  bool candidate = false;  // a collective next to a matmul: counted in the pass's stats
  std::optional<CollectiveMatmulMatch> match;
  Refusal refusal;  // when candidate && !match
};

// Looks at one all-gather or reduce-scatter on one rank. `explaining`: word the refusals.
CollectiveMatmulResult matchCollectiveMatmul(Op& collective, const Collective& coll, const Job& job, bool explaining);

}  // namespace spopt

namespace spopt {

// The rewrite on one rank at ring position `position` (of m.ranks), transfers on `comm_stream`,
// each member's shard in `shape.chunks` row pieces (>= 1, dividing its rows), one exchange a piece
// (to one neighbour, or to both when `shape.directions` is 2):
//   all-gather form: a ring in place of the all-gather: step k multiplies chunk (p - k) (and p + k
//     both ways), piece by piece, while its pieces go on and the next step's arrive; each
//     matmul becomes one GEMM per piece and a concat of the row blocks into its output; G, when
//     other ops read it, is the concat of the pieces;
//   reduce-scatter form: X cut into row blocks; per destination chunk in ring order the partial
//     products of its pieces, each added to the sum received and passed on, the last (this
//     rank's own chunk) being O (the pieces joined by a concat).
// matmul_v2_grad matmuls are split first (their dW GEMM stays whole).
void rewriteCollectiveMatmul(const CollectiveMatmulMatch& m, int64_t position, const std::string& comm_stream, RingShape shape);

}  // namespace spopt
