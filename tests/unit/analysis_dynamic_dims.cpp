// sizeDynamicDims: Paddle's -1 (the batch) takes one size, and the vars whose -1 stands for more
// than the batch (a flattened [-1, 512], layer_norm's [-512] statistics, a split batch, a
// strided convolution's or an upsampling's plane) are sized so that their ops' rules hold, as
// replay needs. keptToEnd: the loss is kept.
#include <catch2/catch.hpp>

#include "analysis/dynamic_dims.h"
#include "analysis/liveness.h"
#include "io/loader.h"

using namespace spopt;

namespace {

std::unique_ptr<Job> gptTail() {
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[],"programs":[{"rank":0,
    "blocks":[{"idx":0,"parent_idx":-1,"vars":[
      {"name":"mask","shape":[-1,512],"dtype":"float32"},
      {"name":"flat","shape":[-1],"dtype":"float32"},{"name":"flat_xs","shape":[0,-1,512],"dtype":"float32"},
      {"name":"prod","shape":[-1],"dtype":"float32"},
      {"name":"prod@GRAD","shape":[-1],"dtype":"float32"},{"name":"flat@GRAD","shape":[-1],"dtype":"float32"},
      {"name":"mean","shape":[-1],"dtype":"float32","paddle":{"type":"LOD_TENSOR","dims":[-512]}},
      {"name":"h","shape":[-1,4],"dtype":"float32"},{"name":"h0","shape":[-1,4],"dtype":"float32"},
      {"name":"h1","shape":[-1,4],"dtype":"float32"},
      {"name":"loss","shape":[1],"dtype":"float32"},{"name":"other","shape":[1],"dtype":"float32"}],
    "ops":[
      {"type":"reshape2","inputs":{"X":["mask"]},"outputs":{"Out":["flat"],"XShape":["flat_xs"]},"attrs":{"shape":[-1]}},
      {"type":"elementwise_mul","inputs":{"X":["flat"],"Y":["flat"]},"outputs":{"Out":["prod"]},"attrs":{"axis":-1}},
      {"type":"elementwise_mul_grad","inputs":{"X":["flat"],"Y":["flat"],"Out@GRAD":["prod@GRAD"]},
       "outputs":{"X@GRAD":["flat@GRAD"]},"attrs":{"axis":-1}},
      {"type":"split","inputs":{"X":["h"]},"outputs":{"Out":["h0","h1"]},"attrs":{"axis":0,"num":2}},
      {"type":"reduce_sum","inputs":{"X":["prod"]},"outputs":{"Out":["loss"]},"attrs":{"reduce_all":true,"op_role":256}},
      {"type":"scale","inputs":{"X":["loss"]},"outputs":{"Out":["other"]},"attrs":{"scale":2.0}}]}]}]})";
  return loadJobFromText(text, "t.json");
}

}  // namespace

TEST_CASE("dynamic dims take the size, times what Paddle recorded or the ops' rules imply", "[analysis]") {
  auto job = gptTail();
  CHECK(sizeDynamicDims(*job, 4) == 10);
  const Block& b = *job->programs[0]->blocks[0];
  auto shape = [&](std::string_view n) { return b.lookup(n)->shape; };
  CHECK(shape("mask") == std::vector<int64_t>{4, 512});
  CHECK(shape("flat") == std::vector<int64_t>{2048});  // reshape [-1] of [4, 512]
  CHECK(shape("flat_xs") == std::vector<int64_t>{0, 4, 512});
  CHECK(shape("prod") == std::vector<int64_t>{2048});  // elementwise of two [2048]
  CHECK(shape("flat@GRAD") == std::vector<int64_t>{2048});  // a gradient has its input's shape
  CHECK(shape("mean") == std::vector<int64_t>{2048});  // Paddle's -512: 512 x the batch
  CHECK(shape("h0") == std::vector<int64_t>{2, 4});  // half of the split batch
}

TEST_CASE("a dynamic image plane follows the convolutions' and upsamplings' rules", "[analysis]") {
  // PP-OCRv5's shape of program: [-1, C, -1, -1] everywhere, the plane halved by a stride-2
  // convolution, doubled by nearest_interp's scale and by a stride-2 conv2d_transpose.
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[],"programs":[{"rank":0,
    "blocks":[{"idx":0,"parent_idx":-1,"vars":[
      {"name":"x","shape":[-1,2,-1,-1],"dtype":"float32"},{"name":"w","shape":[4,2,3,3],"dtype":"float32","persistable":true},
      {"name":"c","shape":[-1,4,-1,-1],"dtype":"float32"},{"name":"u","shape":[-1,4,-1,-1],"dtype":"float32"},
      {"name":"wt","shape":[4,1,2,2],"dtype":"float32","persistable":true},{"name":"t","shape":[-1,1,-1,-1],"dtype":"float32"}],
    "ops":[
      {"type":"conv2d","inputs":{"Input":["x"],"Filter":["w"]},"outputs":{"Output":["c"]},
       "attrs":{"strides":[2,2],"paddings":[1,1],"dilations":[1,1],"groups":1}},
      {"type":"nearest_interp_v2","inputs":{"X":["c"]},"outputs":{"Out":["u"]},
       "attrs":{"scale":[2.0,2.0],"out_h":-1,"out_w":-1,"interp_method":"nearest","align_corners":false}},
      {"type":"conv2d_transpose","inputs":{"Input":["u"],"Filter":["wt"]},"outputs":{"Output":["t"]},
       "attrs":{"strides":[2,2],"paddings":[0,0],"dilations":[1,1],"groups":1}}]}]}]})";
  auto job = loadJobFromText(text, "t.json");
  CHECK(sizeDynamicDims(*job, 8) == 4);
  const Block& b = *job->programs[0]->blocks[0];
  CHECK(b.lookup("c")->shape == std::vector<int64_t>{8, 4, 4, 4});
  CHECK(b.lookup("u")->shape == std::vector<int64_t>{8, 4, 8, 8});
  CHECK(b.lookup("t")->shape == std::vector<int64_t>{8, 1, 16, 16});
}

TEST_CASE("the loss (an op_role Loss result) is kept to the end like a fetched var", "[analysis]") {
  auto job = gptTail();
  const Block& b = *job->programs[0]->blocks[0];
  CHECK(keptToEnd(*b.lookup("loss")));  // read later (by scale), kept all the same
  CHECK_FALSE(keptToEnd(*b.lookup("prod")));
}
