// The passes that leave a product's operands as layouts: split_to_slices,
// hoist_matmul_scales, flatten_matmul_rows, merge_gated_matmuls, merge_sibling_matmuls and
// store_weights_k_major. Each
// test checks the rewritten structure and that the graph computes the same outputs before and after
// on random inputs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "graph/column_pairs.h"
#include "graph/passes/matmul_scale.h"
#include "graph/passes/pipeline.h"
#include "graph/passes/split_to_slices.h"
#include "tests/test_util.h"

namespace braze {
namespace {

// GPT-2's attention block as the dynamo exporter writes it: the QKV projection split in
// three, Q and K each scaled by a scalar before Q Kᵀ.
const char* kGpt2Attention = R"(<ir_version: 8, opset_import: ["" : 18]>
  g (float[6,24] x) => (float[2,6,4] y) {
    sp = Constant <value = int64[3] {8, 8, 8}> ()
    q, k, v = Split <axis = 1> (x, sp)
    sh = Constant <value = int64[3] {6, 2, 4}> ()
    qr = Reshape(q, sh)  kr = Reshape(k, sh)  vr = Reshape(v, sh)
    qt = Transpose <perm = [1, 0, 2]> (qr)  kt = Transpose <perm = [1, 2, 0]> (kr)
    vt = Transpose <perm = [1, 0, 2]> (vr)
    c = Constant <value = float {0.5}> ()
    qs = Mul(qt, c)  ks = Mul(c, kt)
    s = MatMul(qs, ks)  p = Softmax <axis = -1> (s)  y = MatMul(p, vt) })";

TEST(OperandPasses, SplitBecomesOneSlicePerOutputAndScalesMoveAfterTheProduct) {
  graph::Graph before = test::graph_from_text(kGpt2Attention);
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  std::map<std::string, int> ops = graph::passes::op_counts(after);
  EXPECT_EQ(ops["Split"], 0);
  EXPECT_EQ(ops["Slice"], 3);
  // One Mul, after the product, by 0.5 * 0.5; the product reads the layouts directly.
  EXPECT_EQ(ops["Mul"], 1);
  for (size_t i = 0; i < after.num_nodes(); ++i) {
    const graph::Node& n = after.node(static_cast<graph::NodeId>(i));
    if (n.dead || n.op_type() != "Mul") continue;
    const graph::Node& mm = after.node(after.value(n.inputs[0]).producer);
    EXPECT_EQ(mm.op_type(), "MatMul");
    EXPECT_EQ(after.value(n.inputs[1]).constant->get_f64(0), 0.25);
    for (graph::ValueId in : mm.inputs)
      EXPECT_EQ(after.node(after.value(in).producer).op_type(), "Transpose");
  }
  test::expect_same_outputs(before, after, 5);
}

TEST(OperandPasses, GemmTakesTheScalesIntoAlphaAndDivDivides) {
  graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,6] a, float[5,6] b, float[5] c) => (float[4,5] y) {
      two = Constant <value = float {2}> ()  four = Constant <value = float {4}> ()
      as = Div(a, four)  bs = Mul(b, two)
      y = Gemm <alpha = 3.0, transB = 1> (as, bs, c) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  std::map<std::string, int> ops = graph::passes::op_counts(after);
  EXPECT_EQ(ops["Mul"] + ops["Div"], 0);
  for (size_t i = 0; i < after.num_nodes(); ++i) {
    const graph::Node& n = after.node(static_cast<graph::NodeId>(i));
    if (!n.dead && n.op_type() == "Gemm") {
      EXPECT_DOUBLE_EQ(n.attr_float("alpha"), 1.5);
    }
  }
  test::expect_same_outputs(before, after, 5);
}

