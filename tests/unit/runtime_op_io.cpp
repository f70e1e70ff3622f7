// runtime/op_io.h: the operands a CPU kernel sees over host tensors, the one view every backend
// gives it. Driven here as the nccl backend's host fallback drives it (host copies looked up by
// var, results in replayShape's buffers and kept in whatever shape the kernel leaves them), so
// that PIR vectors (builtin.combine / builtin.split, a vector read by add_n and concat, a vector
// result of stack_grad) are checked without a GPU.
#include <catch2/catch.hpp>

#include <map>

#include "io/loader.h"
#include "ops/op_view.h"
#include "runtime/kernels/kernels.h"
#include "runtime/op_io.h"
#include "runtime/op_site.h"

using namespace spopt;
using namespace spopt::rt;

namespace {

const char* kOpIoVectorJob = R"(sp-opt.program text 1
world_size 1

rank 0 {
  block 0 parent=-1 {
    var a : float32[2,3]
    var b : float32[2,3]
    var c : float32[1,3]
    var ab : float32[2]
    var ac : float32[2]
    var ax : int32[1]
    var sum : float32[2,3]
    var cat : float32[3,3]
    var sg : float32[2,2,3]
    var parts : float32[2]
    var p0 : float32[2,3]
    var p1 : float32[2,3]
    {out0=[ab]} = builtin.combine(in0=[a], in1=[b])
    {out0=[ac]} = builtin.combine(in0=[a], in1=[c])
    {out0=[sum]} = pd_op.add_n(in0=[ab])
    {out0=[ax]} = pd_op.full() {shape=[1], value=0, dtype="int32", place="cpu"}
    {out0=[cat]} = pd_op.concat(in0=[ac], in1=[ax])
    {out0=[parts]} = pd_op.stack_grad(in0=[ab], in1=[sg]) {axis=0}
    {out0=[p0], out1=[p1]} = builtin.split(in0=[parts])
  }
}
)";

Tensor opIoIota(std::vector<int64_t> shape, float from) {
  Tensor t(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = from + float(i);
  return t;
}

}  // namespace

TEST_CASE("OpTensorsIO hands kernels a PIR vector's parts over host copies (the nccl fallback's path)", "[runtime]") {
  auto job = loadJobFromText(kOpIoVectorJob, "vectors.sptxt");
  const Block& b = *job->program(0)->blocks.front();
  std::map<std::string, Tensor> host;  // by var name: the host copies the fallback makes
  host["a"] = opIoIota({2, 3}, 0);
  host["b"] = opIoIota({2, 3}, 100);
  host["c"] = opIoIota({1, 3}, 200);
  host["sg"] = opIoIota({2, 2, 3}, 300);
  for (const Op& op : b.ops) {
    OpView view(op);
    CAPTURE(std::string(op.type));
    std::vector<std::pair<const Var*, Tensor>> outs;
    forEachArg(op.outputs, [&](const Var& v) { outs.emplace_back(&v, Tensor(v.dtype, replayShape(op, v))); });
    OpTensorsIO io(
        view,
        [&](const Var& v) -> Tensor* {
          auto it = host.find(std::string(v.name));
          return it == host.end() ? nullptr : &it->second;
        },
        outs);
    KernelFn fn = findKernel(op.type);
    REQUIRE(fn);
    KernelContext ctx{view, 0, 1, io};
    fn(ctx);
    for (auto& [v, t] : outs) host[std::string(v->name)] = std::move(t);
  }
  auto values = [&](const char* name) {
    const Tensor& t = host.at(name);
    return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  };
  // add_n over the parts of [a, b]: a + b.
  std::vector<float> sum;
  for (int i = 0; i < 6; ++i) sum.push_back(float(i) + float(100 + i));
  CHECK(values("sum") == sum);
  // concat of unequal parts [a (2x3), c (1x3)] along 0: a's rows, then c's.
  CHECK(values("cat") == std::vector<float>{0, 1, 2, 3, 4, 5, 200, 201, 202});
  // stack_grad's vector result, split into its parts: sg's two [2,3] slabs.
  CHECK(values("p0") == std::vector<float>{300, 301, 302, 303, 304, 305});
  CHECK(values("p1") == std::vector<float>{306, 307, 308, 309, 310, 311});
  // Ops that read or write a vector are the ones the nccl backend keeps off its device kernels.
  std::vector<bool> touches;
  for (const Op& op : b.ops) touches.push_back(touchesVector(OpView(op)));
  CHECK(touches == std::vector<bool>{true, true, true, false, true, true, true});
}
