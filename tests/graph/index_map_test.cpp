// Index maps of the data-movement ops (graph/index_map.h): the expression evaluator, the affine
// analysis the reference's strided copies rest on, and every movement op's reference output
// against its own map evaluated element by element (so the fast paths — strided boxes, one
// memcpy — say what the map says).
#include "graph/index_map.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "graph/op_context.h"
#include "graph/registry.h"
#include "tests/test_util.h"

namespace braze::graph {
namespace {

TEST(IndexMap, DivisionAndRemainderTruncateAsInC) {
  IndexMap m;
  IndexId q = m.div(m.coord(0), m.lit(2)), r = m.mod(m.coord(0), m.lit(2));
  IndexEvaluator ev(m);
  EXPECT_EQ(ev.eval(q, {-7}), -3);
  EXPECT_EQ(ev.eval(r, {-7}), -1);
  EXPECT_EQ(ev.eval(q, {7}), 3);
  EXPECT_EQ(ev.eval(r, {7}), 1);
}

TEST(IndexMap, UnravelInvertsLinearize) {
  const Shape s{2, 1, 3};
  IndexMap m;
  std::vector<IndexId> c = m.unravel(m.coord(0), s);
  IndexId back = m.linearize(c, s);
  IndexEvaluator ev(m);
  for (int64_t f = 0; f < 6; ++f) {
    EXPECT_EQ(ev.eval(c[0], {f}), f / 3);
    EXPECT_EQ(ev.eval(c[1], {f}), 0);
    EXPECT_EQ(ev.eval(c[2], {f}), f % 3);
    EXPECT_EQ(ev.eval(back, {f}), f);
  }
}

// A same-order map reads the element at the same flat offset; the dims both shapes share at
// either end read their own coordinate, only those between go through the flat offset.
TEST(IndexMap, SameOrderMapKeepsTheSharedEndDims) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{12, 6}, {2, 2, 3, 6}}, {{2, 3, 4}, {2, 12}}, {{2, 3}, {2, 1, 3}}, {{2, 1, 3}, {2, 3}},
      {{6}, {2, 3}},           {{4, 5}, {4, 5}},     {{2, 3, 5}, {6, 5}}};
  for (const auto& [in, out] : cases) {
    const IndexMap m = same_order_map(in, out);
    IndexEvaluator ev(m);
    ASSERT_EQ(m.regions().at(0).source.coords.size(), in.size());
    int64_t n = 1;
    for (int64_t d : out) n *= d;
    for (int64_t f = 0; f < n; ++f) {
      std::vector<int64_t> oc(out.size()), ic(in.size());
      for (size_t d = out.size(), r = static_cast<size_t>(f); d-- > 0; r /= out[d])
        oc[d] = static_cast<int64_t>(r % out[d]);
      for (size_t d = in.size(), r = static_cast<size_t>(f); d-- > 0; r /= in[d])
        ic[d] = static_cast<int64_t>(r % in[d]);
      std::vector<int64_t> got;
      EXPECT_EQ(ev.locate(oc, got).input, 0);
      EXPECT_EQ(got, ic) << shape_str(in) << " as " << shape_str(out) << " at " << f;
    }
  }
  // [2, 2, 3, 6] from [12, 6]: the last coordinate is the output's own.
  const IndexMap m = same_order_map({12, 6}, {2, 2, 3, 6});
  const IndexNode& last = m.at(m.regions().at(0).source.coords.back());
  EXPECT_EQ(last.op, IndexOp::Coord);
  EXPECT_EQ(last.value, 3);
}

TEST(IndexMap, RegionsAreTriedInOrderAndTemporariesComputedFirst) {
  // o < 2 ? input 0 at (o) : input 1 at (t - 2), t = o bound once.
  IndexMap m;
  IndexId t = m.temp(m.coord(0));
  m.add_region(m.lt(t, m.lit(2)), {0, {t}});
  m.add_region(IndexMap::kAlways, {1, {m.sub(t, m.lit(2))}});
  IndexEvaluator ev(m);
  std::vector<int64_t> in;
  EXPECT_EQ(ev.locate({1}, in).input, 0);
  EXPECT_EQ(in, std::vector<int64_t>{1});
  EXPECT_EQ(ev.locate({4}, in).input, 1);
  EXPECT_EQ(in, std::vector<int64_t>{2});
}

