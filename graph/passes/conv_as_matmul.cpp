#include "graph/passes/conv_as_matmul.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string_view>

#include "graph/op_context.h"
#include "graph/ops/conv_pool.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

// Columns larger than this many elements (512 MiB in float16) are not made: such a Conv
// stays a loop per output element.
constexpr int64_t kMaxColumnElements = int64_t{1} << 28;
// A grouped convolution becomes one product per group when each is at least this deep (input
// channels times taps) and this wide (output channels); thinner ones (depthwise) stay loops.
constexpr int64_t kMinGroupDepth = 32, kMinGroupWidth = 16;

// How a Conv this pass rewrites reads X: pixels as they are (a 1x1 kernel, stride 1, no
// padding: a reshape) or through Im2Col's windows.
enum class Columns { None, Pixels, Windows };

// Node n is a live `op` (Conv, ConvTranspose) with constant W (and bias) and static shapes; its
// shapes then, where they give the output n has.
std::optional<ConvShapes> constant_conv(const Graph& g, const Node& n, std::string_view op) {
  if (n.dead || !n.op->domain.empty() || n.op->name != op || n.inputs.size() < 2)
    return std::nullopt;
  const Value& x = g.value(n.inputs[0]);
  const Value& w = g.value(n.inputs[1]);
  const Value& y = g.value(n.outputs[0]);
  if (!x.has_shape || !y.has_shape || !w.constant || x.shape.size() < 3) return std::nullopt;
  if (n.has_input(2) && !g.value(n.inputs[2]).constant) return std::nullopt;
  const Shape* b = n.has_input(2) ? &g.value(n.inputs[2]).shape : nullptr;
  const ConvShapes s = op == "Conv" ? conv_shapes(n, x.shape, w.shape, b)
                                    : conv_transpose_shapes(n, x.shape, w.shape, b);
  if (y.shape != s.out) return std::nullopt;
  return s;
}

// One group or groups deep and wide enough; columns only for products of at least min_flops.
Columns columns_of(const Graph& g, const Node& n, double min_flops) {
  const std::optional<ConvShapes> shapes = constant_conv(g, n, "Conv");
  if (!shapes) return Columns::None;
  const ConvShapes& s = *shapes;
  const int64_t taps = checked_numel(s.g.kernel), pixels = checked_numel(s.g.out);
  if (s.group != 1 && (s.c / s.group * taps < kMinGroupDepth || s.m / s.group < kMinGroupWidth))
    return Columns::None;
  auto all = [](const Shape& v, int64_t e) {
    return std::all_of(v.begin(), v.end(), [&](int64_t d) { return d == e; });
  };
  const double elements = static_cast<double>(s.n) * s.c * taps * pixels;
  const double flops = 2.0 * elements * static_cast<double>(s.m) / static_cast<double>(s.group);
  if (all(s.g.kernel, 1) && all(s.g.stride, 1) && all(s.g.pad_begin, 0) && all(s.g.pad_end, 0) &&
      (s.group == 1 || flops >= min_flops))
    return Columns::Pixels;
  return elements <= static_cast<double>(kMaxColumnElements) && flops >= min_flops
             ? Columns::Windows
             : Columns::None;
}

// A constant holding t's data at another shape.
ValueId reshaped_constant(Graph& g, const std::string& name, const Tensor& t, Shape shape) {
  Tensor r(t.dtype(), std::move(shape));
  std::copy_n(static_cast<const std::byte*>(t.raw()), t.nbytes(), static_cast<std::byte*>(r.raw()));
  return g.add_constant(g.unique_name(name), std::move(r));
}

ValueId shape_constant(Graph& g, const std::string& name, const Shape& s) {
  return g.add_constant(g.unique_name(name),
                        Tensor::from_int64s(s, {static_cast<int64_t>(s.size())}));
}

// Adds node `op` reading `ins` and writing a new value named after `name` (or `out`).
ValueId add(Graph& g, const char* op, const std::string& name, std::vector<ValueId> ins,
            ValueId out = kNoValue, graph::Attributes attrs = {}) {
  if (out == kNoValue) out = g.add_value(g.unique_name(name), g.value(ins[0]).dtype, {});
  const NodeId id = g.add_node(&graph::op(op), g.unique_name(name), std::move(ins), {out},
                               std::move(attrs), op == std::string("MatMul") ? 13 : 14);
  infer_node(g, id);
  return out;
}

// Im2Col with `attrs` of node conv's X, or of `x` (X made channels-last) where given.
ValueId im2col(Graph& g, const Node& conv, graph::Attributes attrs, ValueId x = kNoValue) {
  if (x == kNoValue) x = conv.inputs[0];
  const ValueId out = g.add_value(g.unique_name(conv.name + "_columns"), g.value(x).dtype, {});
  infer_node(g, g.add_node(find_op("braze", "Im2Col"), g.unique_name(conv.name + "_im2col"), {x},
                           {out}, std::move(attrs), 1));
  return out;
}

