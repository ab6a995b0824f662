// Data-movement ops: Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Expand, Concat, Split,
// Slice, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu. They move elements without looking
// at their values, so every dtype is accepted. Each but Trilu is one index map
// (OpDef::index_map, graph/index_map.h): where an output element comes from, which the reference
// (graph/ops/index_reference.cpp) copies raw bytes through and codegen renders as loads.
#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <functional>

#include "graph/ops/families.h"
#include "graph/ops/helpers.h"
#include "graph/ops/movement.h"

namespace braze::graph {
namespace {

using namespace ops;

// ---- shared pieces ---------------------------------------------------------------------
[[noreturn]] void fail(const Node& n, const std::string& msg) {
  throw UserError(fmt::format("{}: {}", n.describe(), msg));
}

int64_t checked_mul(const Node& n, int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(n, fmt::format("{} overflows ({} * {})", what, a, b));
  return r;
}

int64_t checked_add(const Node& n, int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(n, fmt::format("{} overflows ({} + {})", what, a, b));
  return r;
}

// The values of constant input i, an int32 or int64 1-D tensor (Reshape's shape, Slice's
// starts …). Throws NotStatic when the input is not constant.
std::vector<int64_t> int_list(const InferCtx& ctx, size_t i, const char* what) {
  DType dt = ctx.dtype(i);
  if (dt != DType::Int64 && dt != DType::Int32)
    ctx.fail(fmt::format("{} (input {}) must be int64 or int32, not {}", what, i, dtype_name(dt)));
  const Tensor& t = ctx.require_value(i);
  if (t.rank() != 1)
    ctx.fail(
        fmt::format("{} (input {}) must be 1-D, not of shape {}", what, i, shape_str(t.shape())));
  return t.to_int64s();
}

// Opsets before `before` give `attr` as an attribute; the canonical form takes it as input
// `index`. If that input is already there the attribute stays, and infer rejects it.
void upgrade_attr(Graph& g, NodeId n, int before, const std::string& attr, size_t index, DType dt) {
  const Node& node = g.node(n);
  if (node.opset < before && !node.has_input(index)) move_attr_to_input(g, n, attr, index, dt);
}

void reject_attr(const InferCtx& ctx, const char* attr, int since, size_t index) {
  if (ctx.node().has_attr(attr))
    ctx.fail(fmt::format("attribute '{}' is for opsets before {}; from {} it is input {}", attr,
                         since, since, index));
}

OpDef movement_op(std::string name, int since, int min_inputs, int max_inputs) {
  OpDef d;
  d.name = std::move(name);
  d.since = since;
  d.kind = FusionKind::Injective;
  d.min_inputs = min_inputs;
  d.max_inputs = max_inputs;
  return d;
}

// The map of an op whose output holds input 0's elements in the same order.
IndexMap same_order(const IndexMapArgs& a) { return same_order_map(a.shapes.at(0), a.out_shape); }

// ---- Reshape, Flatten, Squeeze, Unsqueeze ----------------------------------------------
Shape reshape_target(const InferCtx& ctx, const Shape& in, const std::vector<int64_t>& spec) {
  const Node& n = ctx.node();
  bool allowzero = n.attr_int("allowzero") != 0;
  int64_t total = checked_numel(in, n.describe() + " input");
  Shape out(spec.size());
  std::optional<size_t> infer_at;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == -1) {
      if (infer_at) ctx.fail(fmt::format("shape {} has more than one -1", shape_str(spec)));
      infer_at = i;
      out[i] = 1;
      continue;
    }
    if (v < -1)
      ctx.fail(fmt::format("shape {} has a negative dimension other than -1", shape_str(spec)));
    if (v == 0 && !allowzero) {
      if (i >= in.size())
        ctx.fail(fmt::format(
            "shape {}: 0 at index {} copies an input dimension, but the input {} has rank {}",
            shape_str(spec), i, shape_str(in), in.size()));
      v = in[i];
    }
    out[i] = v;
    known = checked_mul(n, known, v, "the shape's element count");
  }
  if (allowzero && infer_at && known == 0)
    ctx.fail(fmt::format("shape {} has both 0 and -1, which allowzero=1 forbids", shape_str(spec)));
  if (infer_at) {
    if (known == 0 || total % known != 0)
      ctx.fail(fmt::format("cannot reshape {} into {}: the -1 dimension cannot be inferred",
                           shape_str(in), shape_str(spec)));
    out[*infer_at] = total / known;
  } else if (known != total) {
    ctx.fail(fmt::format("cannot reshape {} ({} elements) into {} ({} elements)", shape_str(in),
                         total, shape_str(out), known));
  }
  return out;
}