TEST(IndexMap, AffineIndexOfSumsAndConstantMultiples) {
  IndexMap m;
  IndexId e = m.sub(m.add(m.lit(3), m.mul(m.coord(1), m.lit(2))), m.mul(m.lit(4), m.coord(0)));
  std::optional<AffineIndex> a = affine_index(m, e, 2);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->offset, 3);
  EXPECT_EQ(a->coeff, (std::vector<int64_t>{-4, 2}));
  EXPECT_FALSE(affine_index(m, m.mod(m.coord(0), m.lit(3)), 2));
  EXPECT_FALSE(affine_index(m, m.mul(m.coord(0), m.coord(1)), 2));
  EXPECT_FALSE(affine_index(m, m.coord(2), 2));  // no such output dim
}

TEST(IndexMap, PermutationOnlyForOneRegionOfBareCoordinates) {
  IndexMap t;
  t.add_region(IndexMap::kAlways, {0, {t.coord(2), t.coord(0), t.coord(1)}});
  EXPECT_EQ(t.permutation(), (std::vector<int64_t>{2, 0, 1}));
  IndexMap s;
  s.add_region(IndexMap::kAlways, {0, {s.add(s.coord(0), s.lit(1))}});
  EXPECT_FALSE(s.permutation());
  EXPECT_FALSE(same_order_map({6}, {2, 3}).permutation());
  EXPECT_TRUE(same_order_map({6}, {2, 3}).same_order);
}

// The only node of g's output 0 computed by the reference, and by its map element by element;
// an op marked invertible_map has a map that keeps order or permutes dims.
void expect_reference_follows_map(const std::string& text, uint64_t seed) {
  SCOPED_TRACE(text);
  Graph g = test::graph_from_text(text);
  std::vector<Tensor> inputs = test::random_inputs(g, seed);
  std::vector<Tensor> want = test::run(g, inputs);
  const std::vector<NodeId> order = g.topo_order();
  const Node& n = g.node(order.back());
  ASSERT_TRUE(n.op->index_map) << n.describe();
  std::vector<const Tensor*> in;
  for (ValueId v : n.inputs) {
    const Value& val = g.value(v);
    if (val.constant) {
      in.push_back(&*val.constant);
      continue;
    }
    size_t k = 0;
    while (g.inputs()[k] != v) ++k;
    in.push_back(&inputs[k]);
  }
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const Shape out = g.value(n.outputs[o]).shape;
    IndexMapArgs a{n, {}, {}, {}, out, o};
    for (const Tensor* t : in) {
      a.present.push_back(true);
      a.shapes.push_back(t->shape());
      a.values.push_back(t);
    }
    const IndexMap m = n.op->index_map(a);
    // What codegen inverts for a GEMM epilogue's stores.
    if (n.op->invertible_map) EXPECT_TRUE(m.same_order || m.permutation()) << n.describe();
    IndexEvaluator ev(m);
    const Tensor& y = want.at(o);
    const size_t es = dtype_size(y.dtype());
    std::vector<int64_t> at(out.size(), 0), src;
    for (int64_t k = 0; k < y.numel(); ++k) {
      const IndexSource& s = ev.locate(at, src);
      std::vector<unsigned char> expect(es, 0);
      if (s.input != IndexSource::kZero) {
        const Tensor& x = *in.at(static_cast<size_t>(s.input));
        const std::vector<int64_t> st = contiguous_strides(x.shape());
        int64_t off = 0;
        for (size_t d = 0; d < src.size(); ++d) {
          ASSERT_GE(src[d], 0);
          ASSERT_LT(src[d], x.shape()[d]);
          off += src[d] * st[d];
        }
        std::memcpy(expect.data(), static_cast<const unsigned char*>(x.raw()) + off * es, es);
      }
      ASSERT_EQ(std::memcmp(expect.data(), static_cast<const unsigned char*>(y.raw()) + k * es, es),
                0)
          << "output " << o << " element " << k;
      for (size_t d = out.size(); d-- > 0;) {
        if (++at[d] < out[d]) break;
        at[d] = 0;
      }
    }
  }
}