// Im2Col of the Conv's X (or of `x`, X channels-last) with its window attributes (the kernel
// from W) and `attrs`.
ValueId windows(Graph& g, const Node& conv, const Shape& ws, graph::Attributes attrs = {},
                ValueId x = kNoValue) {
  for (const char* a : {"auto_pad", "dilations", "pads", "strides"}) {
    auto it = conv.attrs.find(a);
    if (it != conv.attrs.end()) attrs.emplace(a, it->second);
  }
  attrs["kernel_shape"] = std::vector<int64_t>(ws.begin() + 2, ws.end());
  return im2col(g, conv, std::move(attrs), x);
}

// conv's output as W times the columns cols [N, K, P], plus its bias, reshaped to its shape:
// w holds W as [M, K] in row-major order (for groups, as [G, M / G, K / G], each group's
// product reading its rows of the columns).
void product(Graph& g, const Node& conv, const Tensor& w, ValueId cols, int64_t groups) {
  const std::string& base = conv.name;
  const Shape ys = g.value(conv.outputs[0]).shape, cs = g.value(cols).shape;
  const int64_t m = ys[1], k = cs[1] / groups;
  Shape ws = {m, k}, bs = {m, 1};
  if (groups > 1) {
    cols = add(g, "Reshape", base + "_group_columns",
               {cols, shape_constant(g, base + "_group_columns_shape", {cs[0], groups, k, cs[2]})});
    ws = {groups, m / groups, k};
    bs = {groups, m / groups, 1};
  }
  ValueId y = add(g, "MatMul", base + "_gemm", {reshaped_constant(g, base + "_w", w, ws), cols});
  if (conv.has_input(2))
    y = add(g, "Add", base + "_bias",
            {y, reshaped_constant(g, base + "_b", *g.value(conv.inputs[2]).constant, bs)});
  add(g, "Reshape", base + "_image", {y, shape_constant(g, base + "_image_shape", ys)},
      conv.outputs[0]);
}

// ---- channels-last (ungrouped convolutions over 2 or more spatial axes) ----------------------
// X goes channels-last through a Transpose (sink_transposes cancels it against the previous
// convolution's), each output pixel's window becomes one row of the product's left operand
// (the pixels themselves for a plain 1x1), W [M, C, k…] becomes the right operand [J, M], row
// t·C + c holding W[:, c, t], and the product [N·P, M] goes back channels-first through a
// Transpose that sink_transposes moves on. One product of N·P rows: every image's pixels fill
// the tile rows, where a product per image left them idle for 7x7 and 14x14 images.

std::vector<int64_t> channels_last_perm(size_t rank) {
  std::vector<int64_t> p = {0};
  for (size_t d = 2; d < rank; ++d) p.push_back(static_cast<int64_t>(d));
  p.push_back(1);
  return p;
}

std::vector<int64_t> channels_first_perm(size_t rank) {
  std::vector<int64_t> p = {0, static_cast<int64_t>(rank) - 1};
  for (size_t d = 1; d + 1 < rank; ++d) p.push_back(static_cast<int64_t>(d));
  return p;
}

// W [M, C, k…] as [rows, M]: element (t·C + c, m) is W's (m, c, t); rows past C·taps zero.
Tensor channels_last_weights(const Tensor& w, int64_t rows) {
  const int64_t m = w.shape()[0], c = w.shape()[1];
  const int64_t taps = checked_numel(Shape(w.shape().begin() + 2, w.shape().end()));
  const Tensor t = transposed(w.reshaped({m, c, taps}), {2, 1, 0});  // [taps, C, M]
  Tensor r(w.dtype(), {rows, m});
  std::copy_n(static_cast<const std::byte*>(t.raw()), t.nbytes(), static_cast<std::byte*>(r.raw()));
  return r;
}