OpDef reshape_op() {
  OpDef d = movement_op("Reshape", 5, 2, 2);
  d.attrs = {attr_i("allowzero", 0)};
  d.shape_inputs = {1};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    if (ctx.dtype(1) != DType::Int64) ctx.fail("shape (input 1) must be int64");
    std::vector<int64_t> spec = int_list(ctx, 1, "shape");
    ctx.set_shape(0, reshape_target(ctx, ctx.shape(0), spec));
  };
  d.index_map = same_order;
  d.invertible_map = true;
  d.reference = index_map_reference;
  d.layout = map_layout;
  return d;
}

OpDef flatten_op() {
  OpDef d = movement_op("Flatten", 1, 1, 1);
  d.attrs = {attr_i("axis", 1)};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    const Shape& in = ctx.shape(0);
    int64_t r = static_cast<int64_t>(in.size());
    int64_t a = ctx.node().attr_int("axis");
    if (a < -r || a > r) ctx.fail(fmt::format("axis {} is out of range [{}, {}]", a, -r, r));
    if (a < 0) a += r;
    int64_t outer =
        checked_numel(Shape(in.begin(), in.begin() + a), ctx.node().describe() + " input");
    int64_t inner =
        checked_numel(Shape(in.begin() + a, in.end()), ctx.node().describe() + " input");
    ctx.set_shape(0, {outer, inner});
  };
  d.index_map = same_order;
  d.invertible_map = true;
  d.reference = index_map_reference;
  d.layout = map_layout;
  return d;
}

OpDef squeeze_op() {
  OpDef d = movement_op("Squeeze", 1, 1, 2);
  d.attrs = {attr_opt("axes", AttrType::Ints)};  // opsets before 13
  d.shape_inputs = {1};
  d.upgrade = [](Graph& g, NodeId n) { upgrade_attr(g, n, 13, "axes", 1, DType::Int64); };
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    reject_attr(ctx, "axes", 13, 1);
    const Shape& in = ctx.shape(0);
    int64_t r = static_cast<int64_t>(in.size());
    std::vector<bool> drop(in.size(), false);
    std::vector<int64_t> axes;
    if (ctx.has_input(1)) axes = int_list(ctx, 1, "axes");
    if (axes.empty()) {  // no axes (or an empty list): every dimension of size 1
      for (int64_t i = 0; i < r; ++i) drop[i] = in[i] == 1;
    } else {
      for (int64_t a : normalize_axes(ctx, axes, r)) {
        if (in[a] != 1)
          ctx.fail(fmt::format("cannot squeeze axis {} of shape {}: its size is not 1", a,
                               shape_str(in)));
        drop[a] = true;
      }
    }
    Shape out;
    for (int64_t i = 0; i < r; ++i)
      if (!drop[i]) out.push_back(in[i]);
    ctx.set_shape(0, out);
  };
  d.index_map = same_order;
  d.invertible_map = true;
  d.reference = index_map_reference;
  d.layout = map_layout;
  return d;
}

OpDef unsqueeze_op() {
  OpDef d = movement_op("Unsqueeze", 1, 1, 2);
  d.attrs = {attr_opt("axes", AttrType::Ints)};  // opsets before 13
  d.shape_inputs = {1};
  d.upgrade = [](Graph& g, NodeId n) { upgrade_attr(g, n, 13, "axes", 1, DType::Int64); };
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    reject_attr(ctx, "axes", 13, 1);
    if (!ctx.has_input(1)) ctx.fail("axes are required");
    const Shape& in = ctx.shape(0);
    std::vector<int64_t> axes = int_list(ctx, 1, "axes");
    int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
    std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
    for (int64_t a : normalize_axes(ctx, axes, out_rank)) inserted[a] = true;
    Shape out(static_cast<size_t>(out_rank), 1);
    size_t k = 0;
    for (int64_t i = 0; i < out_rank; ++i)
      if (!inserted[i]) out[i] = in[k++];
    ctx.set_shape(0, out);
  };
  d.index_map = same_order;
  d.invertible_map = true;
  d.reference = index_map_reference;
  d.layout = map_layout;
  return d;
}

}  // namespace