std::string one_op(const std::string& sig, const std::string& inits, const std::string& body,
                   int opset = 19) {
  return "<ir_version: 9, opset_import: [\"\" : " + std::to_string(opset) + "]>\n g " + sig + " " +
         inits + " { " + body + " }";
}

TEST(IndexMap, ReferenceOfEveryMovementOpFollowsItsMap) {
  const std::vector<std::string> cases = {
      one_op("(float[2,3,4] x) => (float[3,4,2] y)", "", "y = Transpose <perm = [1, 2, 0]> (x)"),
      one_op("(float[2,12] x) => (float[4,3,2] y)", "<int64[3] s = {4, 3, 2}>",
             "y = Reshape (x, s)"),
      one_op("(float[3,1] x) => (float[2,3,4] y)", "<int64[3] s = {2, 3, 4}>", "y = Expand (x, s)"),
      one_op("(float[2,3] x) => (float[4,9] y)", "<int64[2] r = {2, 3}>", "y = Tile (x, r)"),
      one_op(
          "(float[5,7] x) => (float[2,3] y)",
          "<int64[2] b = {4, 1}, int64[2] e = {0, 7}, int64[2] a = {0, 1}, int64[2] s = {-2, 2}>",
          "y = Slice (x, b, e, a, s)"),
      one_op("(float[4,2] x) => (float[1,2] y)",
             "<int64[1] b = {3}, int64[1] e = {4}, int64[1] a = {0}, int64[1] s = "
             "{9223372036854775807}>",
             "y = Slice (x, b, e, a, s)"),
      one_op("(float[2,3] a, float[2,0] b, float[2,1] c) => (float[2,4] y)", "",
             "y = Concat <axis = 1> (a, b, c)"),
      one_op("(float[2,5] x) => (float[2,2] y, float[2,3] z)", "<int64[2] s = {2, 3}>",
             "y, z = Split <axis = 1> (x, s)"),
      one_op("(float[2,3] x) => (float[5,4] y)", "<int64[4] p = {1, -1, 2, 2}, float v = {2.5}>",
             "y = Pad (x, p, v)"),
      one_op("(float[3,4] x) => (float[7,9] y)", "<int64[4] p = {2, 3, 2, 2}>",
             "y = Pad <mode = \"reflect\"> (x, p)"),
      one_op("(float[3,4] x) => (float[7,9] y)", "<int64[4] p = {2, 3, 2, 2}>",
             "y = Pad <mode = \"edge\"> (x, p)"),
      one_op("(float[3,4] x) => (float[7,11] y)", "<int64[4] p = {2, 3, 2, 4}>",
             "y = Pad <mode = \"wrap\"> (x, p)"),
      one_op("(float[3,4] x) => (float[5,6] y)", "<int64[4] p = {1, 1, 1, 1}>", "y = Pad (x, p)"),
      one_op("(float[1,8,2,3] x) => (float[1,2,4,6] y)", "",
             "y = DepthToSpace <blocksize = 2, mode = \"DCR\"> (x)"),
      one_op("(float[1,8,2,3] x) => (float[1,2,4,6] y)", "",
             "y = DepthToSpace <blocksize = 2, mode = \"CRD\"> (x)"),
      one_op("(float[2,3,4,6] x) => (float[2,12,2,3] y)", "",
             "y = SpaceToDepth <blocksize = 2> (x)"),
      one_op("(float[2,1,3] x) => (float[2,3] y)", "<int64[1] a = {1}>", "y = Squeeze (x, a)"),
      one_op("(float[2,3] x) => (float[2,3,1] y)", "<int64[1] a = {2}>", "y = Unsqueeze (x, a)"),
      one_op("(float[2,3,4] x) => (float[6,4] y)", "", "y = Flatten <axis = 2> (x)"),
  };
  uint64_t seed = 11;
  for (const std::string& c : cases) expect_reference_follows_map(c, seed++);
}

