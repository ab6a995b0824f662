// MatMul, Gemm and Einsum beyond what the ONNX node tests cover: 1-D operands, broadcast
// batch dims, Gemm without C, general einsum equations, and the errors for bad shapes.
// Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace braze {
namespace {

TEST(MatrixOps, MatMulBroadcastsBatchDims) {
  // A [2,1,1,2] (batch [2,1]) times B [3,2,1] (batch [3]) -> [2,3,1,1]:
  // out[i][j] = A_i . B_j with A_0 = (1,2), A_1 = (3,4), B_0 = (1,0), B_1 = (0,1), B_2 = (1,1).
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,1,1,2] a, float[3,2,1] b) => (float[2,3,1,1] y) { y = MatMul(a, b) })");
  Tensor y = test::run(g, {test::floats({2, 1, 1, 2}, {1, 2, 3, 4}),
                           test::floats({3, 2, 1}, {1, 0, 0, 1, 1, 1})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({2, 3, 1, 1}, {1, 2, 3, 3, 4, 7})));
}

TEST(MatrixOps, MatMulBatchShapeIsTheBroadcastOfBothBatches) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[7,1,2,3] a, float[1,4,3,5] b) => (float[7,4,2,5] y) { y = MatMul(a, b) })");
  Tensor y = test::run(g, {test::random(DType::Float32, {7, 1, 2, 3}),
                           test::random(DType::Float32, {1, 4, 3, 5}, 2)})[0];
  EXPECT_EQ(y.shape(), (Shape{7, 4, 2, 5}));
}

TEST(MatrixOps, MatMulOneDimensionalOperands) {
  // [3] . [3] -> scalar: 1*4 + 2*5 + 3*6 = 32.
  graph::Graph dot = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] a, float[3] b) => (float y) { y = MatMul(a, b) })");
  Tensor y = test::run(dot, {test::floats({3}, {1, 2, 3}), test::floats({3}, {4, 5, 6})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({}, {32})));

  // [3] times B [2,3,2]: a row vector against each matrix, the added dim dropped -> [2,2].
  // (1,2,3) x [[1,0],[0,1],[1,1]] = (4,5); (1,2,3) x all-ones = (6,6).
  graph::Graph vm = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] a, float[2,3,2] b) => (float[2,2] y) { y = MatMul(a, b) })");
  y = test::run(vm, {test::floats({3}, {1, 2, 3}),
                     test::floats({2, 3, 2}, {1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({2, 2}, {4, 5, 6, 6})));

  // A [2,3] times [3] -> [2]: (1,2,3).(1,0,1) = 4, (4,5,6).(1,0,1) = 10.
  graph::Graph mv = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] a, float[3] b) => (float[2] y) { y = MatMul(a, b) })");
  y = test::run(mv, {test::floats({2, 3}, {1, 2, 3, 4, 5, 6}), test::floats({3}, {1, 0, 1})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({2}, {4, 10})));
}

TEST(MatrixOps, MatMulIntegersWrapInsteadOfOverflowing) {
  // 2^62 * 2 + 2^62 * 2 = 2^64, which wraps to 0 in int64.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64[1,2] a, int64[2,1] b) => (int64[1,1] y) { y = MatMul(a, b) })");
  int64_t big = int64_t{1} << 62;
  Tensor y = test::run(g, {test::int64s({1, 2}, {big, big}), test::int64s({2, 1}, {2, 2})})[0];
  EXPECT_EQ(y.get_i64(0), 0);
}

TEST(MatrixOps, MatMulMismatchedInnerDimsIsAUserError) {
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] a, float[4,5] b) => (float[2,5] y) { y = MatMul(a, b) })",
                            {"MatMul", "[2,3]", "[4,5]", "inner dimensions"});
}

TEST(MatrixOps, MatMulUnbroadcastableBatchIsAUserError) {
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2,3] a, float[3,3,4] b) => (float[2,2,4] y) { y = MatMul(a, b) })",
                            {"MatMul", "[2,2,3]", "[3,3,4]", "batch"});
}

TEST(MatrixOps, GemmWithoutC) {
  // alpha * A * B^T with A = [[1,2,3],[4,5,6]], B = [[1,0,1],[0,1,0]]:
  // A B^T = [[1+3, 2], [4+6, 5]] = [[4,2],[10,5]]; times alpha = 2.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] a, float[2,3] b) => (float[2,2] y) { y = Gemm <alpha = 2.0, transB = 1> (a, b) })");
  Tensor y = test::run(
      g, {test::floats({2, 3}, {1, 2, 3, 4, 5, 6}), test::floats({2, 3}, {1, 0, 1, 0, 1, 0})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({2, 2}, {8, 4, 20, 10})));
}

