// Implicit-GEMM convolution on sm_90a (#19), compiled with NVRTC (no GPU needed): the plan
// puts each channels-last convolution's Im2Col and Reshape into its product's kernel where the
// wgmma schedule reads the windows with TMA's im2col mode (input channels a multiple of 64),
// and keeps the Im2Col a kernel of its own elsewhere (sm_90 without the a, sm_80, the
// emulator, 32 channels); the kernels take an im2col tensor map whose corners, strides and
// box follow the window geometry, and compile to im2col copies and wgmma's.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/conv_cases.h"
#include "tests/gemm_test_util.h"

namespace braze {
namespace {

using test::h200a;

// The plan's GEMM groups that read windows in place, and the Im2Col kernels of their own.
struct WindowCount {
  int in_gemm = 0, alone = 0;
};
WindowCount windows_of(const graph::Graph& g, const fusion::Plan& plan) {
  WindowCount n;
  for (const fusion::Group& gr : plan.groups) {
    if (!test::has_windows(g, gr)) continue;
    (gr.kind == fusion::GroupKind::Gemm ? n.in_gemm : n.alone) += 1;
  }
  return n;
}

class ConvWgmmaCodegen : public ::testing::TestWithParam<test::ConvCase> {};

TEST_P(ConvWgmmaCodegen, WindowsLoadThroughAnIm2colMap) {
  const test::ConvCase& c = GetParam();
  const graph::Graph g = test::conv_case_graph(c, DType::Float16);
  const fusion::Plan plan = codegen::plan_for(g, true, h200a());
  const WindowCount n = windows_of(g, plan);
  // A 1x1 at stride 1 reads pixels (no Im2Col); every other convolution here has windows.
  EXPECT_EQ(n.in_gemm, c.first_in_place ? 2 : 1);
  EXPECT_EQ(n.alone, c.first_in_place ? 0 : 1);
  // The windows left out say why (braze inspect's refused merges).
  const bool said = std::any_of(plan.refused.begin(), plan.refused.end(), [](const auto& r) {
    return r.reason.find("channels, not a multiple of 64") != std::string::npos;
  });
  EXPECT_EQ(said, !c.first_in_place);
  const size_t rank = c.kernel.size();
  for (const fusion::Group& gr : plan.groups) {
    if (!test::reads_windows(g, gr)) continue;
    std::vector<codegen::Tunables> cands = codegen::candidates(g, gr, h200a());
    ASSERT_FALSE(cands.empty());
    // Three (NVRTC takes seconds a kernel; the GPU test runs every candidate).
    for (const codegen::Tunables& t : test::three_candidates(cands)) {
      const codegen::GroupCode gc = codegen::generate(g, gr, h200a(), &t);
      ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
      const codegen::Kernel& k = *gc.kernel;
      EXPECT_EQ(codegen::schedule_name(k), "wgmma");
      ASSERT_EQ(k.tensor_maps.size(), 2u);
      const codegen::TensorMap& m = k.tensor_maps[0];
      ASSERT_TRUE(m.im2col()) << k.name;
      EXPECT_EQ(m.dims.size(), rank + 2);
      EXPECT_EQ(m.pixels, static_cast<uint32_t>(t.at("bm")));
      // A stem's windows: one tap's 8 padded channels a copy, into unswizzled 16-byte rows.
      const bool narrow = c.x[1] < 8;
      EXPECT_EQ(m.channels, narrow && m.dims[0] == 8 ? 8u : 64u);
      EXPECT_EQ(m.swizzle, m.channels == 64u);
      EXPECT_TRUE(m.box.empty());
      EXPECT_EQ(m.element_strides.front(), 1u);
      EXPECT_EQ(m.element_strides.back(), 1u);
      EXPECT_EQ(m.lower.size(), rank);
      EXPECT_EQ(m.upper.size(), rank);
      EXPECT_FALSE(k.params.at(m.param).is_output);
      EXPECT_FALSE(k.tensor_maps[1].im2col());
      const gpu::Compiled comp =
          gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90a"), true);
      ASSERT_FALSE(comp.cubin.empty());
      const std::string copy =
          fmt::format("cp.async.bulk.tensor.{}d.shared::cluster.global.im2col", rank + 2);
      EXPECT_NE(comp.ptx.find(copy), std::string::npos) << k.name << " lacks " << copy;
      EXPECT_NE(comp.ptx.find("wgmma.mma_async.sync.aligned"), std::string::npos);
      EXPECT_EQ(comp.ptx.find("ld.local"), std::string::npos) << k.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvWgmmaCodegen, ::testing::ValuesIn(test::conv_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// The first convolution of the Dilation2AsymmetricPads case ([1, 128, 12, 10], 3x3, pads
// [2, 1, 1, 2], dilation 2): the map is [C, W, H, N] innermost first; the walk's corners run
// from −pad_begin to dim + pad_end − dilation · (kernel − 1) − 1, W first.
TEST(ConvWgmmaCodegen, MapFollowsTheWindowGeometry) {
  const test::ConvCase& c = test::conv_cases()[2];
  ASSERT_EQ(std::string(c.name), "Dilation2AsymmetricPads");
  const graph::Graph g = test::conv_case_graph(c, DType::BFloat16);
  const fusion::Plan plan = codegen::plan_for(g, true, h200a());
  bool found = false;
  for (const fusion::Group& gr : plan.groups) {
    if (!test::reads_windows(g, gr)) continue;
    const codegen::GroupCode gc = codegen::generate(g, gr, h200a());
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    const codegen::TensorMap& m = gc.kernel->tensor_maps[0];
    if (m.dims[0] != 128) continue;  // the second convolution's 64 channels
    found = true;
    EXPECT_EQ(m.dims, (std::vector<uint64_t>{128, 10, 12, 1}));
    EXPECT_EQ(m.strides, (std::vector<uint64_t>{128 * 2, 128 * 10 * 2, 128 * 10 * 12 * 2}));
    EXPECT_EQ(m.lower, (std::vector<int32_t>{-1, -2}));
    EXPECT_EQ(m.upper, (std::vector<int32_t>{2 - 4, 1 - 4}));
    EXPECT_EQ(m.element_strides, (std::vector<uint32_t>{1, 1, 1, 1}));
    EXPECT_EQ(m.dtype, DType::BFloat16);
  }
  EXPECT_TRUE(found);
}

// At --precision tf32 (float32, weights k-major): the windows load as floats, 32 channels a
// k-tile, into tf32 wgmma's (k8 steps).
TEST(ConvWgmmaCodegen, Tf32WindowsLoadAsFloats) {
  codegen::Target tf32 = h200a();
  tf32.tf32 = true;
  const test::ConvCase& c = test::conv_cases()[1];  // Stride2
  const graph::Graph g = test::conv_case_graph(c, DType::Float32);
  const fusion::Plan plan = codegen::plan_for(g, true, tf32);
  EXPECT_EQ(windows_of(g, plan).in_gemm, 2);
  for (const fusion::Group& gr : plan.groups) {
    if (!test::reads_windows(g, gr)) continue;
    const codegen::GroupCode gc = codegen::generate(g, gr, tf32);
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    const codegen::Kernel& k = *gc.kernel;
    ASSERT_EQ(k.tensor_maps.size(), 2u);
    EXPECT_EQ(k.tensor_maps[0].dtype, DType::Float32);
    EXPECT_EQ(k.tensor_maps[0].channels, 32u);
    EXPECT_EQ(k.tensor_maps[1].box.at(0), 32u);
    const gpu::Compiled comp =
        gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90a"), true);
    EXPECT_NE(comp.ptx.find("k8.f32.tf32.tf32"), std::string::npos) << k.name;
    EXPECT_NE(comp.ptx.find("global.im2col"), std::string::npos) << k.name;
  }
}

// Where wgmma is not offered, the windows stay a kernel of their own that the tensor-core
// schedules read as a plain operand.
TEST(ConvWgmmaCodegen, ImTwoColStaysItsOwnKernelOffSm90a) {
  const graph::Graph g = test::conv_case_graph(test::conv_cases()[0], DType::Float16);
  codegen::Target emu = h200a();
  emu.emulated = true;
  for (const codegen::Target& t : {codegen::Target{90, 132}, codegen::Target{80, 108}, emu}) {
    const WindowCount n = windows_of(g, codegen::plan_for(g, true, t));
    EXPECT_EQ(n.in_gemm, 0) << t.sm << (t.emulated ? " emulated" : "");
    EXPECT_EQ(n.alone, 2) << t.sm << (t.emulated ? " emulated" : "");
  }
}

}  // namespace
}  // namespace braze
