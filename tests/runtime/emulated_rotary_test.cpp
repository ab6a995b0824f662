// Rotary embeddings after a projection (tests/rotary_cases.h) on the CPU emulator: the
// pipeline makes the rotation one SwapPairs expression over the product's interleaved heads,
// the plan puts it in that product's kernel (mma.sync for 16-bit types, the SIMT schedule for
// float32), and the outputs match the reference executor on the graph before the passes, with
// the default tiles and the last candidate.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/column_pairs.h"
#include "graph/passes/pipeline.h"
#include "runtime/emulator.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/gemm_test_util.h"
#include "tests/rotary_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class EmulatedRotary : public ::testing::TestWithParam<std::tuple<test::RotaryCase, const char*>> {
};

TEST_P(EmulatedRotary, TheProjectionsKernelRotates) {
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::rotary_text(c, dtype));
  const graph::Graph before = g;
  graph::passes::run_pipeline(g);
  size_t swaps = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i)
    swaps += !g.node(static_cast<graph::NodeId>(i)).dead &&
             graph::is_swap_pairs(g.node(static_cast<graph::NodeId>(i)));
  EXPECT_EQ(swaps, c.swaps);
  const codegen::Target target = runtime::emulator_target({});
  const fusion::Plan plan = codegen::plan_for(g, true, target);
  size_t gemms = 0, rotating = 0;
  for (const gpu::Step& s : gpu::generate_steps(g, plan, target)) {
    ASSERT_TRUE(s.kernel) << s.fallback_reason;
    const bool has_swap =
        std::any_of(s.group.nodes.begin(), s.group.nodes.end(),
                    [&](graph::NodeId id) { return graph::is_swap_pairs(g.node(id)); });
    if (s.group.kind != fusion::GroupKind::Gemm) {
      EXPECT_FALSE(has_swap) << "SwapPairs outside the product's kernel";
      continue;
    }
    ++gemms;
    rotating += has_swap;
    EXPECT_EQ(codegen::schedule_name(*s.kernel), std::string(dtype) == "float" ? "simt" : "mma");
  }
  EXPECT_EQ(rotating, c.swaps);
  EXPECT_EQ(gemms, c.gemm_kernels);
  std::string groups;
  for (const fusion::Group& grp : plan.groups) {
    groups += fusion::group_kind_name(grp.kind);
    for (graph::NodeId id : grp.nodes) groups += " " + g.node(id).op_type();
    groups += "\n";
  }
  EXPECT_EQ(plan.groups.size(), c.kernels) << groups;
  const std::vector<Tensor> in = test::random_inputs(g, 61);
  const Tensor want = runtime::run_reference(before, in).at(0);
  test::expect_emulated_matches(g, plan, target, in, want, fmt::format("{} {}", c.name, dtype));
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedRotary,
                         ::testing::Combine(::testing::ValuesIn(test::rotary_cases()),
                                            ::testing::Values("float16", "bfloat16", "float")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace braze
