// Opaque ops that run as one-thread-per-element kernels through their index maps (Conv,
// ConvTranspose, the pools, Resize, Einsum): the generated CUDA compiles with NVRTC for
// sm_90 (no GPU needed), loops over windows, and never loads a padding tap.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "fusion/plan.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/test_util.h"

namespace braze {
namespace {

std::vector<codegen::Kernel> kernels_of(const std::string& text) {
  graph::Graph g = test::graph_from_text(text);
  graph::passes::run_pipeline(g);
  std::vector<codegen::Kernel> out;
  for (const fusion::Group& grp : fusion::plan_unfused(g).groups) {
    codegen::GroupCode gc = codegen::generate(g, grp, codegen::Target{});
    EXPECT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    if (gc.kernel) out.push_back(*gc.kernel);
  }
  return out;
}

void expect_compiles(const codegen::Kernel& k) {
  gpu::Compiled c = gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90"), true);
  EXPECT_FALSE(c.cubin.empty()) << k.source.substr(k.source.find("// ---- generated ----"));
  EXPECT_NE(c.ptx.find(".entry " + k.name), std::string::npos);
}

// Every kernel of the graph compiles; returns their generated parts.
std::vector<std::string> compile_all(const std::string& text, size_t expected_kernels) {
  std::vector<codegen::Kernel> ks = kernels_of(text);
  EXPECT_EQ(ks.size(), expected_kernels);
  std::vector<std::string> generated;
  for (const codegen::Kernel& k : ks) {
    expect_compiles(k);
    generated.push_back(k.source.substr(k.source.find("// ---- generated ----")));
  }
  return generated;
}

// Loads issued before the kernel's first branch past the element-range guard
// (`if (s < N)`): window taps must all be loaded inside the branch that checks they lie in
// the input.
size_t loads_before_first_branch(const std::string& src) {
  size_t branch = src.find("if (");
  while (branch != std::string::npos && src.compare(branch, 8, "if (s < ") == 0)
    branch = src.find("if (", branch + 1);
  std::string head = src.substr(0, branch);
  size_t n = 0;
  for (size_t p = head.find("braze_load("); p != std::string::npos;
       p = head.find("braze_load(", p + 1))
    ++n;
  return n;
}

TEST(OpaqueCodegen, ConvAndConvTransposeCompile) {
  auto src = compile_all(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,4,7,6] x, float[6,2,3,2] w, float[6] b, float16[1,2,4,5,3] h, float16[3,2,2,3,2] hw,
       double[2,4,3,4] t, double[4,3,3,2] tw, double[6] tb)
      => (float[2,6,6,3] y, float16[1,3,2,3,2] hy, double[2,6,7,11] ty) {
      y = Conv <group = 2, dilations = [2, 1], pads = [1, 0, 2, 1], strides = [1, 2]> (x, w, b)
      hy = Conv <auto_pad = "SAME_UPPER", strides = [2, 2, 2]> (h, hw)
      ty = ConvTranspose <group = 2, strides = [2, 3], output_padding = [1, 0], pads = [1, 0, 0, 1],
                          dilations = [1, 2]> (t, tw, tb)
    })",
                         3);
  ASSERT_EQ(src.size(), 3u);
  // A window loop, an input-channel loop inside the in-bounds branch; only the bias is read
  // outside it.
  EXPECT_NE(src[0].find("for (long long k"), std::string::npos) << src[0];
  EXPECT_EQ(loads_before_first_branch(src[0]), 1u) << src[0];
  EXPECT_EQ(loads_before_first_branch(src[1]), 0u) << src[1];
  EXPECT_EQ(loads_before_first_branch(src[2]), 1u) << src[2];
  EXPECT_NE(src[1].find("const __half* __restrict__"), std::string::npos) << src[1];
  // ConvTranspose gathers only taps whose input position divides by the stride.
  EXPECT_NE(src[2].find("% 2LL == 0LL"), std::string::npos) << src[2];
  EXPECT_NE(src[2].find("% 3LL == 0LL"), std::string::npos) << src[2];
}

TEST(OpaqueCodegen, PoolsCompile) {
  auto src = compile_all(R"(
    <ir_version: 8, opset_import: ["" : 19]>
    g (float[2,3,8,8] x, uint8[1,2,5,5] q, float16[2,3,6,7] a, double[1,2,3,4,2] z)
      => (float[2,3,5,7] y, int64[2,3,5,7] i, uint8[1,2,3,3] qy, int64[1,2,3,3] qi,
          float16[2,3,4,4] ay, double[1,2,1,1,1] gm, double[1,2,1,1,1] ga) {
      y, i = MaxPool <kernel_shape = [3, 2], strides = [2, 1], pads = [1, 1, 1, 0],
                      dilations = [1, 2], ceil_mode = 1> (x)
      qy, qi = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], storage_order = 1> (q)
      ay = AveragePool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 2, 1, 0], ceil_mode = 1,
                        count_include_pad = 1> (a)
      gm = GlobalMaxPool(z)
      ga = GlobalAveragePool(z)
    })",
                         5);
  ASSERT_EQ(src.size(), 5u);
  // MaxPool's two outputs come from one kernel. The values' window loops load every tap
  // without a branch, a tap in the padding at position 0 (inside the input), and select it
  // away.
  EXPECT_NE(src[0].find("long long* __restrict__ out"), std::string::npos) << src[0];
  for (size_t i = 0; i < 3; ++i) EXPECT_NE(src[i].find(" : 0LL);"), std::string::npos) << src[i];
  EXPECT_NE(src[0].find("-__int_as_float(0x7f800000)"), std::string::npos) << src[0];
  EXPECT_NE(src[1].find("unsigned long long"), std::string::npos) << src[1];
}

