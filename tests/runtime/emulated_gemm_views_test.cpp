// Products whose operands are layouts (tests/gemm_view_cases.h) on the CPU emulator: the
// plan puts the layout ops inside the GEMM kernels, each GEMM runs on the tensor-core
// schedule (mma.sync: the emulator has no wgmma) reading its operands through strides, and
// the outputs match the reference executor.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/lowering.h"
#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/pipeline.h"
#include "runtime/emulator.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/gemm_test_util.h"
#include "tests/gemm_view_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class EmulatedGemmViews
    : public ::testing::TestWithParam<std::tuple<test::GemmViewCase, const char*>> {};

TEST_P(EmulatedGemmViews, TensorCoresReadTheLayoutsInPlace) {
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::gemm_view_text(c, dtype));
  graph::passes::run_pipeline(g);
  const codegen::Target target = runtime::emulator_target({});
  const fusion::Plan plan = codegen::plan_for(g, true, target);
  size_t gemms = 0;
  for (const gpu::Step& s : gpu::generate_steps(g, plan, target)) {
    ASSERT_TRUE(s.kernel) << s.fallback_reason;
    if (s.group.kind != fusion::GroupKind::Gemm) continue;
    ++gemms;
    EXPECT_EQ(codegen::schedule_name(*s.kernel), "mma") << s.kernel->name;
  }
  EXPECT_EQ(gemms, c.gemm_kernels);
  EXPECT_EQ(plan.groups.size(), c.gemm_kernels + c.other_kernels);
  const std::vector<Tensor> in = test::random_inputs(g, 41);
  const Tensor want = runtime::run_reference(g, in).at(0);
  // The default tiles, and for float16 the last candidate too (another tile shape and
  // pipeline depth); the emulator compiles each kernel with the host compiler, so the GPU test
  // (tests/gpu) sweeps the whole search space instead.
  size_t most = 0;
  for (const fusion::Group& grp : plan.groups)
    most = std::max(most, codegen::candidates(g, grp, target).size());
  std::vector<int> picks = {-1};
  if (std::string(dtype) == "float16" && most > 1) picks.push_back(static_cast<int>(most) - 1);
  for (int cand : picks) {
    const std::string what = fmt::format("{} {} candidate {}", c.name, dtype, cand);
    const Tensor got = test::emulate_with(g, plan, in, cand, what);
    ASSERT_TRUE(got.defined());
    EXPECT_TRUE(test::tensors_close(got, want)) << what;
  }
}

// A layout chain between two products goes to the consumer's view: the projections' kernels
// end at the bias and write rows (the mma.sync and wgmma schedules both read the chains).
TEST(GemmViewPlans, ProjectionsWriteRowsTheAttentionReadsViews) {
  const auto& cases = test::gemm_view_cases();
  auto it = std::find_if(cases.begin(), cases.end(), [](const test::GemmViewCase& c) {
    return std::string(c.name) == "BertProjectionsThenAttention";
  });
  ASSERT_NE(it, cases.end());
  graph::Graph g = test::graph_from_text(test::gemm_view_text(*it, "float16"));
  graph::passes::run_pipeline(g);
  codegen::Target sm90a;
  sm90a.sm90a = true;
  for (const codegen::Target& t : {runtime::emulator_target({}), sm90a}) {
    const fusion::Plan plan = codegen::plan_for(g, true, t);
    size_t projections = 0, attention = 0;
    for (const fusion::Group& grp : plan.groups) {
      if (grp.kind != fusion::GroupKind::Gemm) continue;
      std::vector<std::string> ops;
      for (graph::NodeId id : grp.nodes) ops.push_back(g.node(id).op_type());
      const bool projection =
          std::any_of(grp.nodes.begin(), grp.nodes.end(), [&](graph::NodeId id) {
            return g.node(id).op_type() == "MatMul" && g.value(g.node(id).inputs[1]).name[0] == 'w';
          });
      if (projection) {
        ++projections;
        EXPECT_EQ(std::count(ops.begin(), ops.end(), "Transpose"), 0) << "sm90a " << t.sm90a;
        EXPECT_EQ(std::count(ops.begin(), ops.end(), "Add"), 1) << "sm90a " << t.sm90a;
      } else {
        ++attention;
        EXPECT_GE(std::count(ops.begin(), ops.end(), "Transpose"), 2) << "sm90a " << t.sm90a;
      }
    }
    EXPECT_EQ(projections, 3u);
    EXPECT_EQ(attention, 2u);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedGemmViews,
                         ::testing::Combine(::testing::ValuesIn(test::gemm_view_cases()),
                                            ::testing::Values("float16", "bfloat16")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

// A float32 input cast to float16 in front of the product: the Cast is no layout, so it
// stays out of the GEMM kernel (which would otherwise fall back to the SIMT schedule).
TEST(GemmViews, ACastInFrontStaysInItsOwnKernel) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[64,32] x, float16[32,48] w) => (float16[64,48] y) {
      xh = Cast <to = 10> (x)  y = MatMul(xh, w) })");
  graph::passes::run_pipeline(g);
  codegen::Target sm90a;
  sm90a.sm90a = true;
  for (const codegen::Target& t : {sm90a, runtime::emulator_target({})}) {
    const fusion::Plan plan = codegen::plan_for(g, true, t);
    ASSERT_EQ(plan.groups.size(), 2u);
    bool refused = false;
    for (const fusion::RefusedMerge& r : plan.refused)
      refused = refused || r.reason.find("would not read it in place") != std::string::npos;
    EXPECT_TRUE(refused);
    for (const gpu::Step& s : gpu::generate_steps(g, plan, t)) {
      if (s.group.kind == fusion::GroupKind::Gemm) {
        EXPECT_EQ(codegen::schedule_name(*s.kernel), t.sm90a ? "wgmma" : "mma");
      }
    }
  }
  // Without capabilities (the SIMT schedule's view) the Cast is fused, as before.
  EXPECT_EQ(fusion::plan_fused(g, codegen::kernel_lowerings()).groups.size(), 1u);
}

}  // namespace
}  // namespace braze
