#pragma once
// The op catalogue: one definition per op, holding everything sp-opt knows about it — its
// canonical name, its spelling in each dialect, its operands, results and attributes with their
// per-dialect names, its shape and dtype rule, the operands whose buffer it never reads, its cost,
// its traits, its grad op and whether it is a collective. The verifier, liveness, the cost model,
// replay, the passes' matchers and builders and the views read these definitions (through
// OpView, ops/op_view.h) instead of comparing op-type strings; adding an op is one definition
// (a file per family: ops/*_ops.cpp), its kernels (runtime/kernels) and a test.
//
// The three dialects of a job (docs/pir.md, ../shared/design/ops.md):
//   legacy   matmul_v2(X=[x], Y=[w]) -> Out,   c_allreduce_sum(X) -> Out, attrs trans_x ...
//   current  as legacy for compute ops; collectives all_reduce / all_gather ... with slots x/out
//   pir      pd_op.matmul(in0, in1) -> out0, attrs transpose_x ...; pd_op.all_reduce_ (in-place);
//            Scalar and IntArray arguments are operands fed by pd_op.full / pd_op.full_int_array
// Canonical slot and attribute names are the legacy ones (X, Out@GRAD, trans_x): the kernels and
// rules are written against them and OpView maps them to the op's own dialect.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/collective_kind.h"
#include "ir/ir.h"

namespace spopt {

// Dialect (legacy, current, pir) is a property of a Program: ir/ir.h.

// How an attribute's JSON value must read (the kernels' leniency: ir/json_text.h).
// DType: a Paddle dtype code (5 = float32, 22 = bfloat16) or a name ("bfloat16", PIR's DataType).
// Numbers: a list of numbers (nearest_interp's scale).
enum class AttrKind : uint8_t { Int, Float, Bool, String, Ints, DType, Numbers };
bool attrReadsAs(std::string_view raw, AttrKind kind);
const char* attrKindName(AttrKind k);  // "an integer", ...

// Traits: what passes and analyses may assume of an op.
namespace trait {
enum : uint32_t {
  Elementwise = 1u << 0,   // out[i] depends on in[i] only (after broadcast)
  View = 1u << 1,          // the output aliases the input's buffer in a GPU framework
  InPlace = 1u << 2,       // an output is meant to overwrite an input (sgd's ParamOut = Param)
  Random = 1u << 3,        // draws random numbers from a seed (dropout): recomputed bitwise by seed
  SideEffects = 1u << 4,   // must not be moved, removed or duplicated (feed, fetch, readers)
  Recomputable = 1u << 5,  // safe to run again in backward (pure, or random with a seed)
  MovesOnly = 1u << 6,     // data movement or scheduling: no arithmetic (costed by bytes)
  Source = 1u << 7,        // defines a program input (pd_op.data, builtin.parameter): replay feeds it
  Blas = 1u << 8,          // its kernel calls BLAS (multi-threaded GEMM)
  Grad = 1u << 9,          // a backward op
  VectorResult = 1u << 10, // PIR: its result is a vector of tensors (split_with_num, builtin.combine)
  Constant = 1u << 11,     // defines a constant from its `value` attribute (full, fill_constant)
  Sink = 1u << 13,         // hands a value out of the program (fetch)
  Threaded = 1u << 14,     // its replay kernel shares its work over a GEMM's threads (leased as for Blas)
};
}  // namespace trait

// Which rotary table an operand is. Row p (the position), column i of a table with head_dim d
// holds sin or cos of p * base^(-2j/d), base the op's rotary_emb_base (10000), j the frequency
// index of column i: i / 2 when the op pairs neighbours (use_neox_rotary_style, Paddle's
// default), i mod d/2 when it rotates halves (Llama: its callers concatenate the frequencies
// twice, emb = concat(freqs, freqs)).
enum class RotaryTable : uint8_t { None, Sin, Cos };

class OpView;
// The values an integer input takes on one op when index_of's dim does not say it (a vocab
// shard's global ids); nullopt: index_of's dim.
using IndexBoundFn = std::optional<int64_t> (*)(const OpView&);

// One operand or result. `pir`: its index among the PIR op's operands (in<i>) or results (out<i>),
// -1 when the PIR op has no such value.
struct OperandDef {
  std::string_view name;            // canonical (legacy) slot name: "X", "Out@GRAD"
  std::string_view current = {};    // the current dialect's slot name; empty: as `name`
  int pir = -1;
  bool required = false;            // the kernel fails without it (the verifier checks first)
  // false: only shape and dtype are read (Paddle's no-need-buffer); for a result, it carries a
  // shape and no data (reshape2's XShape)
  bool reads_buffer = true;
  // The values the op expects in an integer input that indexes another operand (lookup ids,
  // class labels): [0, dim `index_dim` of operand `index_of`), index_dim -1 the last. Replay
  // generates such inputs within it (runtime/inputs.h).
  std::string_view index_of = {};
  int index_dim = 0;
  IndexBoundFn index_bound = nullptr;
  // A floating input the op takes the square root of, or divides by one minus (Adam's second
  // moment and decay powers): replay generates it in [0, 1).
  bool non_negative = false;
  // A rotary table (fused_rotary_position_embedding's sin and cos): replay generates the real
  // table of positions, not noise (RotaryTable, below; runtime/inputs.h).
  RotaryTable rotary = RotaryTable::None;
  // A result whose vars are views into the buffer of result `view_of`, laid one after the other
  // (coalesce_tensor's Output in FusedOutput): a write of either is a write of both
  // (ops/buffer_views.h).
  std::string_view view_of = {};
  // PIR passes this slot's vars as one vector value (Tensor[]): an input made by builtin.combine, a
  // result taken apart by builtin.split. `parts_of` (a result): its parts are shaped as those of
  // that vector input (check_finite_and_unscale_'s out, x in place). ops/vector_parts.h.
  bool vector = false;
  std::string_view parts_of = {};
};

// One attribute. In PIR a Scalar or IntArray argument is an operand (`pir_operand`), read from the
// pd_op.full / pd_op.full_int_array that defines it.
struct AttrDef {
  std::string_view name;          // canonical (legacy) name: "trans_x"
  AttrKind kind = AttrKind::Int;
  std::string_view pir_name = {}; // PIR's name when it differs ("transpose_x"); empty: as `name`
  int pir_operand = -1;           // PIR passes it as operand in<i>
};

// A broken rule: `where` is a JSON pointer suffix below the op in canonical names ("/attrs/axis",
// "/outputs/Out/0"; OpView::pointer maps it to the op's dialect), `message` starts with the type.
struct OpRuleError {
  std::string where;
  std::string message;
  // When a result's dims are what broke the rule: that var and the dims the rule wants for it
  // (what sizing a program's dynamic dims follows, analysis/dynamic_dims.h).
  const Var* result = nullptr;
  std::vector<int64_t> wanted = {};
};

using OpRuleFn = std::optional<OpRuleError> (*)(const OpView&);
using FlopsFn = double (*)(const OpView&);
using BytesFn = std::optional<int64_t> (*)(const OpView&);
// A Random op: whether a copy of this op (fresh output names, same attrs and inputs, run later on
// the same rank) draws the same numbers, so that it can be recomputed bitwise.
using SameDrawFn = bool (*)(const OpView&);

// Cost: `flops` when set, else `per_element` FLOPs for each element of `slot` (an output, or an
// input when `of_input`); per_element < 0: one FLOP per output element (an op nobody costed).
// `ring_payload`: the bytes a KernelAllReduce op all-reduces over its ring (comm_stats.h).
struct CostDef {
  double per_element = -1;
  std::string_view slot = {};
  bool of_input = false;
  FlopsFn flops = nullptr;
  BytesFn ring_payload = nullptr;
};

// A name an op is written with: its dialect, whether it is the in-place variant (PIR's trailing
// "_"), and for legacy all-reduces the reduction the name spells.
struct Spelling {
  std::string_view type;
  Dialect dialect = Dialect::Legacy;
  bool inplace = false;
  std::optional<ReduceOp> reduce = std::nullopt;
};

struct OpDef {
  std::string_view name;             // canonical (Paddle's PHI name): "matmul", "all_reduce"
  std::vector<Spelling> spellings;   // the first of each dialect is what builders write
  std::vector<OperandDef> inputs, outputs;
  std::vector<AttrDef> attrs;
  uint32_t traits = 0;
  OpRuleFn rule = nullptr;           // shape and dtype rule, run by the verifier
  CostDef cost;
  std::string_view grad = {};        // canonical name of its grad op
  std::optional<CollectiveKind> collective = std::nullopt;
  std::optional<P2PKind> p2p = std::nullopt;  // a send or a receive (ops/collective_ops.cpp)
  SameDrawFn copy_draws_same = nullptr;  // Random ops only; null: a copy draws other numbers
  uint32_t index = 0;                // dense, set by the catalogue: tables of per-op data (kernels)