TEST(MatrixOps, GemmTransposedAWithColumnBias) {
  // A^T with A = [[1,2],[3,4]] (A^T = [[1,3],[2,4]]) times I, plus beta * C with C [2,1]
  // = (10, 20) broadcast across columns and beta = 0.5: [[1+5, 3+5], [2+10, 4+10]].
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2] a, float[2,2] b, float[2,1] c) => (float[2,2] y) {
      y = Gemm <beta = 0.5, transA = 1> (a, b, c)
    })");
  Tensor y = test::run(g, {test::floats({2, 2}, {1, 2, 3, 4}), test::floats({2, 2}, {1, 0, 0, 1}),
                           test::floats({2, 1}, {10, 20})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({2, 2}, {6, 8, 12, 14})));
}

TEST(MatrixOps, GemmBeforeOpset11RequiresC) {
  test::expect_import_error(R"(
    <ir_version: 7, opset_import: ["" : 9]>
    g (float[2,3] a, float[3,2] b) => (float[2,2] y) { y = Gemm(a, b) })",
                            {"Gemm", "C is required"});
}

TEST(MatrixOps, GemmBiasThatDoesNotBroadcastIsAUserError) {
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] a, float[3,4] b, float[3] c) => (float[2,4] y) { y = Gemm(a, b, c) })",
                            {"Gemm", "[3]", "[2,4]"});
}

TEST(MatrixOps, EinsumTraceDiagonalAndImplicitOutput) {
  // X = [[1,2],[3,4]]: trace "ii" (implicit: no index appears once) = 5; diagonal "ii->i" =
  // (1,4); implicit "ji" sorts the output indices to "ij", so it transposes.
  Tensor x = test::floats({2, 2}, {1, 2, 3, 4});
  auto einsum = [&](const std::string& eq, const std::string& out_type) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 12]>
      g (float[2,2] x) => ()" + out_type + R"( y) { y = Einsum <equation = ")" +
                                           eq + R"("> (x) })");
    return test::run(g, {x})[0];
  };
  EXPECT_TRUE(test::tensors_close(einsum("ii", "float"), test::floats({}, {5})));
  EXPECT_TRUE(test::tensors_close(einsum("ii->i", "float[2]"), test::floats({2}, {1, 4})));
  EXPECT_TRUE(test::tensors_close(einsum("ji", "float[2,2]"), test::floats({2, 2}, {1, 3, 2, 4})));
}

TEST(MatrixOps, EinsumEllipsisBroadcastsBatchDims) {
  // "...i,...i->..." is a row-wise dot product; the second operand's batch dim of 1 broadcasts:
  // rows (1,2) and (3,4) against (1,1) -> (3, 7).
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (float[2,2] a, float[1,2] b) => (float[2] y) { y = Einsum <equation = "...i,...i->..."> (a, b) })");
  Tensor y = test::run(g, {test::floats({2, 2}, {1, 2, 3, 4}), test::floats({1, 2}, {1, 1})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({2}, {3, 7})));
}

TEST(MatrixOps, EinsumThreeOperands) {
  // sum_j sum_k a_i b_j c_k = a_i * (sum b) * (sum c): a = (1,2), sum b = 3, sum c = 4.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (float[2] a, float[2] b, float[3] c) => (float[2] y) { y = Einsum <equation = "i,j,k->i"> (a, b, c) })");
  Tensor y = test::run(
      g, {test::floats({2}, {1, 2}), test::floats({2}, {1, 2}), test::floats({3}, {1, 1, 2})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({2}, {12, 24})));
}

TEST(MatrixOps, EinsumBadEquationsAreUserErrors) {
  auto model = [](const std::string& eq) {
    return R"(
      <ir_version: 8, opset_import: ["" : 12]>
      g (float[2,3] a, float[3,4] b) => (float[2,4] y) { y = Einsum <equation = ")" +
           eq + R"("> (a, b) })";
  };
  test::expect_import_error(model("ij,jk->iz"), {"Einsum", "'z'"});
  test::expect_import_error(model("ij->ij"), {"Einsum", "2 inputs"});
  test::expect_import_error(model("ij,jk->ii"), {"Einsum", "more than once"});
  test::expect_import_error(model("ik,jk->ij"), {"Einsum", "size 3", "4"});  // k is 3 in a, 4 in b
  test::expect_import_error(model("i..j,jk"), {"Einsum", "'...'"});
  test::expect_import_error(model("ijk,jk"), {"Einsum", "does not fit input 0"});
}

}  // namespace
}  // namespace braze
