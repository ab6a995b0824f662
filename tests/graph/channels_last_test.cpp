// Channels-last plans (#19): conv_as_matmul's ungrouped 2-D and 3-D convolutions run
// channels-last between Transposes, sink_transposes moves those down through element-wise ops
// and cancels inverse pairs, and the partitioner puts the Transposes left in front of a loop op
// (pooling, a depthwise convolution) or a reduction into that op's kernel. Each test checks the
// plan and the outputs (the reference before the passes against the reference after them and
// against the GPU path's kernels in the CPU emulator, on random inputs).
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/codegen.h"
#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/op_context.h"
#include "graph/passes/conv_as_matmul.h"
#include "graph/passes/depthwise_weights.h"
#include "graph/passes/pipeline.h"
#include "graph/passes/sink_transposes.h"
#include "graph/registry.h"
#include "runtime/emulator.h"
#include "tests/test_util.h"

namespace braze {
namespace {

using graph::Graph;
using graph::ValueId;
using Ints = std::vector<int64_t>;

// Builds a graph op by op, constants random.
struct Builder {
  Graph g;
  uint64_t seed = 20;

  ValueId input(const Shape& s) {
    ValueId x = g.add_value("x", DType::Float32, s);
    g.add_input(x);
    return x;
  }
  ValueId constant(const Shape& s) {
    return g.add_constant(g.unique_name("c"), test::random(DType::Float32, s, ++seed));
  }
  ValueId op(const char* type, std::vector<ValueId> ins, graph::Attributes attrs = {}) {
    ValueId y = g.add_value(g.unique_name(std::string(type) + "_y"), DType::Float32, {});
    graph::infer_node(
        g, g.add_node(&graph::op(type), g.unique_name(type), std::move(ins), {y}, attrs, 18));
    return y;
  }
  // Conv of x to `cout` channels, square kernel k, with a bias.
  ValueId conv(ValueId x, int64_t cout, int64_t k, graph::Attributes attrs = {}) {
    const int64_t cin = g.value(x).shape[1];
    const int64_t group = attrs.count("group") ? std::get<int64_t>(attrs["group"]) : 1;
    return op("Conv", {x, constant({cout, cin / group, k, k}), constant({cout})}, attrs);
  }
};

int count(const Graph& g, const char* op) { return graph::passes::op_counts(g)[op]; }

// `before` with every convolution rewritten (at any size) and then the pipeline.
Graph rewritten(const Graph& before) {
  Graph after = before;
  graph::passes::conv_as_matmul(after, 0);
  graph::passes::run_pipeline(after);
  return after;
}

void expect_same_on_reference_and_emulator(const Graph& before, const Graph& after,
                                           const fusion::Plan& plan) {
  test::expect_same_outputs(before, after, 7);
  const std::vector<Tensor> in = test::random_inputs(before, 7);
  const std::vector<Tensor> a = test::run(before, in);
  const std::vector<Tensor> e = runtime::run_emulated(after, plan, in);
  ASSERT_EQ(e.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(test::tensors_close(e[i], a[i])) << "emulated output " << i;
}

// Whether node id is a Transpose of an activation (not of a 2-D weight).
bool moves_activation(const Graph& g, graph::NodeId id) {
  const graph::Node& n = g.node(id);
  return n.op_type() == "Transpose" && g.value(n.inputs[0]).shape.size() >= 4;
}

// conv 3x3 -> Relu -> conv 1x1 -> residual Add -> per-channel Mul -> Relu: the activations
// stay channels-last from the first product to the last op; one Transpose at the input, one
// at the output.
TEST(ChannelsLast, ConvolutionsHandEachOtherChannelsLastValues) {
  Builder b;
  const ValueId x = b.input({2, 8, 9, 9});
  const ValueId r = b.op("Relu", {b.conv(x, 8, 3, {{"pads", Ints{1, 1, 1, 1}}})});
  const ValueId a = b.op("Add", {b.conv(r, 8, 1), r});
  b.g.add_output(b.op("Relu", {b.op("Mul", {a, b.constant({8, 1, 1})})}), "y");
  const Graph after = rewritten(b.g);
  EXPECT_EQ(count(after, "Conv"), 0);
  EXPECT_EQ(count(after, "MatMul"), 2);
  int moves = 0;
  for (graph::NodeId id : after.topo_order()) moves += moves_activation(after, id);
  EXPECT_EQ(moves, 2);
  expect_same_on_reference_and_emulator(b.g, after,
                                        fusion::plan_fused(after, codegen::kernel_lowerings()));
}

// conv -> Relu -> MaxPool -> conv -> Clip -> depthwise conv -> conv -> ReduceMean and
// GlobalAveragePool: the products write rows (channels-last: no move back to channels-first in a
// GEMM kernel); the pooling, depthwise and mean kernels read and write through the Transposes
// around them.
TEST(ChannelsLast, PoolingAndDepthwiseKernelsReadThroughTheTransposes) {
  Builder b;
  const ValueId x = b.input({2, 8, 10, 10});
  ValueId v = b.op("Relu", {b.conv(x, 16, 1)});
  v = b.op("MaxPool", {v},
           {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  ValueId lo = b.g.add_constant("lo", Tensor::scalar_of(DType::Float32, 0)),
          hi = b.g.add_constant("hi", Tensor::scalar_of(DType::Float32, 6));
  v = b.op("Clip", {b.conv(v, 16, 1), lo, hi});
  v = b.conv(v, 16, 3, {{"group", int64_t{16}}, {"pads", Ints{1, 1, 1, 1}}});
  b.g.add_output(b.op("GlobalAveragePool", {b.conv(v, 8, 1)}), "pooled");
  const ValueId axes = b.g.add_constant("axes", Tensor::from_int64s({2, 3}, {2}));
  b.g.add_output(b.op("ReduceMean", {b.conv(v, 4, 1), axes}), "mean");
  const Graph after = rewritten(b.g);
  EXPECT_EQ(count(after, "MatMul"), 4);  // the depthwise convolution stays a loop
  const fusion::Plan plan = fusion::plan_fused(after, codegen::kernel_lowerings());
  int loops_through_transposes = 0;
  for (const fusion::Group& gr : plan.groups) {
    const bool moves = std::any_of(gr.nodes.begin(), gr.nodes.end(),
                                   [&](graph::NodeId id) { return moves_activation(after, id); });
    if (gr.kind == fusion::GroupKind::Gemm) {
      for (graph::NodeId id : gr.nodes)
        EXPECT_FALSE(moves_activation(after, id) && after.node(id).attr_ints("perm")[1] == 3)
            << "a GEMM writes its output channels-first";
    }
    for (graph::NodeId id : gr.nodes) {
      const std::string& op = after.node(id).op_type();
      if (op == "MaxPool" || op == "Conv" || op == "GlobalAveragePool" || op == "ReduceMean") {
        EXPECT_TRUE(moves) << op << " reads its Transpose in another kernel";
        loops_through_transposes += moves;
      }
      // GlobalAveragePool is a row program (a warp a row), as ReduceMean is.
      if (op == "GlobalAveragePool" || op == "ReduceMean")
        EXPECT_EQ(gr.kind, fusion::GroupKind::Reduction) << op;
    }
  }
  EXPECT_EQ(loops_through_transposes, 4);
  expect_same_on_reference_and_emulator(b.g, after, plan);
}

// Element-wise ops after a channel move run before it, constants permuted to match; inverse
// moves cancel; other perms (a transformer's head transpose) stay where they are.
TEST(SinkTransposes, ElementwiseOpsRunChannelsLastAndInversesCancel) {
  Builder b;
  const ValueId x = b.input({2, 4, 5, 3});
  const ValueId t = b.op("Transpose", {x}, {{"perm", Ints{0, 3, 1, 2}}});  // [2, 3, 4, 5]
  const ValueId y =
      b.op("Sigmoid", {b.op("Mul", {b.op("Add", {t, b.constant({3, 1, 1})}), b.constant({1, 5})})});
  b.g.add_output(y, "y");
  b.g.add_output(b.op("Relu", {b.op("Transpose", {t}, {{"perm", Ints{0, 2, 3, 1}}})}), "back");
  b.g.add_output(b.op("Relu", {b.op("Transpose", {x}, {{"perm", Ints{0, 2, 1, 3}}})}), "heads");
  Graph after = b.g;
  EXPECT_GT(graph::passes::sink_transposes(after), 0);
  graph::passes::run_pipeline(after);
  // y: Add, Mul and Sigmoid over [2, 4, 5, 3], then the one channel move.
  const graph::Node& last = after.node(after.value(after.outputs()[0].value).producer);
  EXPECT_EQ(last.op_type(), "Transpose");
  EXPECT_EQ(after.value(last.inputs[0]).shape, (Shape{2, 4, 5, 3}));
  // back: Relu of x itself.
  const graph::Node& relu = after.node(after.value(after.outputs()[1].value).producer);
  EXPECT_EQ(relu.inputs[0], after.inputs()[0]);
  // heads: the Relu still reads the head transpose.
  const graph::Node& heads = after.node(after.value(after.outputs()[2].value).producer);
  EXPECT_EQ(after.node(after.value(heads.inputs[0]).producer).op_type(), "Transpose");
  test::expect_same_outputs(b.g, after, 7);
}

// A depthwise convolution reading a channels-last value has its W stored [3, 3, 1, C] behind a
// Transpose that constant folding leaves, the values W's; a BatchNormalization after it folds
// first (into W, which the Transpose then reads); one reading a channels-first input keeps W.
TEST(DepthwiseWeights, StoredChannelsLastBehindATranspose) {
  Builder b;
  const ValueId x = b.input({2, 8, 7, 6});
  const ValueId lo = b.g.add_constant("lo", Tensor::scalar_of(DType::Float32, 0)),
                hi = b.g.add_constant("hi", Tensor::scalar_of(DType::Float32, 6));
  const ValueId c = b.op("Relu", {b.conv(x, 16, 1)});  // a product: channels-last after it
  ValueId v = b.conv(c, 16, 3, {{"group", int64_t{16}}, {"pads", Ints{1, 1, 1, 1}}});
  v = b.op("BatchNormalization",
           {v, b.constant({16}), b.constant({16}), b.constant({16}),
            b.g.add_constant("var", Tensor::from_floats(std::vector<float>(16, 0.5f), {16}))});
  b.g.add_output(b.conv(b.op("Clip", {v, lo, hi}), 8, 1), "y");
  // Channels-first all the way: x straight into a depthwise convolution.
  b.g.add_output(b.conv(x, 8, 3, {{"group", int64_t{8}}, {"pads", Ints{1, 1, 1, 1}}}), "z");
  const Graph after = rewritten(b.g);
  EXPECT_EQ(count(after, "BatchNormalization"), 0);
  const graph::Users users = after.users();
  int views = 0, plain = 0;
  for (size_t id = 0; id < after.num_nodes(); ++id) {
    const graph::Node& n = after.node(static_cast<graph::NodeId>(id));
    if (n.dead || n.op_type() != "Conv") continue;
    const graph::Value& w = after.value(n.inputs[1]);
    if (w.constant) {
      ++plain;
      continue;
    }
    ASSERT_NE(w.producer, graph::kNoNode);
    EXPECT_TRUE(graph::passes::is_depthwise_weight(after, users, w.producer));
    const graph::Value& stored = after.value(after.node(w.producer).inputs[0]);
    ASSERT_TRUE(stored.constant);
    EXPECT_EQ(stored.shape, (Shape{3, 3, 1, 16}));
    ++views;
  }
  EXPECT_EQ(views, 1);
  EXPECT_EQ(plain, 1);
  // fold_constants leaves the Transpose: another pipeline run changes nothing.
  Graph again = after;
  graph::passes::run_pipeline(again);
  EXPECT_EQ(count(again, "Transpose"), count(after, "Transpose"));
  const fusion::Plan plan = fusion::plan_fused(after, codegen::kernel_lowerings());
  expect_same_on_reference_and_emulator(b.g, after, plan);
}

}  // namespace
}  // namespace braze