// ---- Transpose, Expand, Tile -----------------------------------------------------------
std::vector<int64_t> transpose_perm(const Node& n, int64_t rank) {
  std::vector<int64_t> perm;
  if (!n.has_attr("perm")) {
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
    return perm;
  }
  perm = n.attr_ints("perm");
  if (static_cast<int64_t>(perm.size()) != rank)
    fail(n, fmt::format("perm [{}] has {} entries for an input of rank {}", fmt::join(perm, ","),
                        perm.size(), rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      fail(n,
           fmt::format("perm [{}] is not a permutation of 0..{}", fmt::join(perm, ","), rank - 1));
    seen[p] = true;
  }
  return perm;
}

namespace {

OpDef transpose_op() {
  OpDef d = movement_op("Transpose", 1, 1, 1);
  d.attrs = {attr_opt("perm", AttrType::Ints)};  // default: reverse the dimensions
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    const Shape& in = ctx.shape(0);
    Shape out;
    for (int64_t p : transpose_perm(ctx.node(), static_cast<int64_t>(in.size())))
      out.push_back(in[p]);
    ctx.set_shape(0, out);
  };
  d.invertible_map = true;
  d.index_map = [](const IndexMapArgs& a) {
    const size_t rank = a.shapes.at(0).size();
    std::vector<int64_t> perm = transpose_perm(a.node, static_cast<int64_t>(rank));
    IndexMap m;
    std::vector<IndexId> in(rank);
    for (size_t d = 0; d < rank; ++d) in[static_cast<size_t>(perm[d])] = m.coord(d);
    m.add_region(IndexMap::kAlways, {0, in});
    return m;
  };
  d.reference = index_map_reference;
  d.layout = map_layout;

  return d;
}

OpDef expand_op() {
  OpDef d = movement_op("Expand", 8, 2, 2);
  d.kind = FusionKind::Broadcast;
  d.shape_inputs = {1};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    if (ctx.dtype(1) != DType::Int64) ctx.fail("shape (input 1) must be int64");
    std::vector<int64_t> shape = int_list(ctx, 1, "shape");
    for (int64_t v : shape)
      if (v < 0) ctx.fail(fmt::format("shape {} has a negative dimension", shape_str(shape)));
    ctx.set_shape(0, broadcast_shapes(ctx, {ctx.shape(0), shape}));
  };
  // numpy broadcasting: size-1 dims of the input read coordinate 0.
  d.index_map = [](const IndexMapArgs& a) {
    const Shape& in = a.shapes.at(0);
    const size_t off = a.out_shape.size() - in.size();
    IndexMap m;
    std::vector<IndexId> c;
    for (size_t d = 0; d < in.size(); ++d) c.push_back(in[d] == 1 ? m.lit(0) : m.coord(off + d));
    m.add_region(IndexMap::kAlways, {0, c});
    return m;
  };
  d.reference = index_map_reference;

  d.layout = map_layout;

  return d;
}

OpDef tile_op() {
  OpDef d = movement_op("Tile", 6, 2, 2);
  d.shape_inputs = {1};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    if (ctx.dtype(1) != DType::Int64) ctx.fail("repeats (input 1) must be int64");
    std::vector<int64_t> reps = int_list(ctx, 1, "repeats");
    const Shape& in = ctx.shape(0);
    if (reps.size() != in.size())
      ctx.fail(fmt::format("repeats [{}] has {} entries for an input of rank {}",
                           fmt::join(reps, ","), reps.size(), in.size()));
    Shape out(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (reps[i] < 0)
        ctx.fail(fmt::format("repeats [{}] has a negative entry", fmt::join(reps, ",")));
      out[i] = checked_mul(ctx.node(), in[i], reps[i], "the output dimension");
    }
    ctx.set_shape(0, out);
  };
  // The input repeats along each dim: output coordinate o reads o mod the input's size.
  d.index_map = [](const IndexMapArgs& a) {
    const Shape& in = a.shapes.at(0);
    IndexMap m;
    std::vector<IndexId> c;
    for (size_t d = 0; d < in.size(); ++d)
      c.push_back(in[d] == a.out_shape[d] ? m.coord(d) : m.mod(m.coord(d), m.lit(in[d])));
    m.add_region(IndexMap::kAlways, {0, c});
    return m;
  };
  d.reference = index_map_reference;

  return d;
}

