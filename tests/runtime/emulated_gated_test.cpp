// Gated products (tests/gated_cases.h) on the CPU emulator: the pipeline makes one product over
// interleaved weights and its column pair, the plan puts the gated expression in that
// product's kernel (mma.sync for 16-bit types, the SIMT schedule for float32), and the outputs
// match the reference executor, with the default tiles and the last candidate.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "codegen/lowering.h"
#include "graph/column_pairs.h"
#include "graph/passes/pipeline.h"
#include "runtime/emulator.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/gated_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class EmulatedGated : public ::testing::TestWithParam<std::tuple<test::GatedCase, const char*>> {};

// The column pair Slices of g, by parity.
std::vector<int> column_pairs(const graph::Graph& g) {
  std::vector<int> parities;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const graph::Node& n = g.node(static_cast<graph::NodeId>(i));
    if (!n.dead && graph::column_pair_parity(g, n) >= 0)
      parities.push_back(graph::column_pair_parity(g, n));
  }
  std::sort(parities.begin(), parities.end());
  return parities;
}

TEST_P(EmulatedGated, OneKernelComputesTheGatedExpression) {
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::gated_text(c, dtype));
  const graph::Graph before = g;
  graph::passes::run_pipeline(g);
  EXPECT_EQ(column_pairs(g), (std::vector<int>{0, 1}));
  size_t interleaved = 0;  // products against the [k, 2n] weights (behind a Transpose if k-major)
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const graph::Node& n = g.node(static_cast<graph::NodeId>(i));
    interleaved += !n.dead && (n.op_type() == "MatMul" || n.op_type() == "Gemm") &&
                   g.value(n.inputs[1]).shape == c.gated_weight;
  }
  EXPECT_EQ(interleaved, 1u);
  const codegen::Target target = runtime::emulator_target({});
  const fusion::Plan plan = codegen::plan_for(g, true, target);
  size_t gemms = 0, paired = 0;
  for (const gpu::Step& s : gpu::generate_steps(g, plan, target)) {
    ASSERT_TRUE(s.kernel) << s.fallback_reason;
    if (s.group.kind != fusion::GroupKind::Gemm) continue;
    ++gemms;
    EXPECT_EQ(codegen::schedule_name(*s.kernel), std::string(dtype) == "float" ? "simt" : "mma");
    paired += std::count_if(s.group.nodes.begin(), s.group.nodes.end(), [&](graph::NodeId id) {
      return graph::column_pair_parity(g, g.node(id)) >= 0;
    });
  }
  EXPECT_EQ(paired, 2u);
  EXPECT_EQ(gemms, c.gemm_kernels);
  EXPECT_EQ(plan.groups.size(), c.gemm_kernels + c.other_kernels);
  const std::vector<Tensor> in = test::random_inputs(g, 53);
  const Tensor want = runtime::run_reference(before, in).at(0);
  test::expect_emulated_matches(g, plan, target, in, want, fmt::format("{} {}", c.name, dtype));
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedGated,
                         ::testing::Combine(::testing::ValuesIn(test::gated_cases()),
                                            ::testing::Values("float16", "bfloat16", "float")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace braze
