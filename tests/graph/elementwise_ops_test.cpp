// Element-wise ops beyond what the ONNX node tests cover: newer opsets and edge values.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/test_util.h"

namespace braze {
namespace {

TEST(ElementwiseOps, GeluOpset20BothForms) {
  for (const char* approx : {"none", "tanh"}) {
    graph::Graph g = test::graph_from_text(std::string(R"(
      <ir_version: 9, opset_import: ["" : 20]>
      g (float[5] x) => (float[5] y) { y = Gelu <approximate = ")") +
                                           approx + R"("> (x) })");
    Tensor x = test::floats({5}, {-3.f, -0.5f, 0.f, 0.7f, 2.5f});
    Tensor y = test::run(g, {x})[0];
    for (int64_t i = 0; i < 5; ++i) {
      double v = x.get_f64(i);
      double want =
          std::string(approx) == "none"
              ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
              : 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      EXPECT_NEAR(y.get_f64(i), want, 1e-6) << approx << " at " << v;
    }
  }
}

TEST(ElementwiseOps, ClipOpset6AttributesBecomeInputs) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 7, opset_import: ["" : 7]>
    g (float[4] x) => (float[4] y) { y = Clip <min = -0.5, max = 0.5> (x) })");
  Tensor y = test::run(g, {test::floats({4}, {-2.f, -0.25f, 0.25f, 2.f})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({4}, {-0.5f, -0.25f, 0.25f, 0.5f})));
}

TEST(ElementwiseOps, IntegerDivisionByZeroIsNotATrap) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (int64[3] a, int64[3] b) => (int64[3] y) { y = Div(a, b) })");
  Tensor y = test::run(g, {test::int64s({3}, {7, INT64_MIN, 5}), test::int64s({3}, {0, -1, 2})})[0];
  EXPECT_EQ(y.get_i64(0), 0);
  EXPECT_EQ(y.get_i64(1), INT64_MIN);  // wraps as two's complement
  EXPECT_EQ(y.get_i64(2), 2);
}

TEST(ElementwiseOps, BroadcastMismatchNamesTheNode) {
  try {
    test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 14]>
      g (float[2,3] a, float[4] b) => (float[2,3] y) { y = Add(a, b) })");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("Add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2,3] and [4]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braze
