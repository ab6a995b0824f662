// GELU recognition (graph/passes/gelu_fusion.h): the written-out forms exporters emit become
// one Gelu node computing the same values; near misses (other constants, intermediates used
// elsewhere, a broadcast that changes the shape) are left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "graph/passes/constant_fold.h"
#include "graph/passes/gelu_fusion.h"
#include "graph/passes/pipeline.h"
#include "tests/test_util.h"

namespace braze {
namespace {

std::string model(const std::string& type, const std::string& body,
                  const std::string& out_shape = "[5,7]") {
  return R"(<ir_version: 8, opset_import: ["" : 18]>
    g ()" +
         type + R"([5,7] x) => ()" + type + out_shape + R"( y) {
      s2 = Constant <value = float {1.4142135}> ()  r2 = Constant <value = float {0.70710677}> ()
      one = Constant <value = float {1}> ()  half = Constant <value = float {0.5}> ()
      c1 = Constant <value = float {0.7978846}> ()  c2 = Constant <value = float {0.044715}> ()
      three = Constant <value = float {3}> ()
      )" +
         body + " }";
}

// Op counts after the pipeline; the values against the graph's before it.
std::map<std::string, int> fused_ops(const std::string& text, double rtol = 1e-6) {
  graph::Graph g = test::graph_from_text(text);
  graph::Graph before = g;
  graph::passes::run_pipeline(g);
  const std::vector<Tensor> in = test::random_inputs(before, 3);
  const Tensor want = test::run(before, in)[0], got = test::run(g, in)[0];
  EXPECT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < want.numel() && i < got.numel(); ++i) {
    if (std::isnan(want.get_f64(i)) && std::isnan(got.get_f64(i))) continue;  // Pow(-x, 2.9)
    EXPECT_NEAR(got.get_f64(i), want.get_f64(i), rtol * std::fabs(want.get_f64(i)) + 1e-7) << i;
  }
  return graph::passes::op_counts(g);
}

const std::map<std::string, int> kOneGelu = {{"Gelu", 1}};

TEST(GeluFusion, TheExportedFormsBecomeOneGelu) {
  // torch.nn.GELU exported at opset < 20: (x * (erf(x / sqrt 2) + 1)) * 0.5.
  EXPECT_EQ(
      fused_ops(model(
          "float", "d = Div(x, s2)  e = Erf(d)  a = Add(e, one)  m = Mul(x, a)  y = Mul(m, half)")),
      kOneGelu);
  // BERT's gelu: x * 0.5 * (1 + erf(x * (1 / sqrt 2))), operands swapped.
  EXPECT_EQ(
      fused_ops(model(
          "float", "h = Mul(half, x)  d = Mul(r2, x)  e = Erf(d)  a = Add(one, e)  y = Mul(a, h)")),
      kOneGelu);
  // x * ((1 + erf) * 0.5).
  EXPECT_EQ(fused_ops(model(
                "float",
                "d = Div(x, s2)  e = Erf(d)  a = Add(e, one)  a2 = Mul(half, a)  y = Mul(a2, x)")),
            kOneGelu);
  // Two in a row, and float16 / bfloat16 with their constants rounded (1.4140625).
  EXPECT_EQ(
      fused_ops(model(
          "float", R"(d = Div(x, s2)  e = Erf(d)  a = Add(e, one)  m = Mul(x, a)  z = Mul(m, half)
                                        d2 = Div(z, s2)  e2 = Erf(d2)  a2 = Add(e2, one)  m2 = Mul(z, a2)  y = Mul(m2, half))")),
      (std::map<std::string, int>{{"Gelu", 2}}));
  for (const char* t : {"10", "16"}) {
    const std::string type = std::string(t) == "10" ? "float16" : "bfloat16";
    const std::string body = std::string("s2h = Cast <to = ") + t +
                             "> (s2)  oneh = Cast <to = " + t + "> (one)  halfh = Cast <to = " + t +
                             R"(> (half)
        d = Div(x, s2h)  e = Erf(d)  a = Add(e, oneh)  m = Mul(x, a)  y = Mul(m, halfh))";
    // The reference rounds each of the five ops to the half type, Gelu once.
    EXPECT_EQ(fused_ops(model(type, body), type == "float16" ? 4e-3 : 3e-2), kOneGelu) << type;
  }
}