// as has another use; bs is scaled by a vector, not a scalar.
TEST(OperandPasses, ScalesThatAreNotScalarsOrHaveOtherUsesStay) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,6] a, float[6,5] b) => (float[4,5] y, float[4,6] z) {
      v = Constant <value = float[5] {1, 2, 3, 4, 5}> ()  c = Constant <value = float {2}> ()
      as = Mul(a, c)  bs = Mul(b, v)  y = MatMul(as, bs)  z = Relu(as) })");
  graph::passes::run_pipeline(g);
  EXPECT_EQ(graph::passes::hoist_matmul_scales(g), 0);
  // A scalar times a vector that the product broadcasts is not a scale of the operand.
  graph::Graph h = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,1] a, float[1,5] b) => (float[4,5] y) {
      c = Constant <value = float {2}> ()  bs = Mul(b, c)  y = MatMul(a, bs) })");
  graph::Graph h2 = h;
  graph::passes::run_pipeline(h2);
  test::expect_same_outputs(h, h2, 5);
}

// A batched activation against one matrix: one product of all rows, between two Reshapes;
// an A that is a layout op's output stays batched (its view might not merge batch and rows).
TEST(OperandPasses, BatchedRowsAgainstOneMatrixBecomeOneProduct) {
  graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[3,5,8] x, float[8,6] w, float[5,3,8] z) => (float[3,5,6] y, float[3,5,6] u) {
      y = MatMul(x, w)  zt = Transpose <perm = [1, 0, 2]> (z)  u = MatMul(zt, w) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  int flat = 0, batched = 0;
  for (size_t i = 0; i < after.num_nodes(); ++i) {
    const graph::Node& n = after.node(static_cast<graph::NodeId>(i));
    if (n.dead || n.op_type() != "MatMul") continue;
    const Shape& s = after.value(n.inputs[0]).shape;
    if (s == Shape{15, 8}) ++flat;
    if (s.size() == 3) ++batched;
  }
  EXPECT_EQ(flat, 1);
  EXPECT_EQ(batched, 1);
  EXPECT_EQ(after.value(after.outputs()[0].value).shape, (Shape{3, 5, 6}));
  test::expect_same_outputs(before, after, 5);
}

TEST(OperandPasses, SplitOfAGraphOutputKeepsItsName) {
  graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[3,6] x) => (float[3,2] a, float[3,4] b) {
      sp = Constant <value = int64[2] {2, 4}> ()  a, b = Split <axis = -1> (x, sp) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  EXPECT_EQ(graph::passes::op_counts(after)["Slice"], 2);
  EXPECT_EQ(after.outputs()[0].name, "a");
  EXPECT_EQ(after.outputs()[1].name, "b");
  test::expect_same_outputs(before, after, 5);
}

// Q, K and V projections of one activation against constant weights, as the exporters write
// BERT's (each with a constant bias) and Llama's (no bias, read only by Reshapes).
std::string projections(bool bias, const char* k_tail) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3,4] x) => (float[2,3,2] y) {{
      wq = Constant <value = float[4,3] {{-0.524, 0.088, -0.260, 0.208, 0.251, -0.869, -0.974, 0.675, -0.481, -0.531, 0.991, -0.059}}> ()
      wk = Constant <value = float[4,3] {{0.673, -0.047, 0.278, -0.699, 0.270, 0.736, 0.046, 0.483, 0.343, -0.872, 0.516, 0.182}}> ()
      wv = Constant <value = float[4,2] {{-0.397, -0.938, 0.731, -0.055, 0.438, 0.758, 0.428, 0.842}}> ()
      bq = Constant <value = float[3] {{-0.210, 0.602, -0.111}}> ()  bk = Constant <value = float[3] {{0.871, 0.758, -0.805}}> ()
      bv = Constant <value = float[2] {{-0.728, -0.566}}> ()
      s3 = Constant <value = int64[3] {{2, 3, 3}}> ()  s2 = Constant <value = int64[3] {{2, 3, 2}}> ()
      mq = MatMul(x, wq)  mk = MatMul(x, wk)  mv = MatMul(x, wv)
      {}
      rq = Reshape(q, s3)  rk = Reshape(k, s3)  kt = Transpose <perm = [0, 2, 1]> (rk)  rv = Reshape(v, s2)
      s = MatMul(rq, kt)  y = MatMul(s, rv) }})",
                     bias ? std::string("q = Add(mq, bq)  k = Add(mk, bk)  v = Add(bv, mv)")
                          : fmt::format("q = Identity(mq)  k = {}  v = Identity(mv)", k_tail));
}