// Node n's output as a view of input 0 laid out as `in`: each element's offset is the offset of
// the input element its map reads.
void expect_view_follows_map(const std::string& text, const Layout& in, bool expect_view) {
  SCOPED_TRACE(text);
  Graph g = test::graph_from_text(text);
  const Node& n = g.node(g.topo_order().back());
  ASSERT_TRUE(n.op->layout);
  std::optional<Layout> out = n.op->layout(g, n, in);
  ASSERT_EQ(out.has_value(), expect_view) << (out ? layout_str(*out) : "no view");
  if (!out) return;
  std::optional<IndexMapArgs> a = index_map_args(g, n, 0);
  ASSERT_TRUE(a);
  const IndexMap m = n.op->index_map(*a);
  IndexEvaluator ev(m);
  const Shape& shape = a->out_shape;
  ASSERT_EQ(out->shape(), shape);
  std::vector<int64_t> at(shape.size(), 0), src;
  for (int64_t k = 0, total = checked_numel(shape); k < total; ++k) {
    ev.locate(at, src);
    ASSERT_EQ(out->at(at), in.at(src)) << "element " << k << " of " << layout_str(*out);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
}

TEST(IndexMap, LayoutOpsViewTheirInputAsTheirMapsSay) {
  // A [4, 6] that is the transpose of a contiguous [6, 4], offset 5.
  Layout t = transpose_layout(Layout::contiguous({6, 4}), {1, 0});
  t.offset = 5;
  // Reshaped from a contiguous [2, 3, 4, 2] as [6, 8]: dim 1 keeps two factors.
  const Layout split =
      *reshape_layout(transpose_layout(Layout::contiguous({4, 3, 2, 2}), {3, 1, 0, 2}), {6, 8});
  expect_view_follows_map(
      one_op("(float[4,6] x) => (float[6,4] y)", "", "y = Transpose <perm = [1, 0]> (x)"), t, true);
  expect_view_follows_map(one_op("(float[4,6] x) => (float[2,2,6] y)", "<int64[3] s = {2, 2, 6}>",
                                 "y = Reshape (x, s)"),
                          t, true);
  expect_view_follows_map(
      one_op("(float[4,6] x) => (float[24] y)", "<int64[1] s = {24}>", "y = Reshape (x, s)"), t,
      true);  // one dim of two factors
  expect_view_follows_map(
      one_op("(float[4,6] x) => (float[3,8] y)", "<int64[2] s = {3, 8}>", "y = Reshape (x, s)"), t,
      false);  // 8 splits the factor of 6
  expect_view_follows_map(
      one_op("(float[4,1] x) => (float[3,4,5] y)", "<int64[3] s = {3, 4, 5}>", "y = Expand (x, s)"),
      Layout::contiguous({4, 1}), true);
  expect_view_follows_map(
      one_op(
          "(float[4,6] x) => (float[2,2] y)",
          "<int64[2] b = {3, 1}, int64[2] e = {0, 6}, int64[2] a = {0, 1}, int64[2] s = {-2, 3}>",
          "y = Slice (x, b, e, a, s)"),
      t, true);
  expect_view_follows_map(
      one_op("(float[6,8] x) => (float[6,4] y)",
             "<int64[1] b = {4}, int64[1] e = {8}, int64[1] a = {1}>", "y = Slice (x, b, e, a)"),
      split, true);  // whole rows of the inner factor
  expect_view_follows_map(
      one_op("(float[6,8] x) => (float[6,3] y)",
             "<int64[1] b = {1}, int64[1] e = {4}, int64[1] a = {1}>", "y = Slice (x, b, e, a)"),
      split, false);  // inside the inner factor
  expect_view_follows_map(
      one_op("(float[4,6] x) => (float[4,1,6] y)", "<int64[1] a = {1}>", "y = Unsqueeze (x, a)"), t,
      true);
}

}  // namespace
}  // namespace braze::graph