// ---- Concat, Split ---------------------------------------------------------------------
OpDef concat_op() {
  OpDef d = movement_op("Concat", 1, 1, -1);
  d.attrs = {attr_req("axis", AttrType::Int)};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.dtype(i) != ctx.dtype(0))
        ctx.fail(fmt::format("input {} is {}, but input 0 is {}", i, dtype_name(ctx.dtype(i)),
                             dtype_name(ctx.dtype(0))));
    const Shape& s0 = ctx.shape(0);
    int64_t axis = ctx.axis(ctx.node().attr_int("axis"), static_cast<int64_t>(s0.size()));
    Shape out = s0;
    out[axis] = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Shape& s = ctx.shape(i);
      bool same = s.size() == s0.size();
      for (size_t k = 0; same && k < s.size(); ++k)
        same = static_cast<int64_t>(k) == axis || s[k] == s0[k];
      if (!same)
        ctx.fail(
            fmt::format("input {} of shape {} does not match input 0 of shape {} outside axis {}",
                        i, shape_str(s), shape_str(s0), axis));
      out[axis] = checked_add(ctx.node(), out[axis], s[axis], "the concatenated dimension");
    }
    ctx.set_shape(0, out);
  };
  // Input i covers [at, at + size) of the axis; the last one whatever is left.
  d.index_map = [](const IndexMapArgs& a) {
    int64_t axis = a.node.attr_int("axis");
    if (axis < 0) axis += static_cast<int64_t>(a.out_shape.size());
    const size_t ax = static_cast<size_t>(axis);
    IndexMap m;
    int64_t at = 0;
    for (size_t i = 0; i < a.shapes.size(); ++i) {
      std::vector<IndexId> c = m.coords(a.out_shape.size());
      c[ax] = m.sub(c[ax], m.lit(at));
      const int64_t size = a.shapes[i].at(ax);
      if (i + 1 == a.shapes.size()) {
        m.add_region(IndexMap::kAlways, {static_cast<int>(i), c});
      } else if (size != 0) {
        m.add_region(m.lt(m.coord(ax), m.lit(at + size)), {static_cast<int>(i), c});
        at += size;
      }
    }
    return m;
  };
  d.reference = index_map_reference;

  // Inputs take consecutive ranges of the axis: a chain of branches, each loading only
  // from the input whose range holds the coordinate.
  return d;
}

}  // namespace

// Sizes of Split's outputs along the axis of size `dim`.
std::vector<int64_t> split_sizes(const Node& n, int64_t dim, size_t outputs,
                                 const std::optional<std::vector<int64_t>>& split) {
  if (split && !split->empty()) {
    if (n.has_attr("num_outputs")) fail(n, "give either the split input or num_outputs, not both");
    if (split->size() != outputs)
      fail(n, fmt::format("split [{}] has {} entries for {} outputs", fmt::join(*split, ","),
                          split->size(), outputs));
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) fail(n, fmt::format("split [{}] has a negative entry", fmt::join(*split, ",")));
      sum = checked_add(n, sum, s, "the sum of split");
    }
    if (sum != dim)
      fail(n, fmt::format("split [{}] sums to {}, but the axis has size {}", fmt::join(*split, ","),
                          sum, dim));
    return *split;
  }
  int64_t k = static_cast<int64_t>(outputs);
  if (n.has_attr("num_outputs")) {  // opset 18: equal chunks, the last one smaller
    int64_t want = n.attr_int("num_outputs");
    if (want != k) fail(n, fmt::format("num_outputs is {}, but the node has {} outputs", want, k));
    int64_t chunk = dim / k + (dim % k != 0);
    int64_t last = dim - chunk * (k - 1);
    if (last < 0)
      fail(n, fmt::format(
                  "an axis of size {} cannot be split into {} chunks of {} with a smaller last one",
                  dim, k, chunk));
    std::vector<int64_t> sizes(outputs, chunk);
    sizes.back() = last;
    return sizes;
  }
  if (dim % k != 0)
    fail(n, fmt::format("an axis of size {} does not split evenly into {} outputs", dim, k));
  return std::vector<int64_t>(outputs, dim / k);
}

namespace {

OpDef split_op() {
  OpDef d = movement_op("Split", 1, 1, 2);
  d.max_outputs = 1 << 20;
  d.attrs = {attr_i("axis", 0), attr_opt("num_outputs", AttrType::Int),
             attr_opt("split", AttrType::Ints)};  // split: opsets before 13
  d.shape_inputs = {1};
  d.upgrade = [](Graph& g, NodeId n) { upgrade_attr(g, n, 13, "split", 1, DType::Int64); };
  d.infer = [](InferCtx& ctx) {
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_dtype(i, ctx.dtype(0));
    reject_attr(ctx, "split", 13, 1);
    const Shape& in = ctx.shape(0);
    int64_t axis = ctx.axis(ctx.node().attr_int("axis"), static_cast<int64_t>(in.size()));
    std::optional<std::vector<int64_t>> split;
    if (ctx.has_input(1)) {
      if (ctx.dtype(1) != DType::Int64) ctx.fail("split (input 1) must be int64");
      split = int_list(ctx, 1, "split");
    }
    std::vector<int64_t> sizes = split_sizes(ctx.node(), in[axis], ctx.num_outputs(), split);
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      Shape out = in;
      out[axis] = sizes[i];
      ctx.set_shape(i, out);
    }
  };
  // Output k is the axis's range starting after outputs 0 … k-1.
  d.index_map = [](const IndexMapArgs& a) {
    const Shape& in = a.shapes.at(0);
    int64_t axis = a.node.attr_int("axis");
    if (axis < 0) axis += static_cast<int64_t>(in.size());
    const size_t ax = static_cast<size_t>(axis);
    std::vector<int64_t> sizes =
        split_sizes(a.node, in.at(ax), a.node.outputs.size(), a.opt_list(1));
    int64_t at = 0;
    for (size_t i = 0; i < a.output; ++i) at += sizes[i];
    IndexMap m;
    std::vector<IndexId> c = m.coords(in.size());
    c[ax] = m.add(c[ax], m.lit(at));
    m.add_region(IndexMap::kAlways, {0, c});
    return m;
  };
  d.reference = index_map_reference;

