// Depthwise convolutions and pooling in channels-last plans on the GPU (#19,
// tests/depthwise_cases.h): the default plan, and every candidate of the depthwise
// convolution's or pooling's kernel (vectors of channels, or one element a thread), run with the
// arena poisoned and compared element by element with the reference executor, in float16,
// bfloat16 and float32. Skips without a GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/depthwise_cases.h"
#include "tests/gemm_test_util.h"

namespace braze {
namespace {

class GpuDepthwise : public ::testing::TestWithParam<std::tuple<test::DepthwiseCase, DType>> {};

TEST_P(GpuDepthwise, EveryCandidateMatchesTheReference) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const auto& [c, dtype] = GetParam();
  const graph::Graph g = test::depthwise_case_graph(c, dtype);
  const gpu::EngineOptions o = gpu::default_engine_options();
  const fusion::Plan plan = codegen::plan_for(g, true, o.target);
  const std::vector<gpu::Step> base = gpu::generate_steps(g, plan, o.target);
  const std::vector<Tensor> in = test::random_inputs(g, 73);
  const Tensor want = runtime::run_reference(g, in).at(0);
  EXPECT_TRUE(test::depthwise_outputs_close(test::run_poisoned(gpu::Engine::build(g, plan, o), in),
                                            want, dtype))
      << c.name << " default plan";
  const char* op = *c.pool ? c.pool : "Conv";
  int loops = 0;
  for (size_t gi = 0; gi < base.size(); ++gi) {
    if (!test::has_op(g, base[gi].group, op)) continue;
    ++loops;
    ASSERT_TRUE(base[gi].kernel) << base[gi].fallback_reason;
    EXPECT_EQ(codegen::schedule_name(g, *base[gi].kernel), *c.pool ? "pool" : "depthwise");
    for (const codegen::Tunables& t : codegen::candidates(g, base[gi].group, o.target)) {
      std::string why, tun;
      for (const auto& [k, v] : t) tun += fmt::format("{}={} ", k, v);
      auto engine = test::engine_with(g, base, gi, t, o, &why);
      ASSERT_TRUE(engine) << why;
      EXPECT_TRUE(test::depthwise_outputs_close(test::run_poisoned(engine, in), want, dtype))
          << c.name << " kernel " << gi << ": " << tun;
    }
  }
  EXPECT_EQ(loops, 1);
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuDepthwise,
                         ::testing::Combine(::testing::ValuesIn(test::depthwise_cases()),
                                            ::testing::Values(DType::Float16, DType::BFloat16,
                                                              DType::Float32)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace braze
