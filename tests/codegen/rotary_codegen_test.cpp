// Rotary embeddings after a projection (tests/rotary_cases.h) on the wgmma schedule, compiled
// with NVRTC for sm_90a (no GPU needed; tests/gpu runs them): every wgmma candidate of each
// rotating case compiles to wgmma with no local memory, the rotation reading each element's
// partner from the lane's other sum of the pair, not from memory.
#include <gtest/gtest.h>

#include <string>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "tests/gemm_test_util.h"
#include "tests/rotary_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

TEST(RotaryCodegen, EveryWgmmaCandidateCompiles) {
  int n = 0;
  for (const test::RotaryCase& c : test::rotary_cases()) {
    if (c.swaps == 0) continue;
    const test::GemmGroup gg = test::gemm_group_of(test::rotary_text(c, "float16"));
    for (const codegen::Tunables& t : codegen::candidates(gg.g, gg.group, test::h200a())) {
      if (!t.count("wg") || t.at("wg") != 1) continue;
      std::string what = c.name;
      for (const auto& [k, v] : t) what += fmt::format(" {}={}", k, v);
      // The partner is the lane's other sum of the pair: acc_q[q ^ 1] where a lane's values
      // are stored as vectors, else the sum expression at (q ^ 1).
      const std::string src = test::expect_wgmma_compiles(gg, &t, what);
      EXPECT_TRUE(src.find("(acc_q[") != std::string::npos ||
                  src.find("^ 1)])") != std::string::npos)
          << what;
      ++n;
    }
  }
  EXPECT_GE(n, 4);
}

// The default candidate of Llama's Q, K, V: four lanes a thread, whose columns put back in
// order are two runs of two (one vector store each), the tables read as one vector per table
// and the head's mask once (emitter: (lane) % 64 and (lane) / 64).
TEST(RotaryCodegen, TheLanesStoreVectorsAndLoadTheTablesAsVectors) {
  const test::RotaryCase& c = test::rotary_cases().front();  // LlamaQkv
  const test::GemmGroup gg = test::gemm_group_of(test::rotary_text(c, "float16"));
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, test::h200a(), nullptr);
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  const std::string& src = gc.kernel->source;
  const std::string body = src.substr(src.find("__global__"));
  EXPECT_EQ(body.find("braze_store(out"), std::string::npos);
  EXPECT_NE(body.find("braze_vstore_typed<2>(out"), std::string::npos);
  EXPECT_NE(body.find("braze_vload<4>(in"), std::string::npos);
}

}  // namespace
}  // namespace braze