  return d;
}

}  // namespace

std::vector<AxisRange> slice_ranges(const Node& n, const Shape& in,
                                    const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& ends,
                                    const std::optional<std::vector<int64_t>>& axes_in,
                                    const std::optional<std::vector<int64_t>>& steps_in) {
  int64_t rank = static_cast<int64_t>(in.size());
  size_t k = starts.size();
  if (ends.size() != k)
    fail(n, fmt::format("starts has {} entries but ends has {}", k, ends.size()));
  std::vector<int64_t> axes, steps(k, 1);
  if (axes_in) {
    axes = *axes_in;
    if (axes.size() != k)
      fail(n, fmt::format("starts has {} entries but axes has {}", k, axes.size()));
  } else {
    if (static_cast<int64_t>(k) > rank)
      fail(n, fmt::format("starts has {} entries for an input of rank {}", k, rank));
    for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps_in) {
    steps = *steps_in;
    if (steps.size() != k)
      fail(n, fmt::format("starts has {} entries but steps has {}", k, steps.size()));
  }
  std::vector<AxisRange> ranges(in.size());
  for (size_t d = 0; d < in.size(); ++d) ranges[d].size = in[d];
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < k; ++i) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank)
      fail(n, fmt::format("axis {} is out of range for rank {}", a, rank));
    if (a < 0) a += rank;
    if (seen[a]) fail(n, fmt::format("axes [{}] repeat an axis", fmt::join(axes, ",")));
    seen[a] = true;
    int64_t step = steps[i];
    if (step == 0) fail(n, "steps must not be 0");
    int64_t dim = in[a];
    AxisRange& r = ranges[a];
    r.step = step;
    if (dim == 0) {
      r.start = 0;
      r.size = 0;
      continue;
    }
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      r.size = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      uint64_t back = 0 - static_cast<uint64_t>(step);  // |step|, also for INT64_MIN
      r.size = s > e ? static_cast<int64_t>(static_cast<uint64_t>(s - e - 1) / back) + 1 : 0;
    }
    r.start = s;
  }
  return ranges;
}

namespace {

OpDef slice_op() {
  OpDef d = movement_op("Slice", 1, 3, 5);
  // Opsets before 10 give starts, ends and axes as attributes.
  d.attrs = {attr_opt("starts", AttrType::Ints), attr_opt("ends", AttrType::Ints),
             attr_opt("axes", AttrType::Ints)};
  d.shape_inputs = {1, 2, 3, 4};
  d.upgrade = [](Graph& g, NodeId n) {
    upgrade_attr(g, n, 10, "starts", 1, DType::Int64);
    upgrade_attr(g, n, 10, "ends", 2, DType::Int64);
    upgrade_attr(g, n, 10, "axes", 3, DType::Int64);
  };
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    reject_attr(ctx, "starts", 10, 1);
    reject_attr(ctx, "ends", 10, 2);
    reject_attr(ctx, "axes", 10, 3);
    std::vector<int64_t> starts = int_list(ctx, 1, "starts");
    std::vector<int64_t> ends = int_list(ctx, 2, "ends");
    std::optional<std::vector<int64_t>> axes, steps;
    if (ctx.has_input(3)) axes = int_list(ctx, 3, "axes");
    if (ctx.has_input(4)) steps = int_list(ctx, 4, "steps");
    Shape out;
    for (const AxisRange& r : slice_ranges(ctx.node(), ctx.shape(0), starts, ends, axes, steps))
      out.push_back(r.size);
    ctx.set_shape(0, out);
  };
  d.index_map = [](const IndexMapArgs& a) {
    std::vector<AxisRange> ranges =
        slice_ranges(a.node, a.shapes.at(0), a.list(1), a.list(2), a.opt_list(3), a.opt_list(4));
    IndexMap m;
    std::vector<IndexId> c = m.coords(ranges.size());
    for (size_t d = 0; d < ranges.size(); ++d)
      if (ranges[d].start != 0 || ranges[d].step != 1)
        c[d] = m.add(m.lit(ranges[d].start), m.mul(c[d], m.lit(ranges[d].step)));
    m.add_region(IndexMap::kAlways, {0, c});
    return m;
  };
  d.reference = index_map_reference;