TEST(OpaqueCodegen, EveryResizeModeCompiles) {
  std::vector<std::string> nodes;
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* coord : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                              "align_corners", "asymmetric", "tf_half_pixel_for_nn"})
      nodes.push_back(
          fmt::format(R"(y{} = Resize <mode = "{}", coordinate_transformation_mode = "{}",
                                      nearest_mode = "{}", exclude_outside = {}> (x, , scales))",
                      nodes.size(), mode, coord, nodes.size() % 2 ? "ceil" : "round_prefer_floor",
                      nodes.size() % 3 == 0 ? 1 : 0));
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    nodes.push_back(fmt::format(
        R"(y{} = Resize <mode = "{}", coordinate_transformation_mode = "tf_crop_and_resize",
                                    extrapolation_value = 0.5> (x, roi, , sizes))",
        nodes.size(), mode));
    nodes.push_back(fmt::format(
        R"(y{} = Resize <mode = "{}", coordinate_transformation_mode = "tf_crop_and_resize">
                                    (x, r, , sizes))",
        nodes.size(), mode));
    nodes.push_back(fmt::format(R"(y{} = Resize <mode = "{}", antialias = 1> (x, , down))",
                                nodes.size(), mode));
  }
  std::string outs, body;
  for (size_t i = 0; i < nodes.size(); ++i) {
    outs += fmt::format("{}float[1,2,{}] y{}", i ? ", " : "",
                        i < 18       ? "8,5"
                        : i % 3 == 2 ? "2,2"
                                     : "5,4",
                        i);
    body += nodes[i] + "\n";
  }
  std::string text = fmt::format(R"(
    <ir_version: 8, opset_import: ["" : 19]>
    g (float[1,2,4,5] x, float[8] r) => ({}) <float[4] scales = {{1.0, 1.0, 2.0, 1.0}}, float[4] down = {{1.0, 1.0, 0.6, 0.5}},
      int64[4] sizes = {{1, 2, 5, 4}}, float[8] roi = {{0.0, 0.0, -0.1, 0.2, 1.0, 1.0, 0.8, 1.4}}> {{
      {}
    }})",
                                 outs, body);
  auto src = compile_all(text, nodes.size());
  ASSERT_EQ(src.size(), nodes.size());
  // Nearest rounding works on double coordinates (as the reference's); tf_crop_and_resize
  // folds a constant roi into the kernel and reads a run-time one from its input.
  EXPECT_NE(src[0].find("floor("), std::string::npos) << src[0];
  EXPECT_NE(src[0].find("double"), std::string::npos) << src[0];
  auto inputs = [](const std::string& k) {
    size_t n = 0;
    for (size_t p = k.find("const float*"); p != std::string::npos;
         p = k.find("const float*", p + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(inputs(src[18]), 1u) << src[18];
  EXPECT_EQ(inputs(src[19]), 2u) << src[19];

  auto ints = compile_all(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (uint8[1,1,4,5] x, int32[3,4] z) => (uint8[1,1,7,9] y, int32[4,2] w) <int64[4] sizes = {1, 1, 7, 9},
      float[2] half = {1.6, 0.5}> {
      y = Resize <mode = "cubic"> (x, , , sizes)
      w = Resize <mode = "nearest"> (z, , half)
    })",
                          2);
  ASSERT_EQ(ints.size(), 2u);
  EXPECT_NE(ints[0].find("nearbyint("), std::string::npos) << ints[0];
}

TEST(OpaqueCodegen, EinsumCompiles) {
  auto src = compile_all(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (float[3,4,5] a, float[3,5,2] b, float16[2,1,4,4] c, float16[4,3] d, int64[3,4] e, int64[4,2,3] f,
       double[2,4,4] q) => (float[3,4,2] y, float16[2,1,4,3] z, int64[2,3] w, float[] s, double[4] t) {
      y = Einsum <equation = "bij,bjk->bik"> (a, b)
      z = Einsum <equation = "...ij,jk->...ik"> (c, d)
      w = Einsum <equation = "ij,jki->ki"> (e, f)
      s = Einsum <equation = "bij->"> (a)
      t = Einsum <equation = "bii->i"> (q)
    })",
                         5);
  (void)src;
}

}  // namespace
}  // namespace braze
