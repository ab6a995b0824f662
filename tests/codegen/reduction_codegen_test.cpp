// The reduction schedule's search space on sm_90: long rows staged in shared memory by
// cp.async, few very long rows split over thread-block clusters, every candidate compiled
// by NVRTC into PTX without local-memory spills. (Their results on the GPU:
// tests/gpu/gpu_search_test.cpp; on the emulator: tests/runtime/emulator_ops_test.cpp.)
#include <gtest/gtest.h>

#include <string>

#include "codegen/lowering.h"
#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/reduction_search_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

int tunable(const codegen::Tunables& t, const char* name) { return t.count(name) ? t.at(name) : 0; }

TEST(ReductionCodegen, StagedAndSplitRowsCompileForSm90) {
  graph::Graph g = test::graph_from_text(test::reduction_search_text());
  graph::passes::run_pipeline(g);
  const codegen::Target h200{90, 132};
  size_t staged = 0, split = 0, groups = 0;
  for (const fusion::Group& grp : fusion::plan_fused(g, codegen::kernel_lowerings()).groups) {
    if (grp.kind != fusion::GroupKind::Reduction) continue;
    ++groups;
    std::vector<codegen::Tunables> cands = codegen::candidates(g, grp, h200);
    ASSERT_FALSE(cands.empty());
    for (const codegen::Tunables& t : cands) {
      codegen::GroupCode gc = codegen::generate(g, grp, h200, &t);
      ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
      const codegen::Kernel& k = *gc.kernel;
      gpu::Compiled c = gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90"), true);
      ASSERT_FALSE(c.cubin.empty()) << k.name;
      EXPECT_EQ(c.ptx.find("ld.local"), std::string::npos) << k.name;
      if (tunable(t, "cache") == 2) {
        ++staged;
        EXPECT_GT(k.shared_bytes, 0u);
        EXPECT_LE(k.shared_bytes, 96u * 1024 + 64);
        EXPECT_NE(c.ptx.find("cp.async"), std::string::npos) << k.name;
      } else {
        EXPECT_EQ(k.shared_bytes, 0u);
      }
      if (tunable(t, "split") > 1) {
        ++split;
        EXPECT_NE(k.source.find("__cluster_dims__(" + std::to_string(t.at("split"))),
                  std::string::npos);
        EXPECT_EQ(k.grid[0] % static_cast<unsigned>(t.at("split")), 0u);
        EXPECT_NE(c.ptx.find("barrier.cluster"), std::string::npos) << k.name;
        EXPECT_NE(c.ptx.find("mapa"), std::string::npos) << k.name;
      }
    }
    // The defaults: 40 rows of 32000 halves staged in shared memory by 512 threads, 3-5 rows of
    // 36000+ split over clusters.
    const codegen::Tunables& def = cands.front();
    const graph::Value& out = g.value(grp.outputs[0]);
    if (out.shape[0] == 40) {
      EXPECT_EQ(tunable(def, "cache"), 2);
      EXPECT_EQ(tunable(def, "tpr"), 512);
    } else {
      EXPECT_GT(tunable(def, "split"), 1) << out.name;
    }
  }
  EXPECT_EQ(groups, 4u);
  EXPECT_GE(staged, 8u);
  EXPECT_GT(split, 8u);
}

// The softmax output reuses the exp its sum pass computed when the row is held in
// registers, and multiplies by the reciprocal of the sum instead of dividing.
TEST(ReductionCodegen, SoftmaxReusesTheSumPassExp) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[64,256] x) => (float[64,256] y) { y = Softmax <axis = -1> (x) })");
  graph::passes::run_pipeline(g);
  fusion::Plan plan = fusion::plan_fused(g, codegen::kernel_lowerings());
  ASSERT_EQ(plan.groups.size(), 1u);
  codegen::Tunables t{{"tpr", 32}, {"rpb", 1}, {"cache", 1}, {"vec", 4}};
  codegen::GroupCode gc = codegen::generate(g, plan.groups[0], codegen::Target{}, &t);
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  const std::string& src = gc.kernel->source;
  size_t body = src.find("// ---- generated");
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t p = src.find(what, body); p != std::string::npos; p = src.find(what, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("braze_exp_fast("), 8u);  // 256 / 32 lanes: once per element
  EXPECT_EQ(count(") / s0_1"), 0u);         // no division per element
  EXPECT_EQ(count("(1.0f / s0_1)"), 8u);
}

}  // namespace
}  // namespace braze
