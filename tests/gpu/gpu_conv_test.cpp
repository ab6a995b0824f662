// Implicit-GEMM convolutions on the GPU (#19, tests/conv_cases.h): on sm_90a each convolution
// whose input channels are a multiple of 64 runs as one wgmma kernel that loads its windows
// with TMA's im2col mode (no Im2Col kernel); every candidate of its search space (float16;
// for bfloat16 and float32 at tf32 the default, a persistent ping-pong tile and a 256-row
// tile) is built and run
// with the arena poisoned and compared element by element with the reference executor, as is
// the default plan elsewhere (sm_80: mma.sync after an Im2Col kernel). Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/conv_cases.h"
#include "tests/gemm_test_util.h"

namespace braze {
namespace {

// The candidates run: all of them for float16, three for bfloat16 and tf32.
std::vector<codegen::Tunables> picked(const std::vector<codegen::Tunables>& all, DType dtype) {
  return dtype == DType::Float16 ? all : test::three_candidates(all);
}

class GpuConv : public ::testing::TestWithParam<std::tuple<test::ConvCase, DType>> {};

TEST_P(GpuConv, EveryCandidateMatchesTheReference) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const auto& [c, dtype] = GetParam();
  const graph::Graph g = test::conv_case_graph(c, dtype);
  gpu::EngineOptions o = gpu::default_engine_options();
  o.target.tf32 = dtype == DType::Float32;
  const fusion::Plan plan = codegen::plan_for(g, true, o.target);
  const std::vector<gpu::Step> base = gpu::generate_steps(g, plan, o.target);
  const std::vector<Tensor> in = test::random_inputs(g, 67);
  const Tensor want = runtime::run_reference(g, in).at(0);
  auto default_engine = gpu::Engine::build(g, plan, o);
  EXPECT_TRUE(test::conv_outputs_close(test::run_poisoned(default_engine, in), want, dtype))
      << c.name << " default plan";
  int windows = 0;
  for (size_t gi = 0; gi < base.size(); ++gi) {
    if (!test::reads_windows(g, base[gi].group)) continue;
    ++windows;
    ASSERT_TRUE(base[gi].kernel) << base[gi].fallback_reason;
    EXPECT_EQ(codegen::schedule_name(*base[gi].kernel), "wgmma");
    EXPECT_TRUE(base[gi].kernel->tensor_maps.at(0).im2col());
    for (const codegen::Tunables& t :
         picked(codegen::candidates(g, base[gi].group, o.target), dtype)) {
      std::string why, tun;
      for (const auto& [k, v] : t) tun += fmt::format("{}={} ", k, v);
      auto engine = test::engine_with(g, base, gi, t, o, &why);
      if (!engine) continue;  // a candidate this product's shape refuses
      EXPECT_TRUE(test::conv_outputs_close(test::run_poisoned(engine, in), want, dtype))
          << c.name << " kernel " << gi << ": " << tun;
    }
  }
  // Windows are read in place on sm_90a only.
  // (tf32's k-tile is 32 channels: the first convolution of 32 channels is read in place too;
  // a stem's 3 are padded to 8 in half precision only.)
  const bool first = dtype == DType::Float32 ? c.x[1] % 32 == 0 : c.first_in_place;
  EXPECT_EQ(windows, !o.target.sm90a ? 0 : first ? 2 : 1);
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuConv,
                         ::testing::Combine(::testing::ValuesIn(test::conv_cases()),
                                            ::testing::Values(DType::Float16, DType::BFloat16,
                                                              DType::Float32)),
                         [](const auto& info) {
                           const DType t = std::get<1>(info.param);
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  (t == DType::Float16    ? "float16"
                                   : t == DType::BFloat16 ? "bfloat16"
                                                          : "tf32");
                         });

}  // namespace
}  // namespace braze
