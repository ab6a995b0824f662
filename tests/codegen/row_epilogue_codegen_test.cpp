// Row programs in a GEMM's epilogue (tests/row_epilogue_cases.h) on the CPU: the sm_90a plan
// computes a normalisation over the product's columns in the product's kernel where it can,
// and says why not where it cannot; the emulator's plan keeps it in a kernel of its own; every
// candidate compiles with NVRTC for sm_90a to wgmma with no local memory (tests/gpu runs them).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/pipeline.h"
#include "tests/gemm_test_util.h"
#include "tests/row_epilogue_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

struct Planned {
  graph::Graph g;
  fusion::Plan plan;
};

Planned planned(const test::RowEpilogueCase& c, const char* dtype, const codegen::Target& t) {
  Planned p{test::graph_from_text(test::row_epilogue_text(c, dtype)), {}};
  graph::passes::run_pipeline(p.g);
  p.plan = codegen::plan_for(p.g, true, t);
  return p;
}

bool has_op(const graph::Graph& g, const fusion::Group& grp, const char* op) {
  for (graph::NodeId id : grp.nodes)
    if (g.node(id).op_type() == op) return true;
  return false;
}

// The GEMM group (exactly one expected).
const fusion::Group* gemm_group(const Planned& p) {
  const fusion::Group* found = nullptr;
  for (const fusion::Group& grp : p.plan.groups)
    if (grp.kind == fusion::GroupKind::Gemm) {
      EXPECT_EQ(found, nullptr);
      found = &grp;
    }
  return found;
}

TEST(RowEpilogue, TheSm90aPlanNormalisesInTheProductsKernel) {
  for (const test::RowEpilogueCase& c : test::row_epilogue_cases()) {
    const Planned p = planned(c, "float16", test::h200a());
    EXPECT_EQ(p.plan.groups.size(), c.kernels) << c.name;
    const fusion::Group* gemm = gemm_group(p);
    ASSERT_NE(gemm, nullptr) << c.name;
    EXPECT_EQ(has_op(p.g, *gemm, "LayerNormalization"), c.fused) << c.name;
    if (c.fused) continue;
    bool said = false;
    for (const fusion::RefusedMerge& r : p.plan.refused)
      said = said || (p.g.node(r.consumer).op_type() == "LayerNormalization" &&
                      r.reason.find("not in the GEMM's epilogue") != std::string::npos);
    EXPECT_TRUE(said) << c.name << ": inspect says why the LayerNorm has its own kernel";
  }
}

TEST(RowEpilogue, TheEmulatorsPlanKeepsTheNormalisationApart) {
  codegen::Target emu = test::h200a();
  emu.emulated = true;
  for (const test::RowEpilogueCase& c : test::row_epilogue_cases()) {
    const Planned p = planned(c, "float16", emu);
    const fusion::Group* gemm = gemm_group(p);
    ASSERT_NE(gemm, nullptr) << c.name;
    EXPECT_FALSE(has_op(p.g, *gemm, "LayerNormalization")) << c.name;
  }
}

TEST(RowEpilogue, EveryCandidateCompilesForSm90a) {
  std::set<int> clusters;
  int n = 0;
  for (const test::RowEpilogueCase& c : test::row_epilogue_cases()) {
    if (!c.fused) continue;
    for (const char* dtype : {"float16", "bfloat16"}) {
      Planned p = planned(c, dtype, test::h200a());
      const fusion::Group* gemm = gemm_group(p);
      ASSERT_NE(gemm, nullptr) << c.name;
      const test::GemmGroup gg{p.g, *gemm};
      const std::vector<codegen::Tunables> cands =
          codegen::candidates(gg.g, gg.group, test::h200a());
      EXPECT_FALSE(cands.empty()) << c.name;
      for (const codegen::Tunables& t : cands) {
        std::string what = fmt::format("{} {}", c.name, dtype);
        for (const auto& [k, v] : t) what += fmt::format(" {}={}", k, v);
        ASSERT_TRUE(t.count("rc")) << what;
        const std::string src = test::expect_wgmma_compiles(gg, &t, what);
        // A row held by several blocks is combined through distributed shared memory.
        EXPECT_EQ(src.find("braze_cluster_read(") != std::string::npos, t.at("rc") > 1) << what;
        EXPECT_EQ(src.find("__cluster_dims__") != std::string::npos, t.at("rc") > 1) << what;
        clusters.insert(t.at("rc"));
        ++n;
      }
    }
  }
  EXPECT_GE(n, 12);
  EXPECT_TRUE(clusters.count(1) && clusters.count(8)) << "clusters of 1 and of 8 blocks compiled";
}

}  // namespace
}  // namespace braze
