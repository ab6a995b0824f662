// Strided layouts (graph/layout.h) and the registry's layout maps: a chain of layout ops
// composed into one view must address exactly the elements the reference executor copies.
// Each chain runs on an iota input (element k holds k + 1), so output element c must hold
// 1 + view.at(c).
#include <gtest/gtest.h>

#include "graph/layout.h"
#include "graph/passes/pipeline.h"
#include "graph/registry.h"
#include "tests/test_util.h"

namespace braze {
namespace {

// The view of the graph's only output over its only input, through the chain of nodes.
std::optional<graph::Layout> chain_view(const graph::Graph& g) {
  graph::Layout l = graph::Layout::contiguous(g.value(g.inputs()[0]).shape);
  graph::ValueId at = g.inputs()[0];
  for (graph::NodeId id : g.topo_order()) {
    const graph::Node& n = g.node(id);
    if (n.inputs.empty() || n.inputs[0] != at) continue;  // the constants
    at = n.outputs[0];
    if (!n.op->layout) return std::nullopt;
    std::optional<graph::Layout> next = n.op->layout(g, n, l);
    if (!next) return std::nullopt;
    l = *next;
  }
  return l;
}

void expect_view_matches_reference(const std::string& text) {
  SCOPED_TRACE(text);
  graph::Graph g = test::graph_from_text(text);
  graph::passes::run_pipeline(g);  // the Constants folded into the nodes' inputs
  std::optional<graph::Layout> view = chain_view(g);
  ASSERT_TRUE(view.has_value());
  Tensor y = test::run(g, {test::iota(g.value(g.inputs()[0]).shape)})[0];
  ASSERT_EQ(view->shape(), y.shape()) << graph::layout_str(*view);
  std::vector<int64_t> c(y.shape().size(), 0);
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_EQ(y.get_f64(i), 1.0 + static_cast<double>(view->at(c)))
        << "element " << i << " of " << graph::layout_str(*view);
    for (size_t d = c.size(); d-- > 0;) {
      if (++c[d] < y.shape()[d]) break;
      c[d] = 0;
    }
  }
}

// GPT-2's attention operands: the fused QKV product split into Q, K and V, each viewed as
// [B, H, S, D], and K transposed for Q Kᵀ.
TEST(Layout, SliceReshapeTransposeOfAFusedProjection) {
  expect_view_matches_reference(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,5,24] x) => (float[2,2,4,5] y) {
      s = Constant <value = int64[1] {8}> ()  e = Constant <value = int64[1] {16}> ()
      ax = Constant <value = int64[1] {2}> ()  sh = Constant <value = int64[4] {2, 5, 2, 4}> ()
      k = Slice(x, s, e, ax)  r = Reshape(k, sh)  t = Transpose <perm = [0, 2, 1, 3]> (r)
      y = Transpose <perm = [0, 1, 3, 2]> (t) })");
}

// Llama's grouped-query K: [B, KVH, S, D] repeated over the heads of each group, merged
// into [B·H, S, D] (two factors that do not merge), transposed and reshaped again.
TEST(Layout, GroupedQueryExpandKeepsUnmergedFactors) {
  expect_view_matches_reference(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[1,2,3,4] x) => (float[1,6,4,3] y) {
      a1 = Constant <value = int64[1] {2}> ()  u = Unsqueeze(x, a1)
      es = Constant <value = int64[5] {1, 2, 3, 3, 4}> ()  e = Expand(u, es)
      s1 = Constant <value = int64[3] {6, 3, 4}> ()  r = Reshape(e, s1)
      t = Transpose <perm = [0, 2, 1]> (r)
      s2 = Constant <value = int64[4] {1, 6, 4, 3}> ()  y = Reshape(t, s2) })");
}

TEST(Layout, StepsNegativeStartsAndFlatten) {
  expect_view_matches_reference(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[6,7,3] x) => (float[2,6] y) {
      s = Constant <value = int64[2] {1, -1}> ()  e = Constant <value = int64[2] {7, 0}> ()
      ax = Constant <value = int64[2] {1, 2}> ()  st = Constant <value = int64[2] {3, -1}> ()
      k = Slice(x, s, e, ax, st)  t = Transpose <perm = [1, 0, 2]> (k)
      f = Flatten <axis = 1> (t)  s0 = Constant <value = int64[1] {0}> ()  e0 = Constant <value = int64[1] {6}> ()
      a0 = Constant <value = int64[1] {1}> ()  y = Slice(f, s0, e0, a0) })");
}

TEST(Layout, SqueezeUnsqueezeAndBroadcastLeadingDims) {
  expect_view_matches_reference(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[3,1,4] x) => (float[2,4,3,1] y) {
      a = Constant <value = int64[1] {1}> ()  q = Squeeze(x, a)
      es = Constant <value = int64[3] {2, 3, 4}> ()  e = Expand(q, es)
      t = Transpose <perm = [0, 2, 1]> (e)  a3 = Constant <value = int64[1] {3}> ()
      y = Unsqueeze(t, a3) })");
}

TEST(Layout, ReshapeOfATransposeSplitsFactorsOrRefuses) {
  // [4, 6] transposed to [6, 4] (strides 1, 6): [6, 4] -> [3, 2, 4] splits the first dim;
  // -> [24] cannot be one stride but is still a view (two factors); [6, 4] -> [4, 6] splits
  // no factor evenly (4 inside 6 with stride 6 … ) and is refused.
  graph::Layout t = graph::transpose_layout(graph::Layout::contiguous({4, 6}), {1, 0});
  std::optional<graph::Layout> a = graph::reshape_layout(t, {3, 2, 4});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->dims[0], (std::vector<graph::StridedDim>{{3, 2}}));
  EXPECT_EQ(a->dims[2], (std::vector<graph::StridedDim>{{4, 6}}));
  std::optional<graph::Layout> b = graph::reshape_layout(t, {24});
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->single(0));
  EXPECT_FALSE(graph::reshape_layout(t, {4, 6}));
  // A contiguous tensor merges back into one stride whatever the reshape.
  EXPECT_EQ(graph::reshape_layout(graph::Layout::contiguous({4, 6}), {2, 12})->single(1),
            (graph::StridedDim{12, 1}));
}

}  // namespace
}  // namespace braze