  d.layout = map_layout;

  return d;
}

}  // namespace

// Negative pads crop first; reflect, edge and wrap then extend what is left of the axis.
PadSpec pad_spec(const Node& n, const Shape& in, const std::vector<int64_t>& pads,
                 const std::optional<std::vector<int64_t>>& axes_in) {
  PadSpec p;
  std::string mode = n.attr_string("mode");
  if (mode == "constant")
    p.mode = PadMode::Constant;
  else if (mode == "reflect")
    p.mode = PadMode::Reflect;
  else if (mode == "edge")
    p.mode = PadMode::Edge;
  else if (mode == "wrap" && (n.opset == 0 || n.opset >= 19))
    p.mode = PadMode::Wrap;
  else
    fail(n, fmt::format("mode \"{}\" is not one of constant, reflect, edge{}", mode,
                        n.opset == 0 || n.opset >= 19 ? ", wrap" : " (wrap needs opset 19)"));
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (axes_in) {
    axes = *axes_in;
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    fail(n, fmt::format("pads [{}] has {} entries; {} axes need {}", fmt::join(pads, ","),
                        pads.size(), axes.size(), 2 * axes.size()));
  p.begin.assign(in.size(), 0);
  p.end.assign(in.size(), 0);
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank)
      fail(n, fmt::format("axis {} is out of range for rank {}", a, rank));
    if (a < 0) a += rank;
    if (seen[a]) fail(n, fmt::format("axes [{}] repeat an axis", fmt::join(axes, ",")));
    seen[a] = true;
    p.begin[a] = pads[i];
    p.end[a] = pads[i + axes.size()];
  }
  p.out.resize(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t dim = in[d], b = p.begin[d], e = p.end[d];
    if (b < -dim || e < -dim)
      fail(n, fmt::format("pads [{}] crop more than axis {} of size {} holds", fmt::join(pads, ","),
                          d, dim));
    int64_t out =
        checked_add(n, checked_add(n, dim, b, "the padded dimension"), e, "the padded dimension");
    if (out < 0)
      fail(n, fmt::format("pads [{}] crop axis {} of size {} to a negative size",
                          fmt::join(pads, ","), d, dim));
    int64_t kept = dim - std::max<int64_t>(0, -b) - std::max<int64_t>(0, -e);
    if (p.mode != PadMode::Constant && kept <= 0 && out > 0)
      fail(n, fmt::format("mode \"{}\" cannot pad axis {}: no input elements are left on it", mode,
                          d));
    p.out[d] = out;
  }
  return p;
}

namespace {

// For output index o along an axis: the input index it copies, or -1 for the constant.
// Output coordinate o of an axis reads x = o - begin; the input's range left after cropping is
// [lo, hi). Outside it: the constant (its own region), the nearest edge, the range repeated
// (wrap), or the range mirrored without repeating its ends (reflect).
IndexId pad_source(IndexMap& m, PadMode mode, IndexId x, int64_t lo, int64_t hi) {
  const int64_t size = hi - lo;
  switch (mode) {
    case PadMode::Constant:
      return x;
    case PadMode::Edge:
      return m.select(m.lt(x, m.lit(lo)), m.lit(lo),
                      m.select(m.ge(x, m.lit(hi)), m.lit(hi - 1), x));
    case PadMode::Wrap:
      return m.add(m.lit(lo),
                   m.mod(m.add(m.mod(m.sub(x, m.lit(lo)), m.lit(size)), m.lit(size)), m.lit(size)));
    case PadMode::Reflect: {
      if (size == 1) return m.lit(lo);
      const int64_t period = 2 * (size - 1);
      IndexId y = m.temp(
          m.mod(m.add(m.mod(m.sub(x, m.lit(lo)), m.lit(period)), m.lit(period)), m.lit(period)));
      return m.add(m.lit(lo), m.select(m.lt(y, m.lit(size)), y, m.sub(m.lit(period), y)));
    }
  }
  return x;
}

IndexMap pad_map(const IndexMapArgs& a) {
  const Shape& in = a.shapes.at(0);
  const PadSpec p = pad_spec(a.node, in, a.list(1), a.opt_list(3));
  IndexMap m;
  std::vector<IndexId> src(in.size()), inside;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t dim = in[d], b = p.begin[d], e = p.end[d];
    const int64_t lo = std::max<int64_t>(0, -b), hi = dim - std::max<int64_t>(0, -e);
    IndexId x = m.temp(m.sub(m.coord(d), m.lit(b)));
    src[d] = pad_source(m, p.mode, x, lo, hi);
    if (p.mode == PadMode::Constant && (b > 0 || e > 0 || lo > 0 || hi < dim)) {
      inside.push_back(m.ge(x, m.lit(lo)));
      inside.push_back(m.lt(x, m.lit(hi)));
    }
  }
  if (inside.empty()) {
    m.add_region(IndexMap::kAlways, {0, src});
    return m;
  }
  m.add_region(m.all(inside), {0, src});
  if (a.has(2)) {
    std::vector<IndexId> zeros;
    for (size_t d = 0; d < a.shapes[2].size(); ++d) zeros.push_back(m.lit(0));
    m.add_region(IndexMap::kAlways, {2, zeros});
  } else {
    m.add_region(IndexMap::kAlways, {IndexSource::kZero, {}});
  }
  return m;
}

