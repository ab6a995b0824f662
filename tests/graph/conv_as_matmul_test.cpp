// conv_as_matmul (#19): 1x1 convolutions become MatMul between reshapes and other ungrouped ones
// MatMul of Im2Col's columns, which the GEMM schedules take. Each test checks what was rewritten
// and that the graph computes the same outputs before and after on random inputs (and on the GPU
// path's kernels in the emulator).
#include "graph/passes/conv_as_matmul.h"

#include <gtest/gtest.h>

#include "codegen/codegen.h"
#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/op_context.h"
#include "graph/passes/pipeline.h"
#include "graph/registry.h"
#include "runtime/emulator.h"
#include "tests/test_util.h"

namespace braze {
namespace {

using graph::Graph;
using graph::ValueId;

// x [2, cin, spatial...] -> Conv (cout channels, kernel, stride, pads, group) -> out.
Graph conv_graph(Shape spatial, Shape kernel, graph::Attributes attrs, bool bias = true,
                 int64_t cin = 6, int64_t cout = 5) {
  Graph g;
  Shape xs = {2, cin};
  xs.insert(xs.end(), spatial.begin(), spatial.end());
  ValueId x = g.add_value("x", DType::Float32, xs);
  g.add_input(x);
  const int64_t group = attrs.count("group") ? std::get<int64_t>(attrs["group"]) : 1;
  Shape ws = {cout, cin / group};
  ws.insert(ws.end(), kernel.begin(), kernel.end());
  std::vector<ValueId> ins = {x, g.add_constant("w", test::random(DType::Float32, ws, 3))};
  if (bias) ins.push_back(g.add_constant("b", test::random(DType::Float32, {cout}, 4)));
  ValueId y = g.add_value("y", DType::Float32, {});
  graph::infer_node(g, g.add_node(&graph::op("Conv"), "conv", ins, {y}, attrs, 18));
  g.add_output(y, "y");
  return g;
}

// The reference as before the pass, and the GPU path's kernels (in the CPU emulator) as the
// reference.
void expect_same_on_reference_and_emulator(const Graph& before, const Graph& after) {
  test::expect_same_outputs(before, after, 7);
  std::vector<Tensor> in = test::random_inputs(before, 7);
  std::vector<Tensor> a = test::run(before, in);
  std::vector<Tensor> e =
      runtime::run_emulated(after, fusion::plan_fused(after, codegen::kernel_lowerings()), in);
  ASSERT_EQ(e.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(test::tensors_close(e[i], a[i])) << "emulated output " << i;
}

int count(const Graph& g, const char* op) { return graph::passes::op_counts(g)[op]; }

// `before`'s one convolution (op) rewritten at any size, then the pipeline: no `op` left, one
// product (reading `columns` Im2Col), the same outputs on the reference and on the emulated
// kernels.
void expect_one_product(const Graph& before, const char* op, int columns) {
  Graph after = before;
  EXPECT_EQ(graph::passes::conv_as_matmul(after, 0), 1);
  graph::passes::run_pipeline(after);
  EXPECT_EQ(count(after, op), 0);
  EXPECT_EQ(count(after, "MatMul"), 1);
  EXPECT_EQ(count(after, "Im2Col"), columns);
  expect_same_on_reference_and_emulator(before, after);
}

TEST(ConvAsMatmul, OneByOneConvolutionsBecomeMatMul) {
  for (bool bias : {true, false}) {
    for (Shape spatial : {Shape{7, 5}, Shape{9}, Shape{3, 2, 4}}) {
      expect_one_product(conv_graph(spatial, Shape(spatial.size(), 1), {}, bias), "Conv", 0);
    }
  }
}

TEST(ConvAsMatmul, ABatchNormFoldsFirstAndTheResultIsOneGemmKernel) {
  Graph before = conv_graph({6, 6}, {1, 1}, {});
  ValueId y = before.outputs()[0].value;
  std::vector<ValueId> ins = {y};
  for (int k = 0; k < 4; ++k) {
    Tensor t = test::random(DType::Float32, {5}, 10 + k);
    if (k == 3)
      for (int64_t i = 0; i < 5; ++i) t.set_f64(i, std::abs(t.get_f64(i)) + 0.5);
    ins.push_back(before.add_constant("bn" + std::to_string(k), t));
  }
  ValueId z = before.add_value("z", DType::Float32, {});
  graph::infer_node(before,
                    before.add_node(&graph::op("BatchNormalization"), "bn", ins, {z}, {}, 15));
  before.set_output_value(0, z);
  Graph after = before;
  graph::passes::run_pipeline(after);
  EXPECT_EQ(count(after, "BatchNormalization") + count(after, "Conv"), 0);
  fusion::Plan plan = fusion::plan_fused(after, codegen::kernel_lowerings());
  int gemms = 0;
  for (const fusion::Group& gr : plan.groups) gemms += gr.kind == fusion::GroupKind::Gemm;
  EXPECT_EQ(gemms, 1);
  expect_same_on_reference_and_emulator(before, after);
}

// Every other kernel, stride, dilation and padding: Im2Col's columns times W, the same outputs
// on the reference and on the emulated kernels.
TEST(ConvAsMatmul, WindowedConvolutionsBecomeIm2ColAndMatMul) {
  using Ints = std::vector<int64_t>;
  struct Case {
    Shape spatial, kernel;
    graph::Attributes attrs;
  };
  const std::vector<Case> cases = {
      {{7, 6}, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}}},
      {{9, 8}, {3, 3}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}},
      {{7, 7}, {1, 1}, {{"strides", Ints{2, 2}}}},  // a strided 1x1
      {{6, 6}, {1, 1}, {{"pads", Ints{1, 0, 1, 0}}}},
      {{9, 7}, {3, 2}, {{"dilations", Ints{2, 3}}, {"pads", Ints{2, 0, 1, 3}}}},
      {{8, 5}, {2, 2}, {{"strides", Ints{3, 3}}}},  // stride larger than the kernel
      {{7, 6}, {3, 3}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 1}}}},
      {{11}, {5}, {{"pads", Ints{2, 1}}, {"strides", Ints{2}}}},   // 1-D
      {{5, 4, 3}, {3, 2, 2}, {{"pads", Ints{1, 0, 1, 1, 1, 0}}}},  // 3-D
      {{8, 8}, {8, 8}, {}},                                        // the whole image
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.spatial) + " kernel " +
                 ::testing::PrintToString(c.kernel));
    expect_one_product(conv_graph(c.spatial, c.kernel, c.attrs), "Conv", 1);
  }
}

