// Softmax recognition (graph/passes/softmax_fusion.h): exp(x - max) / sum over one axis
// becomes one Softmax computing the same values; near misses are left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "graph/passes/pipeline.h"
#include "tests/test_util.h"

namespace braze {
namespace {

std::string model(const std::string& body) {
  return R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,5,7] x) => (float[4,5,7] y) {
      last = Constant <value = int64[1] {-1}> ()  mid = Constant <value = int64[1] {1}> ()
      )" +
         body + " }";
}

// Op counts after the pipeline; the values against the graph's before it.
std::map<std::string, int> fused_ops(const std::string& text) {
  graph::Graph g = test::graph_from_text(text);
  graph::Graph before = g;
  graph::passes::run_pipeline(g);
  const std::vector<Tensor> in = test::random_inputs(before, 5);
  const Tensor want = test::run(before, in)[0], got = test::run(g, in)[0];
  EXPECT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < want.numel() && i < got.numel(); ++i)
    EXPECT_NEAR(got.get_f64(i), want.get_f64(i), 1e-6 * std::fabs(want.get_f64(i)) + 1e-7) << i;
  return graph::passes::op_counts(g);
}

TEST(SoftmaxFusion, WrittenOutSoftmaxBecomesOne) {
  const std::map<std::string, int> one = {{"Softmax", 1}};
  EXPECT_EQ(fused_ops(model("m = ReduceMax <keepdims = 1> (x, last)  d = Sub(x, m)  e = Exp(d)  "
                            "s = ReduceSum <keepdims = 1> (e, last)  y = Div(e, s)")),
            one);
  // Over a middle axis, the division as a product with the reciprocal (either side).
  EXPECT_EQ(
      fused_ops(model("m = ReduceMax <keepdims = 1> (x, mid)  d = Sub(x, m)  e = Exp(d)  "
                      "s = ReduceSum <keepdims = 1> (e, mid)  r = Reciprocal(s)  y = Mul(r, e)")),
      one);
}

TEST(SoftmaxFusion, NearMissesStayAsTheyAre) {
  // The sum over another axis than the maximum.
  EXPECT_EQ(fused_ops(model("m = ReduceMax <keepdims = 1> (x, last)  d = Sub(x, m)  e = Exp(d)  "
                            "s = ReduceSum <keepdims = 1> (e, mid)  y = Div(e, s)"))
                .count("Softmax"),
            0u);
  // The exponentials read once more (y = e / s + e).
  EXPECT_EQ(fused_ops(model("m = ReduceMax <keepdims = 1> (x, last)  d = Sub(x, m)  e = Exp(d)  "
                            "s = ReduceSum <keepdims = 1> (e, last)  q = Div(e, s)  y = Add(q, e)"))
                .count("Softmax"),
            0u);
  // The maximum of something else than x.
  EXPECT_EQ(
      fused_ops(
          model("n = Neg(x)  m = ReduceMax <keepdims = 1> (n, last)  d = Sub(x, m)  e = Exp(d)  "
                "s = ReduceSum <keepdims = 1> (e, last)  y = Div(e, s)"))
          .count("Softmax"),
      0u);
}

}  // namespace
}  // namespace braze