OpDef pad_op() {
  OpDef d = movement_op("Pad", 1, 1, 4);
  // Opsets before 11 give pads and value as attributes.
  d.attrs = {attr_s("mode", "constant"), attr_opt("pads", AttrType::Ints),
             attr_opt("value", AttrType::Float)};
  d.shape_inputs = {1, 2, 3};
  d.upgrade = [](Graph& g, NodeId n) {
    const Node& node = g.node(n);
    if (!node.has_input(0)) return;  // arity is checked at inference
    DType dt = g.value(node.inputs[0]).dtype;
    upgrade_attr(g, n, 11, "pads", 1, DType::Int64);
    upgrade_attr(g, n, 11, "value", 2, dt);
  };
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    reject_attr(ctx, "pads", 11, 1);
    reject_attr(ctx, "value", 11, 2);
    if (!ctx.has_input(1)) ctx.fail("pads are required");
    if (ctx.dtype(1) != DType::Int64) ctx.fail("pads (input 1) must be int64");
    if (ctx.has_input(2) && ctx.dtype(2) != ctx.dtype(0))
      ctx.fail(fmt::format("constant_value is {}, but the input is {}", dtype_name(ctx.dtype(2)),
                           dtype_name(ctx.dtype(0))));
    std::vector<int64_t> pads = int_list(ctx, 1, "pads");
    std::optional<std::vector<int64_t>> axes;
    if (ctx.has_input(3)) axes = int_list(ctx, 3, "axes");
    ctx.set_shape(0, pad_spec(ctx.node(), ctx.shape(0), pads, axes).out);
    if (ctx.has_input(2) && checked_numel(ctx.shape(2)) != 1)
      ctx.fail(fmt::format("constant_value must hold one element, not shape {}",
                           shape_str(ctx.shape(2))));
  };
  d.index_map = pad_map;
  d.reference = index_map_reference;

  return d;
}

// ---- DepthToSpace, SpaceToDepth --------------------------------------------------------
int64_t block_size(const InferCtx& ctx) {
  int64_t b = ctx.node().attr_int("blocksize");
  if (b < 1) ctx.fail(fmt::format("blocksize {} must be positive", b));
  if (ctx.rank(0) != 4)
    ctx.fail(fmt::format("the input must be 4-D [N,C,H,W], not {}", shape_str(ctx.shape(0))));
  return b;
}

}  // namespace

bool crd_mode(const Node& n) {
  std::string mode = n.attr_string("mode");
  if (mode != "DCR" && mode != "CRD") fail(n, fmt::format("mode \"{}\" is not DCR or CRD", mode));
  return mode == "CRD";
}

namespace {

OpDef depth_to_space_op() {
  OpDef d = movement_op("DepthToSpace", 1, 1, 1);
  d.attrs = {attr_req("blocksize", AttrType::Int), attr_s("mode", "DCR")};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    crd_mode(ctx.node());
    int64_t b = block_size(ctx);
    const Shape& in = ctx.shape(0);
    int64_t bb = checked_mul(ctx.node(), b, b, "blocksize squared");
    if (in[1] % bb != 0)
      ctx.fail(fmt::format("channels {} are not a multiple of blocksize² = {}", in[1], bb));
    ctx.set_shape(0, {in[0], in[1] / bb, checked_mul(ctx.node(), in[2], b, "the output height"),
                      checked_mul(ctx.node(), in[3], b, "the output width")});
  };
  // Output (n, c, h, w) comes from input (n, channel, h / b, w / b), i = h mod b and j = w mod b
  // picking the channel: (i·b + j)·C' + c in DCR mode and c·b² + i·b + j in CRD mode.
  d.index_map = [](const IndexMapArgs& a) {
    const int64_t b = a.node.attr_int("blocksize"), cout = a.out_shape.at(1);
    IndexMap m;
    std::vector<IndexId> c = m.coords(4);
    IndexId i = m.temp(m.mod(c[2], m.lit(b))), j = m.temp(m.mod(c[3], m.lit(b)));
    IndexId ch = crd_mode(a.node) ? m.add(m.add(m.mul(c[1], m.lit(b * b)), m.mul(i, m.lit(b))), j)
                                  : m.add(m.mul(m.add(m.mul(i, m.lit(b)), j), m.lit(cout)), c[1]);
    m.add_region(IndexMap::kAlways, {0, {c[0], ch, m.div(c[2], m.lit(b)), m.div(c[3], m.lit(b))}});
    return m;
  };
  d.reference = index_map_reference;

