// The GPU path's generated kernels, run by the CPU emulator on every op case, compared
// element by element with the reference executor on fresh random inputs (outputs poisoned).
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "codegen/codegen.h"
#include "runtime/compare.h"
#include "runtime/emulator.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/op_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class EmulatedOps : public ::testing::TestWithParam<test::OpCase> {};

TEST_P(EmulatedOps, MatchesReference) {
  const test::OpCase& c = GetParam();
  graph::Graph g = test::graph_from_text(c.text);
  graph::passes::run_pipeline(g);
  runtime::RandomSpec spec;
  spec.int_max = c.int_hi - 1;
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    in.push_back(runtime::random_tensor(v.dtype, v.shape, 17 + i, spec));
  }
  std::vector<Tensor> want = runtime::run_reference(g, in);
  for (bool fuse : {true, false}) {
    std::vector<std::string> fallbacks;
    runtime::EmulatorOptions eo;
    eo.fallbacks = &fallbacks;
    std::vector<Tensor> got =
        runtime::run_emulated(g, fusion::make_plan(g, fuse, codegen::kernel_lowerings()), in, eo);
    EXPECT_TRUE(fallbacks.empty()) << fallbacks.front();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      runtime::Comparison cmp = runtime::compare(got[i], want[i], {c.rtol, c.atol});
      EXPECT_TRUE(cmp.ok) << g.outputs()[i].name << (fuse ? " (fused): " : " (unfused): ")
                          << cmp.summary(got[i], want[i]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedOps, ::testing::ValuesIn(test::op_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace braze

namespace braze {
namespace {

// Every point of the pointwise and reduction search spaces computes the same function:
// vector widths, threads per row, warp-per-row, cached rows and streamed rows (with the
// online softmax pass), on rows whose length is not a multiple of the vector or block.
TEST(EmulatedSearchSpace, EveryCandidateMatchesReference) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[3,264] x, float[5,72] y, float[64] w) => (float16[3,264] s, float[5,72] l, float[5,72] n) {
      s = Softmax <axis = -1> (x)
      ax = Constant <value = int64[1] {-1}> ()  sq = Mul(y, y)  m = ReduceMean(sq, ax)
      e = Constant <value = float {1e-6}> ()  a = Add(m, e)  r = Sqrt(a)  q = Reciprocal(r)  l = Mul(y, q)
      n = LogSoftmax <axis = 1> (y) })");
  graph::passes::run_pipeline(g);
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    in.push_back(runtime::random_tensor(v.dtype, v.shape, 40 + i, {}));
  }
  // Rows holding extreme values: softmax must stay exact on +-1e4 and propagate inf/NaN.
  in[0].set_f64(5, 1e4);
  in[0].set_f64(270, -1e4);
  in[0].set_f64(600, INFINITY);
  in[1].set_f64(100, NAN);
  std::vector<Tensor> want = runtime::run_reference(g, in);
  size_t most = 0;
  fusion::Plan plan = fusion::plan_fused(g, codegen::kernel_lowerings());
  for (const auto& grp : plan.groups) most = std::max(most, codegen::candidates(g, grp).size());
  ASSERT_GT(most, 10u);
  for (size_t c = 0; c < most; ++c) {
    runtime::EmulatorOptions eo;
    eo.candidate = static_cast<int>(c);
    std::vector<Tensor> got = runtime::run_emulated(g, plan, in, eo);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(test::tensors_close(got[i], want[i]))
          << g.outputs()[i].name << " with candidate " << c;
  }
}

// Every GEMM tile shape computes the same function: sizes that are not multiples of any
// tile, transposed operands, a broadcast batch, a fused bias + GELU epilogue, float16 in
// float accumulation.
TEST(EmulatedSearchSpace, EveryGemmTileMatchesReference) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[70,37] a, float[37,90] b, float[90] c, float[2,3,33,20] x, float[3,20,41] w,
       float16[45,19] h, float16[19,66] hw, float[50,24] ta, float[71,50] tb, float[71] tc)
      => (float[70,90] y, float[2,3,33,41] z, float16[45,66] hy, float[24,71] gy) {
      m = MatMul(a, b)  s = Add(m, c)  half = Constant <value = float {0.5}> ()
      sq = Constant <value = float {1.41421356}> ()  d = Div(s, sq)  e = Erf(d)
      one = Constant <value = float {1.0}> ()  p = Add(e, one)  q = Mul(s, p)  y = Mul(q, half)
      z = MatMul(x, w)
      hy = MatMul(h, hw)
      gy = Gemm <alpha = 0.5, beta = 2.0, transA = 1, transB = 1> (ta, tb, tc) })");
  graph::passes::run_pipeline(g);
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    in.push_back(runtime::random_tensor(v.dtype, v.shape, 60 + i, {}));
  }
  std::vector<Tensor> want = runtime::run_reference(g, in);
  fusion::Plan plan = fusion::plan_fused(g, codegen::kernel_lowerings());
  size_t most = 0, gemms = 0;
  for (const auto& grp : plan.groups)
    if (grp.kind == fusion::GroupKind::Gemm) {
      ++gemms;
      most = std::max(most, codegen::candidates(g, grp).size());
    }
  ASSERT_EQ(gemms, 4u);
  ASSERT_GE(most, 8u);
  for (size_t c = 0; c < most; ++c) {
    runtime::EmulatorOptions eo;
    eo.candidate = static_cast<int>(c);
    std::vector<Tensor> got = runtime::run_emulated(g, plan, in, eo);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(test::tensors_close(got[i], want[i]))
          << g.outputs()[i].name << " with candidate " << c;
  }
}

}  // namespace
}  // namespace braze
