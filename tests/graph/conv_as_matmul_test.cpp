// conv_as_matmul (#19): 1x1 convolutions become MatMul between reshapes, which the GEMM
// schedules take. Each test checks what was rewritten and that the graph computes the same
// outputs before and after on random inputs (and on the GPU path's kernels in the emulator).
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

TEST(ConvAsMatmul, OneByOneConvolutionsBecomeMatMul) {
  for (bool bias : {true, false}) {
    for (Shape spatial : {Shape{7, 5}, Shape{9}, Shape{3, 2, 4}}) {
      Graph before = conv_graph(spatial, Shape(spatial.size(), 1), {}, bias);
      Graph after = before;
      EXPECT_EQ(graph::passes::conv_as_matmul(after), 1);
      graph::passes::run_pipeline(after);
      EXPECT_EQ(count(after, "Conv"), 0);
      EXPECT_EQ(count(after, "MatMul"), 1);
      expect_same_on_reference_and_emulator(before, after);
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

TEST(ConvAsMatmul, OtherConvolutionsStay) {
  const std::vector<std::pair<Shape, graph::Attributes>> cases = {
      {{3, 3}, {}},                                            // 3x3
      {{1, 1}, {{"strides", std::vector<int64_t>{2, 2}}}},     // stride 2
      {{1, 1}, {{"pads", std::vector<int64_t>{1, 0, 1, 0}}}},  // padded
      {{1, 1}, {{"group", int64_t{3}}}},                       // grouped
  };
  for (const auto& [kernel, attrs] : cases) {
    Graph g = conv_graph({6, 6}, kernel, attrs, true, 6, 6);
    EXPECT_EQ(graph::passes::conv_as_matmul(g), 0);
  }
}

}  // namespace
}  // namespace braze