  return d;
}

OpDef space_to_depth_op() {
  OpDef d = movement_op("SpaceToDepth", 1, 1, 1);
  d.attrs = {attr_req("blocksize", AttrType::Int)};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    int64_t b = block_size(ctx);
    const Shape& in = ctx.shape(0);
    if (in[2] % b != 0 || in[3] % b != 0)
      ctx.fail(fmt::format("height and width of {} are not multiples of blocksize {}",
                           shape_str(in), b));
    int64_t bb = checked_mul(ctx.node(), b, b, "blocksize squared");
    ctx.set_shape(0, {in[0], checked_mul(ctx.node(), in[1], bb, "the output channels"), in[2] / b,
                      in[3] / b});
  };
  // Output channel (i·b + j)·C + c at (h, w) comes from input (n, c, h·b + i, w·b + j).
  d.index_map = [](const IndexMapArgs& a) {
    const int64_t b = a.node.attr_int("blocksize"), cin = a.shapes.at(0).at(1);
    IndexMap m;
    std::vector<IndexId> c = m.coords(4);
    IndexId i = m.temp(m.div(c[1], m.lit(b * cin)));
    IndexId j = m.temp(m.mod(m.div(c[1], m.lit(cin)), m.lit(b)));
    m.add_region(IndexMap::kAlways,
                 {0,
                  {c[0], m.mod(c[1], m.lit(cin)), m.add(m.mul(c[2], m.lit(b)), i),
                   m.add(m.mul(c[3], m.lit(b)), j)}});
    return m;
  };
  d.reference = index_map_reference;

  return d;
}

// ---- Trilu -----------------------------------------------------------------------------
OpDef trilu_op() {
  OpDef d = movement_op("Trilu", 14, 1, 2);
  d.attrs = {attr_i("upper", 1)};
  d.shape_inputs = {1};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    if (ctx.rank(0) < 2)
      ctx.fail(fmt::format("the input must have rank 2 or more, not {}", shape_str(ctx.shape(0))));
    if (ctx.has_input(1)) {
      if (ctx.dtype(1) != DType::Int64) ctx.fail("k (input 1) must be int64");
      const Tensor* k = ctx.value(1);
      if (k && (k->numel() != 1 || k->rank() > 1))
        ctx.fail(fmt::format("k must be a scalar, not of shape {}", shape_str(k->shape())));
    }
    ctx.set_shape(0, ctx.shape(0));
  };
  // Upper keeps elements with column - row >= k, lower those with column - row <= k.
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (y.nbytes()) std::memset(y.raw(), 0, y.nbytes());
    int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
    if (rows == 0 || cols == 0) return;
    bool upper = ctx.node().attr_int("upper") != 0;
    int64_t k = ctx.has_input(1) ? ctx.input(1).get_i64(0) : 0;
    k = std::clamp<int64_t>(k, -rows - 1, cols + 1);  // beyond these every row is all or nothing
    size_t es = dtype_size(x.dtype());
    for (int64_t m = 0, mats = x.numel() / (rows * cols); m < mats; ++m) {
      for (int64_t i = 0; i < rows; ++i) {
        int64_t lo = upper ? std::max<int64_t>(0, i + k) : 0;
        int64_t hi = upper ? cols : std::min<int64_t>(cols, i + k + 1);
        if (lo >= hi) continue;
        int64_t at = (m * rows + i) * cols + lo;
        std::memcpy(static_cast<unsigned char*>(y.raw()) + at * es,
                    static_cast<const unsigned char*>(x.raw()) + at * es,
                    static_cast<size_t>(hi - lo) * es);
      }
    }
  };
  return d;
}

}  // namespace

void register_movement_ops(std::vector<OpDef>& r) {
  r.push_back(reshape_op());
  r.push_back(flatten_op());
  r.push_back(squeeze_op());
  r.push_back(unsqueeze_op());
  r.push_back(transpose_op());
  r.push_back(expand_op());
  r.push_back(tile_op());
  r.push_back(concat_op());
  r.push_back(split_op());
  r.push_back(slice_op());
  r.push_back(pad_op());
  r.push_back(depth_to_space_op());
  r.push_back(space_to_depth_op());
  r.push_back(trilu_op());
  r.push_back(swap_pairs_op());
}

}  // namespace braze::graph