// Below kMinColumnsFlops a windowed convolution stays one loop (kept fused with its neighbours);
// above it, the product. The plain 1x1 is a product at any size.
TEST(ConvAsMatmul, SmallWindowedConvolutionsStayLoops) {
  using Ints = std::vector<int64_t>;
  Graph small = conv_graph({7, 6}, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}});
  EXPECT_EQ(graph::passes::conv_as_matmul(small), 0);
  Graph large = conv_graph({32, 32}, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}}, true, 64, 64);
  EXPECT_EQ(graph::passes::conv_as_matmul(large), 1);  // 2·2·64·576·1024 = 151 MFLOP
  Graph pointwise = conv_graph({7, 6}, {1, 1}, {});
  EXPECT_EQ(graph::passes::conv_as_matmul(pointwise), 1);
}

// An empty batch: the product is broadcast over no images and computes nothing (its batch
// count was once taken as the larger of W's 1 and X's 0, and the emulated kernel wrote one
// image past an empty buffer).
TEST(ConvAsMatmul, AnEmptyBatchComputesNothing) {
  const Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[0,2,5,5] x) => (float[0,3,5,5] y) <float[3,2,3,3] w = {
      1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9,
      1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9}> {
      y = Conv <pads = [1, 1, 1, 1]> (x, w) })");
  Graph after = before;
  EXPECT_EQ(graph::passes::conv_as_matmul(after, 0), 1);
  graph::passes::run_pipeline(after);
  const std::vector<Tensor> e =
      runtime::run_emulated(after, fusion::plan_fused(after, codegen::kernel_lowerings()),
                            test::random_inputs(before, 7));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].shape(), (Shape{0, 3, 5, 5}));
}

// A ConvTranspose is the same product over Im2Col's transposed taps (zero where a tap falls
// between the input's strided positions) and W transposed to [M, C·K].
TEST(ConvAsMatmul, ConvTransposeBecomesIm2ColAndMatMul) {
  using Ints = std::vector<int64_t>;
  const std::vector<std::pair<Shape, graph::Attributes>> cases = {
      {{3, 3}, {{"strides", Ints{2, 2}}}},
      {{3, 3},
       {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}}},
      {{2, 3}, {{"strides", Ints{3, 2}}, {"dilations", Ints{2, 1}}, {"pads", Ints{0, 1, 2, 0}}}},
      {{4, 4}, {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}},
      {{3, 3}, {{"strides", Ints{2, 2}}, {"output_shape", Ints{14, 12}}}},  // grows at the end
      {{1, 1}, {}},
  };
  for (bool bias : {true, false})
    for (const auto& [kernel, attrs] : cases) {
      SCOPED_TRACE(::testing::PrintToString(kernel));
      Graph before;
      const ValueId x = before.add_value("x", DType::Float32, {2, 6, 7, 6});
      before.add_input(x);
      Shape ws = {6, 5};
      ws.insert(ws.end(), kernel.begin(), kernel.end());
      std::vector<ValueId> ins = {x, before.add_constant("w", test::random(DType::Float32, ws, 3))};
      if (bias) ins.push_back(before.add_constant("b", test::random(DType::Float32, {5}, 4)));
      const ValueId y = before.add_value("y", DType::Float32, {});
      graph::infer_node(before,
                        before.add_node(&graph::op("ConvTranspose"), "ct", ins, {y}, attrs, 18));
      before.add_output(y, "y");
      expect_one_product(before, "ConvTranspose", 1);
    }
}

// Groups at least 32 deep (input channels x taps) and 16 wide become one product per group;
// depthwise and other thin groups stay loops.
TEST(ConvAsMatmul, DeepGroupsBecomeOneProductPerGroup) {
  using Ints = std::vector<int64_t>;
  struct Case {
    Shape kernel;
    graph::Attributes attrs;
    int64_t cin, cout;
  };
  const std::vector<Case> cases = {
      {{3, 3}, {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}}, 8, 32},
      {{3, 3}, {{"group", int64_t{4}}, {"strides", Ints{2, 2}}}, 16, 64},
      {{1, 1}, {{"group", int64_t{2}}}, 64, 32},  // 1x1: the pixels as they are, per group
  };
  for (const Case& c : cases) {
    expect_one_product(conv_graph({7, 6}, c.kernel, c.attrs, true, c.cin, c.cout), "Conv",
                       c.kernel == Shape{1, 1} ? 0 : 1);
  }
  for (int64_t group : {3, 6}) {  // 2 or 1 input channels a group: thin, and depthwise
    Graph g = conv_graph({6, 6}, {3, 3}, {{"group", group}}, true, 6, 6);
    EXPECT_EQ(graph::passes::conv_as_matmul(g, 0), 0);
  }
}

}  // namespace
}  // namespace braze
