// Data-movement ops: Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Expand, Concat, Split,
// Slice, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu. They move elements without looking
// at their values, so every dtype is accepted and the reference copies raw bytes; most of
// them are one strided n-d copy (copy_box) whose strides say how output indices map to
// input elements.
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

std::optional<std::vector<int64_t>> opt_list(const RefCtx& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  return ctx.input(i).to_int64s();
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

const unsigned char* bytes(const Tensor& t) { return static_cast<const unsigned char*>(t.raw()); }
unsigned char* bytes(Tensor& t) { return static_cast<unsigned char*>(t.raw()); }

// A tensor seen through an element offset and one stride per dimension of a box.
struct View {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

View contiguous(const Shape& shape) { return {0, contiguous_strides(shape)}; }

// Copies the box of extent `box`: element idx goes from src[s.offset + idx·s.strides] to
// dst[d.offset + idx·d.strides]. Runs contiguous in both are copied with one memcpy.
void copy_box(const Tensor& src, const View& s, Tensor& dst, const View& d, const Shape& box) {
  int64_t n = checked_numel(box);
  if (n == 0) return;
  size_t es = dtype_size(src.dtype());
  const unsigned char* sp = bytes(src);
  unsigned char* dp = bytes(dst);
  size_t r = box.size();
  if (r == 0) {
    std::memcpy(dp + d.offset * es, sp + s.offset * es, es);
    return;
  }
  int64_t inner = box[r - 1];
  int64_t ss = s.strides[r - 1], ds = d.strides[r - 1];
  bool run = ss == 1 && ds == 1;
  std::vector<int64_t> idx(r - 1, 0);
  int64_t so = s.offset, dof = d.offset;
  for (int64_t k = 0, outer = n / inner; k < outer; ++k) {
    if (run) {
      std::memcpy(dp + dof * es, sp + so * es, static_cast<size_t>(inner) * es);
    } else {
      for (int64_t j = 0; j < inner; ++j)
        std::memcpy(dp + (dof + j * ds) * es, sp + (so + j * ss) * es, es);
    }
    for (size_t a = r - 1; a-- > 0;) {
      ++idx[a];
      so += s.strides[a];
      dof += d.strides[a];
      if (idx[a] < box[a]) break;
      so -= s.strides[a] * box[a];
      dof -= d.strides[a] * box[a];
      idx[a] = 0;
    }
  }
}

// For ops whose output is the input's elements in the same order (Reshape, Flatten …).
void copy_all(RefCtx& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
}

// The layout of an op whose output holds input 0's elements in the same order.
std::optional<Layout> same_order_layout(const Graph& g, const Node& n, const Layout& in) {
  return reshape_layout(in, g.value(n.outputs[0]).shape);
}

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
  d.reference = copy_all;
  d.layout = same_order_layout;
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
  d.reference = copy_all;
  d.layout = same_order_layout;
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
  d.reference = copy_all;
  d.layout = same_order_layout;
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
  d.reference = copy_all;
  d.layout = same_order_layout;
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
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    std::vector<int64_t> st = contiguous_strides(x.shape());
    View s;
    for (int64_t p : transpose_perm(ctx.node(), x.rank())) s.strides.push_back(st[p]);
    copy_box(x, s, y, contiguous(y.shape()), y.shape());
  };
  d.layout = [](const Graph&, const Node& n, const Layout& in) -> std::optional<Layout> {
    return transpose_layout(in, transpose_perm(n, static_cast<int64_t>(in.dims.size())));
  };
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
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    copy_box(x, View{0, broadcast_strides(x.shape(), y.shape())}, y, contiguous(y.shape()),
             y.shape());
  };
  d.layout = [](const Graph& g, const Node& n, const Layout& in) {
    return expand_layout(in, g.value(n.outputs[0]).shape);
  };
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
  // The output seen as [r0, d0, r1, d1, …]: the input repeats along each r axis.
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    std::vector<int64_t> xs = contiguous_strides(x.shape()), ys = contiguous_strides(y.shape());
    Shape box;
    View s, dv;
    for (size_t i = 0; i < x.shape().size(); ++i) {
      int64_t dim = x.shape()[i];
      box.insert(box.end(), {dim ? y.shape()[i] / dim : 0, dim});
      s.strides.insert(s.strides.end(), {0, xs[i]});
      dv.strides.insert(dv.strides.end(), {dim * ys[i], ys[i]});
    }
    copy_box(x, s, y, dv, box);
  };
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
  d.reference = [](RefCtx& ctx) {
    Tensor& y = ctx.output(0);
    int64_t r = y.rank();
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += r;
    std::vector<int64_t> ys = contiguous_strides(y.shape());
    int64_t at = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      copy_box(x, contiguous(x.shape()), y, View{at * ys[axis], ys}, x.shape());
      at += x.shape()[axis];
    }
  };
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
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += x.rank();
    std::vector<int64_t> sizes =
        split_sizes(ctx.node(), x.shape()[axis], ctx.num_outputs(), opt_list(ctx, 1));
    std::vector<int64_t> xs = contiguous_strides(x.shape());
    int64_t at = 0;
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      if (ctx.has_output(i)) {
        Tensor& y = ctx.output(i);
        copy_box(x, View{at * xs[axis], xs}, y, contiguous(y.shape()), y.shape());
      }
      at += sizes[i];
    }
  };
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
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    std::vector<AxisRange> ranges =
        slice_ranges(ctx.node(), x.shape(), ctx.input(1).to_int64s(), ctx.input(2).to_int64s(),
                     opt_list(ctx, 3), opt_list(ctx, 4));
    if (y.numel() == 0) return;
    std::vector<int64_t> xs = contiguous_strides(x.shape());
    View s;
    for (size_t i = 0; i < ranges.size(); ++i) {
      s.offset += ranges[i].start * xs[i];
      // |step| <= dim whenever two or more elements are taken, so the product cannot overflow.
      s.strides.push_back(ranges[i].size > 1 ? ranges[i].step * xs[i] : 0);
    }
    copy_box(x, s, y, contiguous(y.shape()), y.shape());
  };
  d.layout = [](const Graph& g, const Node& n, const Layout& in) -> std::optional<Layout> {
    auto list = [&](size_t i) -> std::optional<std::vector<int64_t>> {
      if (!n.has_input(i)) return std::nullopt;
      const Value& v = g.value(n.inputs[i]);
      if (!v.constant) return std::nullopt;
      return v.constant->to_int64s();
    };
    std::optional<std::vector<int64_t>> starts = list(1), ends = list(2);
    if (!starts || !ends || (n.has_input(3) && !list(3)) || (n.has_input(4) && !list(4)))
      return std::nullopt;
    std::optional<Layout> out = in;
    const std::vector<AxisRange> ranges =
        slice_ranges(n, in.shape(), *starts, *ends, list(3), list(4));
    for (size_t d = 0; d < ranges.size() && out; ++d)
      if (ranges[d].start != 0 || ranges[d].step != 1 || ranges[d].size != in.shape()[d])
        out = slice_layout(*out, d, ranges[d].start, ranges[d].size, ranges[d].step);
    return out;
  };
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
int64_t pad_source(PadMode mode, int64_t o, int64_t dim, int64_t b, int64_t e) {
  int64_t lo = std::max<int64_t>(0, -b), hi = dim - std::max<int64_t>(0, -e);
  int64_t x = o - b;
  if (x >= lo && x < hi) return x;
  int64_t m = hi - lo;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return x < lo ? lo : hi - 1;
    case PadMode::Wrap:
      return lo + ((x - lo) % m + m) % m;
    case PadMode::Reflect: {
      if (m == 1) return lo;
      int64_t period = 2 * (m - 1);
      int64_t y = ((x - lo) % period + period) % period;
      return lo + (y < m ? y : period - y);
    }
  }
  return -1;
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
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    // Before building the index maps: a zero-size output may still be huge along one axis.
    if (y.numel() == 0) return;
    PadSpec p = pad_spec(ctx.node(), x.shape(), ctx.input(1).to_int64s(), opt_list(ctx, 3));
    size_t r = x.shape().size();
    std::vector<std::vector<int64_t>> src(r);  // per axis: output index -> input index or -1
    for (size_t a = 0; a < r; ++a) {
      src[a].resize(static_cast<size_t>(p.out[a]));
      for (int64_t o = 0; o < p.out[a]; ++o)
        src[a][o] = pad_source(p.mode, o, x.shape()[a], p.begin[a], p.end[a]);
    }
    size_t es = dtype_size(x.dtype());
    std::vector<unsigned char> fill(es, 0);
    if (ctx.has_input(2)) std::memcpy(fill.data(), ctx.input(2).raw(), es);
    std::vector<int64_t> xs = contiguous_strides(x.shape());
    const unsigned char* in = bytes(x);
    unsigned char* out = bytes(y);
    int64_t inner = r ? p.out[r - 1] : 1;
    std::vector<int64_t> idx(r ? r - 1 : 0, 0);
    for (int64_t k = 0, o = 0, outer = y.numel() / inner; k < outer; ++k) {
      int64_t base = 0;
      bool padding_row = false;
      for (size_t a = 0; a + 1 < r; ++a) {
        int64_t s = src[a][idx[a]];
        if (s < 0)
          padding_row = true;
        else
          base += s * xs[a];
      }
      for (int64_t j = 0; j < inner; ++j, ++o) {
        int64_t s = r ? src[r - 1][j] : 0;
        if (padding_row || s < 0)
          std::memcpy(out + o * es, fill.data(), es);
        else
          std::memcpy(out + o * es, in + (base + s * (r ? xs[r - 1] : 0)) * es, es);
      }
      for (size_t a = idx.size(); a-- > 0;) {
        if (++idx[a] < p.out[a]) break;
        idx[a] = 0;
      }
    }
  };
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
  // The output seen as [N, C', H, b, W, b]; element (n, c, h, i, w, j) comes from channel
  // (i·b + j)·C' + c in DCR mode and c·b² + i·b + j in CRD mode.
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    int64_t b = ctx.node().attr_int("blocksize");
    int64_t n = x.shape()[0], c = y.shape()[1], h = x.shape()[2], w = x.shape()[3];
    int64_t hw = h * w;
    View s;
    if (crd_mode(ctx.node()))
      s.strides = {b * b * c * hw, b * b * hw, w, b * hw, 1, hw};
    else
      s.strides = {b * b * c * hw, hw, w, b * c * hw, 1, c * hw};
    Shape box{n, c, h, b, w, b};
    copy_box(x, s, y, contiguous(box), box);
  };
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
  // The output seen as [N, b, b, C, H/b, W/b]; element (n, i, j, c, h, w) comes from
  // input (n, c, h·b + i, w·b + j).
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    int64_t b = ctx.node().attr_int("blocksize");
    int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
    View s{0, {c * h * w, w, 1, h * w, b * w, b}};
    Shape box{n, b, b, c, h / b, w / b};
    copy_box(x, s, y, contiguous(box), box);
  };
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
        std::memcpy(bytes(y) + at * es, bytes(x) + at * es, static_cast<size_t>(hi - lo) * es);
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
}

}  // namespace braze::graph