int count_op(const graph::Graph& g, const char* type) { return graph::passes::op_counts(g)[type]; }

// The projections after the pipeline: one product against the [4, 8] concatenated weights
// (with `adds` Adds: the biases as one) and the two attention products, the same outputs.
void expect_one_projection(const std::string& text, int adds) {
  graph::Graph before = test::graph_from_text(text);
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  EXPECT_EQ(count_op(after, "MatMul"), 3);
  EXPECT_EQ(count_op(after, "Add"), adds);
  EXPECT_EQ(count_op(after, "Slice"), 3);
  int merged = 0;
  for (size_t i = 0; i < after.num_nodes(); ++i) {
    const graph::Node& n = after.node(static_cast<graph::NodeId>(i));
    if (!n.dead && n.op_type() == "MatMul" && after.value(n.inputs[1]).constant) {
      EXPECT_EQ(after.value(n.inputs[1]).shape, (Shape{4, 8}));
      ++merged;
    }
  }
  EXPECT_EQ(merged, 1);
  test::expect_same_outputs(before, after, 5);
}

TEST(OperandPasses, SiblingProjectionsWithBiasesBecomeOneProduct) {
  expect_one_projection(projections(true, ""), 1);
}

TEST(OperandPasses, SiblingProjectionsReadByLayoutsOnlyBecomeOneProduct) {
  expect_one_projection(projections(false, "Identity(mk)"), 0);
}

// K's product feeds an element-wise op (which its own epilogue would take): no merge. Nor
// with a bias on Q only.
TEST(OperandPasses, SiblingsWithAnElementwiseConsumerStayApart) {
  for (const char* k_tail : {"Relu(mk)", "Add(mk, bk)"}) {
    graph::Graph g = test::graph_from_text(projections(false, k_tail));
    graph::passes::run_pipeline(g);
    EXPECT_EQ(count_op(g, "MatMul"), 5) << k_tail;
    EXPECT_EQ(count_op(g, "Slice"), 0) << k_tail;
  }
}

// Llama's MLP, gate and up [4, 3] each, SiLU written out; `extra` adds statements (and
// `outputs` graph outputs).
std::string gated_mlp(const char* extra = "", const char* outputs = "") {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3,4] x) => (float[2,3,2] y{1}) {{
      wg = Constant <value = float[4,3] {{-0.524, 0.088, -0.260, 0.208, 0.251, -0.869, -0.974, 0.675, -0.481, -0.531, 0.991, -0.059}}> ()
      wu = Constant <value = float[4,3] {{0.673, -0.047, 0.278, -0.699, 0.270, 0.736, 0.046, 0.483, 0.343, -0.872, 0.516, 0.182}}> ()
      wd = Constant <value = float[3,2] {{-0.397, -0.938, 0.731, -0.055, 0.438, 0.758}}> ()
      gt = MatMul(x, wg)  up = MatMul(x, wu)  sg = Sigmoid(gt)  si = Mul(gt, sg)  h = Mul(si, up)
      y = MatMul(h, wd) {0} }})",
                     extra, outputs);
}

// The gate and up products become one against their weights interleaved column by column,
// [4, 6], and the Slices of its even and odd columns; the same outputs.
TEST(OperandPasses, GatedSiblingsBecomeOneInterleavedProduct) {
  graph::Graph before = test::graph_from_text(gated_mlp());
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  EXPECT_EQ(count_op(after, "MatMul"), 2);
  EXPECT_EQ(count_op(after, "Slice"), 2);
  int pairs = 0, merged = 0;
  for (size_t i = 0; i < after.num_nodes(); ++i) {
    const graph::Node& n = after.node(static_cast<graph::NodeId>(i));
    if (n.dead) continue;
    pairs += graph::column_pair_parity(after, n) >= 0;
    if (n.op_type() != "MatMul" || after.value(n.inputs[1]).shape != Shape{4, 6}) continue;
    ++merged;
    const Tensor& w = *after.value(n.inputs[1]).constant;
    EXPECT_FLOAT_EQ(static_cast<float>(w.get_f64(0)), -0.524f);  // gate column 0
    EXPECT_FLOAT_EQ(static_cast<float>(w.get_f64(1)), 0.673f);   // up column 0
    EXPECT_FLOAT_EQ(static_cast<float>(w.get_f64(2)), 0.088f);   // gate column 1
    EXPECT_FLOAT_EQ(static_cast<float>(w.get_f64(7)), -0.699f);  // up column 0, row 1
  }
  EXPECT_EQ(pairs, 2);
  EXPECT_EQ(merged, 1);
  test::expect_same_outputs(before, after, 5);
}

