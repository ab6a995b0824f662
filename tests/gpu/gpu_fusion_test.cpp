// The fusion patterns on the GPU: each fused graph built into an engine, run twice on fresh
// random inputs with the arena poisoned, every element compared with the reference
// executor. Skips without a GPU.
#include <gtest/gtest.h>

#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/fusion_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class GpuFusion : public ::testing::TestWithParam<test::FusionCase> {};

TEST_P(GpuFusion, FusedKernelsMatchReference) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const test::FusionCase& c = GetParam();
  graph::Graph g = test::graph_from_text(c.text);
  graph::passes::run_pipeline(g);
  fusion::Plan plan = fusion::plan_fused(g, codegen::kernel_lowerings());
  EXPECT_EQ(plan.groups.size(), c.kernels);
  auto engine = gpu::Engine::build(g, plan, gpu::default_engine_options());
  for (const gpu::Step& s : engine->steps()) {
    EXPECT_TRUE(s.kernel.has_value()) << s.fallback_reason;
    EXPECT_TRUE(s.split_note.empty()) << s.split_note;
  }
  gpu::Session session(engine);
  for (uint64_t seed : {11u, 12u}) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const graph::Value& v = g.value(g.inputs()[i]);
      in.push_back(runtime::random_tensor(v.dtype, v.shape, seed * 100 + i, {}));
    }
    gpu::RunOptions ro;
    ro.poison = true;
    std::vector<Tensor> got = session.run(in, ro);
    std::vector<Tensor> want = runtime::run_reference(g, in);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(test::tensors_close(got[i], want[i])) << g.outputs()[i].name << " seed " << seed;
  }
}

// Inputs uploaded once, the plan replayed as a CUDA graph three times: each replay reads the
// same inputs, though the input's last reader is the first kernel (its bytes were reused by
// later kernels' values, so every run after the first read garbage).
TEST(GpuRepeatedRuns, ReplaysReadTheInputsUploadedOnce) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[256,64] x, float[64,32] w) => (float[256,32] y) {
      a = Relu(x)  b = Exp(a)  c = MatMul(b, w)  d = Sigmoid(c)  y = Neg(d) })");
  graph::passes::run_pipeline(g);
  auto engine = gpu::Engine::build(g, fusion::plan_unfused(g), gpu::default_engine_options());
  gpu::Session session(engine);
  std::vector<Tensor> in = test::random_inputs(g, 31);
  std::vector<Tensor> want = runtime::run_reference(g, in);
  session.upload(in);
  for (int run = 0; run < 3; ++run) {
    session.enqueue(true);
    session.check_flags();
    EXPECT_TRUE(test::tensors_close(session.fetch(g.outputs()[0].value), want[0]))
        << "replay " << run;
  }
  for (int run = 0; run < 2; ++run)
    EXPECT_TRUE(test::tensors_close(session.run(in)[0], want[0])) << "run " << run;
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuFusion, ::testing::ValuesIn(test::fusion_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace braze