  bool has(uint32_t t) const { return (traits & t) == t; }
  const OperandDef* input(std::string_view canonical) const;
  const OperandDef* output(std::string_view canonical) const;
  const AttrDef* attr(std::string_view canonical) const;
  // What a builder writes in `d`; null when the op has no spelling there.
  const Spelling* spelling(Dialect d) const;
};

// What an op type resolves to: its definition and the spelling it was written with.
struct ResolvedOp {
  const OpDef* def = nullptr;
  const Spelling* spelling = nullptr;
  explicit operator bool() const { return def != nullptr; }
};

// The catalogue, built once on first use (thread-safe). Unknown types resolve to nothing.
ResolvedOp resolveOp(std::string_view type);
const OpDef* findOpDef(std::string_view canonical_name);
const OpDef& opDef(std::string_view canonical_name);  // std::logic_error when absent
const std::vector<const OpDef*>& allOpDefs();         // by index
// Whether `op` is an instance of `def`, in any of its spellings.
inline bool isA(const Op& op, const OpDef& def) { return resolveOp(op.type).def == &def; }

// The slot name of a canonical operand in a dialect: "X" / "x" / "in0" (empty: none in PIR).
std::string_view slotName(const OperandDef& o, Dialect d, bool input);

// The dialect a program is written in: pir when any op has a PIR spelling, else the first
// collective's (c_* = legacy, all_reduce ... = current), else `fallback`. One O(ops) walk: the
// loaders set Program::dialect with it.
Dialect inferDialect(const Program& p, Dialect fallback = Dialect::Legacy);
void inferDialects(Job& job);

}  // namespace spopt