TEST(GeluFusion, TheTanhFormBecomesOneGelu) {
  const std::map<std::string, int> tanh_gelu = {{"Gelu", 1}};
  // GPT-2's gelu as exported: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
  const std::string gpt2 =
      R"(h = Mul(half, x)  p = Pow(x, three)  q = Mul(c2, p)  s = Add(x, q)  t = Mul(c1, s)
                             th = Tanh(t)  a = Add(one, th)  y = Mul(h, a))";
  EXPECT_EQ(fused_ops(model("float", gpt2)), tanh_gelu);
  // The cube as two Muls, an integer exponent, the other product orders.
  EXPECT_EQ(
      fused_ops(model(
          "float", R"(xx = Mul(x, x)  p = Mul(xx, x)  q = Mul(p, c2)  s = Add(q, x)  t = Mul(s, c1)
                                         th = Tanh(t)  a = Add(th, one)  m = Mul(x, a)  y = Mul(m, half))")),
      tanh_gelu);
  EXPECT_EQ(fused_ops(model("float",
                            R"(i3 = Constant <value = int64 {3}> ()  p = Pow(x, i3)  q = Mul(c2, p)
                                         s = Add(x, q)  t = Mul(c1, s)  th = Tanh(t)  a = Add(one, th)
                                         a2 = Mul(a, half)  y = Mul(x, a2))")),
            tanh_gelu);
  graph::Graph g = test::graph_from_text(model("float", gpt2));
  graph::passes::run_pipeline(g);
  for (graph::NodeId id : g.topo_order())
    EXPECT_EQ(g.node(id).attr_string("approximate"), "tanh") << g.node(id).describe();
  // Another coefficient, another exponent: left alone.
  const std::map<std::string, int> eight = {{"Add", 2}, {"Mul", 4}, {"Pow", 1}, {"Tanh", 1}};
  EXPECT_EQ(
      fused_ops(model(
          "float", R"(k = Constant <value = float {0.0447}> ()  h = Mul(half, x)  p = Pow(x, three)
                                         q = Mul(k, p)  s = Add(x, q)  t = Mul(c1, s)  th = Tanh(t)  a = Add(one, th)
                                         y = Mul(h, a))")),
      eight);
  EXPECT_EQ(fused_ops(model(
                "float", R"(k = Constant <value = float {2.9}> ()  h = Mul(half, x)  p = Pow(x, k)
                                         q = Mul(c2, p)  s = Add(x, q)  t = Mul(c1, s)  th = Tanh(t)  a = Add(one, th)
                                         y = Mul(h, a))")),
            eight);
}

TEST(GeluFusion, NearMissesStayWrittenOut) {
  const std::map<std::string, int> five = {{"Add", 1}, {"Div", 1}, {"Erf", 1}, {"Mul", 2}};
  // Another divisor, another addend.
  EXPECT_EQ(fused_ops(model("float", R"(k = Constant <value = float {1.5}> ()
      d = Div(x, k)  e = Erf(d)  a = Add(e, one)  m = Mul(x, a)  y = Mul(m, half))")),
            five);
  EXPECT_EQ(fused_ops(model("float", R"(k = Constant <value = float {2}> ()
      d = Div(x, s2)  e = Erf(d)  a = Add(e, k)  m = Mul(x, a)  y = Mul(m, half))")),
            five);
  // The other factor is not x.
  EXPECT_EQ(
      fused_ops(model("float", R"(x2 = Neg(x)
      d = Div(x, s2)  e = Erf(d)  a = Add(e, one)  m = Mul(x2, a)  y = Mul(m, half))")),
      (std::map<std::string, int>{{"Add", 1}, {"Div", 1}, {"Erf", 1}, {"Mul", 2}, {"Neg", 1}}));
  // A one-element constant of rank 2 broadcasts [5,7] to [1,5,7]: not x's shape.
  EXPECT_EQ(fused_ops(model("float", R"(hb = Constant <value = float[1,1,1] {0.5}> ()
      d = Div(x, s2)  e = Erf(d)  a = Add(e, one)  m = Mul(x, a)  y = Mul(m, hb))",
                            "[1,5,7]")),
            five);
}

TEST(GeluFusion, IntermediatesUsedElsewhereStay) {
  // erf(x / sqrt 2) is a graph output too: nothing changes.
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[5,7] x) => (float[5,7] y, float[5,7] e) {
      s2 = Constant <value = float {1.4142135}> ()  one = Constant <value = float {1}> ()
      half = Constant <value = float {0.5}> ()
      d = Div(x, s2)  e = Erf(d)  a = Add(e, one)  m = Mul(x, a)  y = Mul(m, half) })");
  graph::passes::fold_constants(g);
  EXPECT_EQ(graph::passes::fuse_gelu(g), 0);
  // x * 0.5 feeds another node.
  graph::Graph h = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[5,7] x) => (float[5,7] y, float[5,7] w) {
      r2 = Constant <value = float {0.70710677}> ()  one = Constant <value = float {1}> ()
      half = Constant <value = float {0.5}> ()
      hx = Mul(x, half)  d = Mul(x, r2)  e = Erf(d)  a = Add(e, one)  y = Mul(hx, a)  w = Neg(hx) })");
  graph::passes::fold_constants(h);
  EXPECT_EQ(graph::passes::fuse_gelu(h), 0);
  // Without the other uses, the same graphs fuse (five and six nodes).
  graph::Graph k = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[5,7] x) => (float[5,7] y) {
      r2 = Constant <value = float {0.70710677}> ()  one = Constant <value = float {1}> ()
      half = Constant <value = float {0.5}> ()
      hx = Mul(x, half)  d = Mul(x, r2)  e = Erf(d)  a = Add(e, one)  y = Mul(hx, a) })");
  graph::passes::fold_constants(k);
  EXPECT_EQ(graph::passes::fuse_gelu(k), 5);
  graph::verify(k);
  EXPECT_EQ(graph::passes::op_counts(k), kOneGelu);
}

}  // namespace
}  // namespace braze
