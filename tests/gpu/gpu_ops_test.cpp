// Every op case on the GPU: generated kernels compiled with NVRTC and run through an Engine
// and Session, compared element by element with the reference executor on fresh random
// inputs, with the arena poisoned (NaN bytes) before the run. Skips without a GPU.
#include <gtest/gtest.h>

#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/gelu_sweep.h"
#include "tests/op_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class GpuOps : public ::testing::TestWithParam<test::OpCase> {};

TEST_P(GpuOps, MatchesReference) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const test::OpCase& c = GetParam();
  graph::Graph g = test::graph_from_text(c.text);
  graph::passes::run_pipeline(g);
  runtime::RandomSpec spec;
  spec.int_max = c.int_hi - 1;
  // Fused and unfused; two runs with different inputs through one session each, so results
  // must track the inputs.
  for (bool fuse : {true, false}) {
    auto engine = gpu::Engine::build(g, fusion::make_plan(g, fuse, codegen::kernel_lowerings()),
                                     gpu::default_engine_options());
    for (const gpu::Step& s : engine->steps())
      EXPECT_TRUE(s.kernel.has_value()) << s.fallback_reason;
    gpu::Session session(engine);
    for (uint64_t seed : {5u, 6u}) {
      std::vector<Tensor> in;
      for (size_t i = 0; i < g.inputs().size(); ++i) {
        const graph::Value& v = g.value(g.inputs()[i]);
        in.push_back(runtime::random_tensor(v.dtype, v.shape, seed * 100 + i, spec));
      }
      gpu::RunOptions ro;
      ro.poison = true;
      std::vector<Tensor> got = session.run(in, ro);
      std::vector<Tensor> want = runtime::run_reference(g, in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        runtime::Comparison cmp = runtime::compare(got[i], want[i], {c.rtol, c.atol});
        EXPECT_TRUE(cmp.ok) << g.outputs()[i].name << " (seed " << seed
                            << (fuse ? ", fused" : ", unfused")
                            << "): " << cmp.summary(got[i], want[i]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuOps, ::testing::ValuesIn(test::op_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// Gelu into float16 / bfloat16 (braze_gelu_erf_f16 / _bf16, braze_gelu_tanh_f16 /
// braze_gelu_tanh; ex2.approx on the GPU) over every value of the type in [-12, 12]: within
// one unit in the last place of the exact value.
TEST(GpuGelu, IntoHalfTypesIsWithinAnUlp) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  // Both forms into both types (the tanh form: braze_gelu_tanh_f16 / braze_gelu_tanh).
  for (auto [dt, tanh_form] : {std::pair{DType::Float16, false},
                               {DType::BFloat16, false},
                               {DType::Float16, true},
                               {DType::BFloat16, true}}) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + (tanh_form ? ", tanh form" : ", erf form"));
    const Tensor in = test::gelu_sweep_input(dt);
    graph::Graph g = test::graph_from_text(test::gelu_sweep_model(dt, in.numel(), tanh_form));
    auto engine = gpu::Engine::build(g, fusion::plan_unfused(g), gpu::default_engine_options());
    gpu::Session session(engine);
    gpu::RunOptions ro;
    ro.poison = true;
    std::vector<Tensor> got = session.run({in}, ro);
    ASSERT_EQ(got.size(), 1u);
    test::expect_gelu_sweep(in, got[0], tanh_form);
  }
}

TEST(GpuErrors, OutOfRangeGatherIndexIsAClearError) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[5,3] d, int64[2] i) => (float[2,3] y) { y = Gather <axis = 0> (d, i) })");
  auto engine = gpu::Engine::build(g, fusion::plan_unfused(g), gpu::default_engine_options());
  gpu::Session session(engine);
  try {
    session.run({test::random(DType::Float32, {5, 3}), test::int64s({2}, {1, 7})});
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Gather"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braze
