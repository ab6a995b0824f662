// Gated products (tests/gated_cases.h) on the wgmma schedule, compiled with NVRTC for sm_90a
// (no GPU needed; tests/gpu runs them): the default candidate of each case, and every wgmma
// candidate of one, compiles to wgmma with no local memory, the product's columns twice the
// output's.
#include <gtest/gtest.h>

#include <string>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "tests/gated_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

bool is_wg(const codegen::Tunables& t) { return t.count("wg") && t.at("wg") == 1; }

TEST(GatedCodegen, DefaultCandidatesCompileToWgmma) {
  for (const test::GatedCase& c : test::gated_cases()) {
    if (c.gemm_kernels != 1) continue;  // one GEMM group: the gated one
    for (const char* dtype : {"float16", "bfloat16"}) {
      const test::GemmGroup gg = test::gemm_group_of(test::gated_text(c, dtype));
      test::expect_wgmma_compiles(gg, nullptr, fmt::format("{} {}", c.name, dtype));
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
      test::expect_wgmma_compiles(gg, &t, tun);
      ++n;
    }
  EXPECT_GE(n, 4);
}

}  // namespace
}  // namespace braze