// One product of the fused gate and up [4, 6], chunked in two by a Split (Phi-3): its weight's
// columns are interleaved in place, (0, 3), (1, 4), (2, 5), and the halves read as a column
// pair; the same outputs.
TEST(OperandPasses, ChunkedGateAndUpBecomeAColumnPair) {
  graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3,4] x) => (float[2,3,2] y) {
      w = Constant <value = float[4,6] {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25, 30, 31, 32, 33, 34, 35}> ()
      wd = Constant <value = float[3,2] {-0.397, -0.938, 0.731, -0.055, 0.438, 0.758}> ()
      gu = MatMul(x, w)  sp = Constant <value = int64[2] {3, 3}> ()  gt, up = Split <axis = -1> (gu, sp)
      sg = Sigmoid(gt)  si = Mul(gt, sg)  h = Mul(si, up)  y = MatMul(h, wd) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  EXPECT_EQ(count_op(after, "MatMul"), 2);
  EXPECT_EQ(count_op(after, "Slice"), 2);
  int pairs = 0, permuted = 0;
  for (size_t i = 0; i < after.num_nodes(); ++i) {
    const graph::Node& n = after.node(static_cast<graph::NodeId>(i));
    if (n.dead) continue;
    pairs += graph::column_pair_parity(after, n) >= 0;
    if (n.op_type() != "MatMul" || after.value(n.inputs[1]).shape != Shape{4, 6}) continue;
    ++permuted;
    const Tensor& w = *after.value(n.inputs[1]).constant;
    const std::vector<double> row1 = {10, 13, 11, 14, 12, 15};
    for (int c = 0; c < 6; ++c) EXPECT_EQ(w.get_f64(6 + c), row1[static_cast<size_t>(c)]) << c;
  }
  EXPECT_EQ(pairs, 2);
  EXPECT_EQ(permuted, 1);
  test::expect_same_outputs(before, after, 5);
}

// Where a sibling's output is read by more than the gated expression (a second graph output),
// or the two outputs never meet, they stay two products.
TEST(OperandPasses, GatedSiblingsReadElsewhereStayApart) {
  for (const auto& [extra, outputs] : {std::pair{"u2 = Relu(up)", ", float[2,3,3] u2"},
                                       std::pair{"z = Relu(gt)", ", float[2,3,3] z"}}) {
    graph::Graph g = test::graph_from_text(gated_mlp(extra, outputs));
    graph::passes::run_pipeline(g);
    EXPECT_EQ(count_op(g, "MatMul"), 3) << extra;
    EXPECT_EQ(count_op(g, "Slice"), 0) << extra;
  }
}

// A [8, n] weight of `type` read by a MatMul of x and by `product` (of x2), whose output is
// [y2_shape, n]; values of a few bits, exact in every type.
std::string half_weight_product(const char* type, int n, const char* product,
                                const char* y2_shape = "3") {
  std::string vals;
  for (int i = 0; i < 8 * n; ++i)
    vals += fmt::format("{}{}", i ? ", " : "", ((i * 7) % 11 - 5) * 0.125);
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g ({0}[2,3,8] x, {0}[3,8] x2) => ({0}[2,3,{1}] y, {0}[{4},{1}] y2) {{
      wf = Constant <value = float[8,{1}] {{{2}}}> ()  w = Cast <to = {5}> (wf)
      y = MatMul(x, w)  y2 = {3} }})",
                     type, n, vals, product, y2_shape,
                     std::string(type) == "float16"    ? 10
                     : std::string(type) == "bfloat16" ? 16
                                                       : 1);
}

