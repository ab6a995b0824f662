// Gated products (tests/gated_cases.h) on the wgmma schedule, compiled with NVRTC for sm_90a
// (no GPU needed; tests/gpu runs them): the default candidate of each case, and every wgmma
// candidate of one, compiles to wgmma with no local memory, the product's columns twice the
// output's.
#include <gtest/gtest.h>

#include <string>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/gated_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

bool is_wg(const codegen::Tunables& t) { return t.count("wg") && t.at("wg") == 1; }

void expect_compiles(const test::GemmGroup& gg, const codegen::Tunables* t,
                     const std::string& what) {
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, test::h200a(), t);
  ASSERT_TRUE(gc.kernel.has_value()) << what << ": " << gc.fallback_reason;
  EXPECT_EQ(codegen::schedule_name(*gc.kernel), "wgmma") << what;
  gpu::Compiled comp =
      gpu::nvrtc_compile(gc.kernel->source, gc.kernel->name, gpu::Arch::parse("sm_90a"), true);
  ASSERT_FALSE(comp.cubin.empty()) << what;
  EXPECT_NE(comp.ptx.find("wgmma.mma_async"), std::string::npos) << what;
  EXPECT_EQ(comp.ptx.find("ld.local"), std::string::npos) << what;
  EXPECT_EQ(comp.ptx.find("st.local"), std::string::npos) << what;
}

TEST(GatedCodegen, DefaultCandidatesCompileToWgmma) {
  for (const test::GatedCase& c : test::gated_cases()) {
    if (c.gemm_kernels != 1) continue;  // one GEMM group: the gated one
    for (const char* dtype : {"float16", "bfloat16"}) {
      const test::GemmGroup gg = test::gemm_group_of(test::gated_text(c, dtype));
      expect_compiles(gg, nullptr, fmt::format("{} {}", c.name, dtype));
    }
  }
}

TEST(GatedCodegen, EveryWgmmaCandidateCompiles) {
  const test::GatedCase& c = test::gated_cases().back();  // GatedIntoHeads: a store map
  const test::GemmGroup gg = test::gemm_group_of(test::gated_text(c, "float16"));
  int n = 0;
  for (const codegen::Tunables& t : codegen::candidates(gg.g, gg.group, test::h200a()))
    if (is_wg(t)) {
      std::string tun;
      for (const auto& [k, v] : t) tun += fmt::format("{}={} ", k, v);
      expect_compiles(gg, &t, tun);
      ++n;
    }
  EXPECT_GE(n, 4);
}

}  // namespace
}  // namespace braze
