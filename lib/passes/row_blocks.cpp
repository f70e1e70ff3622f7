// See row_blocks.h.
#include "passes/row_blocks.h"

#include <string>

namespace spopt {
namespace {

std::vector<int64_t> blockShape(const Var* x, int64_t parts) {
  std::vector<int64_t> s = x->shape;
  s[0] /= parts;
  return s;
}

NewOp& like(NewOp& n, const Op& op) {
  n.copyAttrs(op, {"op_role", "op_namescope"});
  if (op.hasDistAttr()) n.copyDistAttr(op.dist_attr, {"process_mesh", "chunk_id", "execution_stream"});
  return n;
}

}  // namespace

std::vector<Var*> splitRows(OpBuilder& b, Var* x, int64_t parts, Op& before, const Op& from) {
  std::vector<Var*> blocks;
  for (int64_t i = 0; i < parts; ++i)
    blocks.push_back(b.freshVar(std::string(x->name) + ".rows" + std::to_string(i), blockShape(x, parts), x->dtype, x));
  if (b.dialect() != Dialect::Pir) {
    NewOp s = b.create(opDef("split"));
    s.input("X", {x}).output("Out", blocks).attrInt("axis", 0).attrInt("num", parts).attrInts("sections", {});
    like(s, from).insertBefore(before);
    return blocks;
  }
  Var* vec = b.freshVar(std::string(x->name) + ".rows", {parts}, x->dtype);
  NewOp s = b.create(opDef("split_with_num"));
  s.input("X", {x}).output("Out", {vec}).attrInt("axis", 0).attrInt("num", parts);
  like(s, from).insertBefore(before);
  for (int64_t i = 0; i < parts; ++i) {
    NewOp slice = b.create(opDef("vector_slice"));
    slice.input("X", {vec}).output("Out", {blocks[size_t(i)]}).attrInt("index", i);
    like(slice, from).insertBefore(before);
  }
  return blocks;
}

void concatRows(OpBuilder& b, const std::vector<Var*>& blocks, Var* out, Op& before, const Op& from) {
  NewOp c = b.create(opDef("concat"));
  if (b.dialect() != Dialect::Pir) {
    c.input("X", blocks);
  } else {
    Var* vec = b.freshVar(std::string(out->name) + ".blocks", {int64_t(blocks.size())}, out->dtype);
    NewOp combine = b.create(opDef("combine"));
    for (size_t i = 0; i < blocks.size(); ++i) combine.input("in" + std::to_string(i), {blocks[i]});  // one operand a block
    combine.output("Out", {vec});
    like(combine, from).insertBefore(before);
    c.input("X", {vec});
  }
  c.output("Out", {out}).attrInt("axis", 0);
  like(c, from).insertBefore(before);
}

}  // namespace spopt