void rewrite_channels_last(Graph& g, NodeId id, Columns how) {
  const Node conv = g.node(id);  // a copy: the node is killed below
  const Shape xs = g.value(conv.inputs[0]).shape, ys = g.value(conv.outputs[0]).shape;
  const Tensor& w = *g.value(conv.inputs[1]).constant;
  const int64_t n = xs[0], c = xs[1], m = ys[1];
  const int64_t pixels = checked_numel(Shape(ys.begin() + 2, ys.end()));
  const int64_t k = c * checked_numel(Shape(w.shape().begin() + 2, w.shape().end()));
  // Rows of whole 16-byte units of the narrowest type (ResNet's stem: 3·49 = 147 -> 152).
  const int64_t j = how == Columns::Pixels ? c : (k + 7) / 8 * 8;
  g.kill_node(id);
  g.value(conv.outputs[0]).producer = kNoNode;
  const std::string& base = conv.name;
  const ValueId xt = add(g, "Transpose", base + "_channels_last", {conv.inputs[0]}, kNoValue,
                         {{"perm", channels_last_perm(xs.size())}});
  const ValueId rows =
      how == Columns::Pixels
          ? xt
          : windows(g, conv, w.shape(),
                    j == k ? graph::Attributes{{"channels_last", int64_t{1}}}
                           : graph::Attributes{{"channels_last", int64_t{1}}, {"columns", j}},
                    xt);
  const ValueId a = add(g, "Reshape", base + "_rows",
                        {rows, shape_constant(g, base + "_rows_shape", {n * pixels, j})});
  ValueId y = add(g, "MatMul", base + "_gemm",
                  {a, g.add_constant(g.unique_name(base + "_w"), channels_last_weights(w, j))});
  if (conv.has_input(2))
    y = add(g, "Add", base + "_bias",
            {y, reshaped_constant(g, base + "_b", *g.value(conv.inputs[2]).constant, {m})});
  Shape image = {n};
  image.insert(image.end(), ys.begin() + 2, ys.end());
  image.push_back(m);
  y = add(g, "Reshape", base + "_image", {y, shape_constant(g, base + "_image_shape", image)});
  add(g, "Transpose", base + "_channels_first", {y}, conv.outputs[0],
      {{"perm", channels_first_perm(ys.size())}});
}

void rewrite(Graph& g, NodeId id, Columns how) {
  if (g.node(id).attr_int("group") == 1 && g.value(g.node(id).inputs[0]).shape.size() >= 4)
    return rewrite_channels_last(g, id, how);
  const Node conv = g.node(id);  // a copy: the node is killed below
  const Shape xs = g.value(conv.inputs[0]).shape;
  const Tensor& w = *g.value(conv.inputs[1]).constant;
  const int64_t n = xs[0], c = xs[1];
  const int64_t pixels = checked_numel(Shape(xs.begin() + 2, xs.end()));
  g.kill_node(id);
  g.value(conv.outputs[0]).producer = kNoNode;
  const std::string& base = conv.name;
  const ValueId cols =
      how == Columns::Windows
          ? windows(g, conv, w.shape())
          : add(g, "Reshape", base + "_pixels",
                {conv.inputs[0], shape_constant(g, base + "_pixels_shape", {n, c, pixels})});
  product(g, conv, w, cols, conv.attr_int("group"));
}

// A ConvTranspose this pass rewrites: one group, constant W [C, M, k...] (and bias), static
// shapes, columns within the limit, a product of at least min_flops.
bool transposed_rewritable(const Graph& g, const Node& n, double min_flops) {
  const std::optional<ConvShapes> shapes = constant_conv(g, n, "ConvTranspose");
  if (!shapes || shapes->group != 1) return false;
  const ConvShapes& s = *shapes;
  const double elements = static_cast<double>(s.n) * s.c * checked_numel(s.g.kernel) *
                          static_cast<double>(checked_numel(s.g.out));
  return elements <= static_cast<double>(kMaxColumnElements) &&
         2.0 * elements * static_cast<double>(s.m) >= min_flops;
}

// W [C, M, taps...] as [M, C·taps]: element (m, c·K + k) is W's (c, m, k).
Tensor transposed_weights(const Tensor& w) {
  const int64_t c = w.shape()[0], m = w.shape()[1];
  const int64_t taps = checked_numel(Shape(w.shape().begin() + 2, w.shape().end()));
  return transposed(w.reshaped({c, m, taps}), {1, 0, 2}).reshaped({m, c * taps});
}

void rewrite_transposed(Graph& g, NodeId id) {
  const Node ct = g.node(id);  // a copy: the node is killed below
  const ConvShapes s = *constant_conv(g, ct, "ConvTranspose");
  const Tensor& w = *g.value(ct.inputs[1]).constant;
  g.kill_node(id);
  g.value(ct.outputs[0]).producer = kNoNode;
  std::vector<int64_t> pads = s.g.pad_begin;
  pads.insert(pads.end(), s.g.pad_begin.begin(), s.g.pad_begin.end());  // the end is not read
  const ValueId cols = im2col(g, ct,
                              {{"kernel_shape", s.g.kernel},
                               {"strides", s.g.stride},
                               {"dilations", s.g.dilation},
                               {"pads", pads},
                               {"output_spatial", s.g.out},
                               {"transposed", int64_t{1}}});
  product(g, ct, transposed_weights(w), cols, 1);
}

}  // namespace

int conv_as_matmul(Graph& g) { return conv_as_matmul(g, kMinColumnsFlops); }

int conv_as_matmul(Graph& g, double min_columns_flops) {
  int changed = 0;
  const Graph& cg = g;
  for (NodeId id : g.topo_order()) {
    if (transposed_rewritable(cg, cg.node(id), min_columns_flops)) {
      rewrite_transposed(g, id);
      ++changed;
      continue;
    }
    const Columns how = columns_of(cg, cg.node(id), min_columns_flops);
    if (how == Columns::None) continue;
    rewrite(g, id, how);
    ++changed;
  }
  return changed;
}

}  // namespace braze::graph::passes