// The Transposes store_weights_k_major leaves (the ones of a constant, perm 1 0), each the B
// of a MatMul, and the shapes of their constants.
std::vector<Shape> k_major_weights(const graph::Graph& g) {
  std::vector<Shape> out;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const graph::Node& n = g.node(static_cast<graph::NodeId>(i));
    if (n.dead || n.op_type() != "MatMul" || g.value(n.inputs[1]).producer == graph::kNoNode)
      continue;
    const graph::Node& t = g.node(g.value(n.inputs[1]).producer);
    if (t.op_type() == "Transpose" && g.value(t.inputs[0]).constant)
      out.push_back(g.value(t.inputs[0]).shape);
  }
  return out;
}

// Half-precision weights of MatMuls are stored [n, k] behind a Transpose that constant
// folding leaves (the pipeline runs to a fixed point, folding each round); a Gemm's B is
// transposed with transB set.
TEST(OperandPasses, HalfWeightsAreStoredKMajor) {
  for (const char* type : {"float16", "bfloat16"}) {
    graph::Graph before = test::graph_from_text(half_weight_product(type, 5, "Gemm(x2, w)"));
    graph::Graph after = before;
    graph::passes::PipelineReport rep = graph::passes::run_pipeline(after);
    EXPECT_EQ(k_major_weights(after), (std::vector<Shape>{{5, 8}})) << type;
    // Converged: constant folding in the rounds after it does not undo the layout.
    EXPECT_LT(rep.rounds, graph::passes::PipelineOptions{}.max_rounds) << type;
    int gemms = 0;
    for (size_t i = 0; i < after.num_nodes(); ++i) {
      const graph::Node& n = after.node(static_cast<graph::NodeId>(i));
      if (n.dead || n.op_type() != "Gemm") continue;
      ++gemms;
      EXPECT_EQ(n.attr_int("transB"), 1) << type;
      EXPECT_EQ(after.value(n.inputs[1]).shape, (Shape{5, 8})) << type;
    }
    EXPECT_EQ(gemms, 1) << type;
    test::expect_same_outputs(before, after, 5);
  }
}

// A weight of whole 8 x 8 blocks and 5 columns past them (the transpose's two paths) reads
// the same values k-major.
TEST(OperandPasses, KMajorWeightsKeepEveryValue) {
  graph::Graph before = test::graph_from_text(half_weight_product("float16", 21, "MatMul(x2, w)"));
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  EXPECT_EQ(k_major_weights(after), (std::vector<Shape>{{21, 8}, {21, 8}}));
  test::expect_same_outputs(before, after, 5);
}

// Float32 weights stay [k, n] (the SIMT schedule reads rows of n); so does a weight whose k
// is not a multiple of 8, and one that is also read by something other than a product.
TEST(OperandPasses, OtherWeightsStayAsTheyAre) {
  graph::Graph f32 = test::graph_from_text(half_weight_product("float", 5, "Gemm(x2, w)"));
  graph::passes::run_pipeline(f32);
  EXPECT_TRUE(k_major_weights(f32).empty());
  graph::Graph odd_k = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[3,6] x) => (float16[3,2] y) {
      wf = Constant <value = float[6,2] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}> ()  w = Cast <to = 10> (wf)
      y = MatMul(x, w) })");
  graph::passes::run_pipeline(odd_k);
  EXPECT_TRUE(k_major_weights(odd_k).empty());
  // A weight read by two MatMuls is transposed once, behind one Transpose.
  graph::Graph tied = test::graph_from_text(half_weight_product("float16", 4, "MatMul(x2, w)"));
  graph::Graph tied_before = tied;
  graph::passes::run_pipeline(tied);
  EXPECT_EQ(k_major_weights(tied), (std::vector<Shape>{{4, 8}, {4, 8}}));
  EXPECT_EQ(count_op(tied, "Transpose"), 1);
  test::expect_same_outputs(tied_before, tied, 5);
  // A weight the pass transposes for one product stays [k, n] for its other reader.
  graph::Graph shared = test::graph_from_text(half_weight_product("float16", 3, "Relu(w)", "8"));
  graph::passes::run_pipeline(shared);
  EXPECT_EQ(k_major_weights(shared), (std::vector<Shape>{{3, 8}}));
}

}  // namespace
}  // namespace braze
