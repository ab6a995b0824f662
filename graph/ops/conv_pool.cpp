// Sliding-window ops over N-D spatial data laid out [N, C, D1, ..., Dn]: Conv, ConvTranspose,
// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.
//
// Along each spatial axis a window of `kernel` taps, `dilation` apart, starts at
// out_index * stride - pad_begin. Window geometry (output sizes, the pads auto_pad implies)
// is computed by window_geometry (Conv, pools) and conv_transpose_shapes, which inference,
// the reference and the GPU index maps (one thread per output element) share.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "graph/ops/families.h"
#include "graph/ops/helpers.h"
#include "graph/ops/conv_pool.h"

namespace braze::graph {
namespace {

using namespace ops;

[[noreturn]] void fail_node(const Node& n, const std::string& msg) {
  throw UserError(fmt::format("{}: {}", n.describe(), msg));
}

// Attribute values are arbitrary int64s: arithmetic on them is checked.
int64_t add_ck(const Node& n, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail_node(n, "attribute values overflow 64-bit sizes");
  return r;
}
int64_t mul_ck(const Node& n, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail_node(n, "attribute values overflow 64-bit sizes");
  return r;
}

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

AutoPad auto_pad(const Node& n) {
  std::string s = n.attr_string("auto_pad");
  if (s == "NOTSET" || s.empty()) return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  fail_node(n,
            fmt::format("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, not \"{}\"", s));
}

// An ints attribute with one value per spatial axis (or `count` values), defaulting to `def`.
std::vector<int64_t> ints_attr(const Node& n, const char* name, size_t count, int64_t def,
                               int64_t min_value, const Shape& x) {
  if (!n.has_attr(name)) return std::vector<int64_t>(count, def);
  std::vector<int64_t> v = n.attr_ints(name);
  if (v.size() != count)
    fail_node(n, fmt::format("attribute '{}' has {} values, but X {} needs {}", name, v.size(),
                             shape_str(x), count));
  for (int64_t e : v)
    if (e < min_value)
      fail_node(n, fmt::format("attribute '{}' = [{}] must have values >= {}", name,
                               fmt::join(v, ","), min_value));
  return v;
}

// SAME_UPPER puts the odd one of a total padding at the end, SAME_LOWER at the beginning.
void split_same_padding(int64_t total, AutoPad ap, int64_t& begin, int64_t& end) {
  end = ap == AutoPad::SameLower ? total / 2 : total - total / 2;
  begin = total - end;
}

void check_rank(const Node& n, const Shape& x) {
  if (x.size() < 3)
    fail_node(n, fmt::format("X must have rank >= 3 ([N, C, spatial...]), got {}", shape_str(x)));
}

// WindowGeometry of a strided window sliding over X's spatial axes (Conv and the pools).
WindowGeometry window_geometry(const Node& n, const Shape& x, Shape kernel, bool ceil_mode) {
  size_t r = x.size() - 2;
  WindowGeometry g;
  g.in.assign(x.begin() + 2, x.end());
  g.kernel = std::move(kernel);
  g.stride = ints_attr(n, "strides", r, 1, 1, x);
  g.dilation = ints_attr(n, "dilations", r, 1, 1, x);
  AutoPad ap = auto_pad(n);
  std::vector<int64_t> pads = ints_attr(n, "pads", 2 * r, 0, 0, x);
  g.pad_begin.assign(r, 0);
  g.pad_end.assign(r, 0);
  g.out.assign(r, 0);
  for (size_t i = 0; i < r; ++i) {
    int64_t in = g.in[i], s = g.stride[i];
    int64_t ek = add_ck(n, mul_ck(n, g.kernel[i] - 1, g.dilation[i]), 1);  // effective kernel
    switch (ap) {
      // VALID is zero padding; ceil_mode applies to it too, as in ONNX's shape inference and
      // ONNX Runtime (the spec's VALID formula ignores ceil_mode).
      case AutoPad::NotSet:
      case AutoPad::Valid: {
        if (ap == AutoPad::Valid) pads[i] = pads[i + r] = 0;
        g.pad_begin[i] = pads[i];
        g.pad_end[i] = pads[i + r];
        int64_t padded = add_ck(n, in, add_ck(n, pads[i], pads[i + r]));
        if (ek > padded)
          fail_node(n,
                    fmt::format(
                        "the window (kernel {} dilated to {}) is larger than the padded input ({} "
                        "with pads {}+{}) along spatial axis {} of X {}",
                        g.kernel[i], ek, in, pads[i], pads[i + r], i, shape_str(x)));
        add_ck(n, add_ck(n, padded, ek), s);  // bounds every window position computed later
        int64_t span = padded - ek;
        g.out[i] = span / s + 1;
        if (ceil_mode && span % s != 0) {
          ++g.out[i];
          // A last window that would start in the end padding is dropped (as PyTorch does).
          if ((g.out[i] - 1) * s >= in + pads[i]) --g.out[i];
        }
        break;
      }
      case AutoPad::SameUpper:
      case AutoPad::SameLower: {
        g.out[i] = in == 0 ? 0 : (in - 1) / s + 1;
        int64_t total = std::max<int64_t>(0, add_ck(n, (g.out[i] - 1) * s, ek) - in);
        split_same_padding(total, ap, g.pad_begin[i], g.pad_end[i]);
        break;
      }
    }
  }
  return g;
}

// kernel_shape, when given, must agree with the weights' spatial dims.
Shape kernel_from_weights(const Node& n, const Shape& w) {
  Shape k(w.begin() + 2, w.end());
  for (int64_t d : k)
    if (d < 1) fail_node(n, fmt::format("weights W {} have an empty kernel", shape_str(w)));
  if (n.has_attr("kernel_shape") && n.attr_ints("kernel_shape") != k)
    fail_node(n, fmt::format("kernel_shape [{}] disagrees with the weights W {}",
                             fmt::join(n.attr_ints("kernel_shape"), ","), shape_str(w)));
  return k;
}

void check_dtypes(const InferCtx& ctx) {
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.dtype(i) != ctx.dtype(0))
      ctx.fail(fmt::format("input {} has dtype {}, but X has {}", i, dtype_name(ctx.dtype(i)),
                           dtype_name(ctx.dtype(0))));
}

void check_bias(const Node& n, const Shape* b, int64_t m) {
  if (b && (b->size() != 1 || (*b)[0] != m))
    fail_node(n, fmt::format("bias B {} must have shape [{}] (one value per output channel)",
                             shape_str(*b), m));
}

int64_t group_attr(const Node& n) {
  int64_t group = n.attr_int("group");
  if (group < 1) fail_node(n, fmt::format("group must be >= 1, got {}", group));
  return group;
}

// Calls f(idx) for every multi-index of `shape` in row-major order.
template <class F>
void for_each_index(const Shape& shape, F&& f) {
  for (int64_t d : shape)
    if (d == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    f(idx);
    size_t d = shape.size();
    while (d-- > 0) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

std::vector<std::vector<int64_t>> kernel_positions(const Shape& kernel) {
  std::vector<std::vector<int64_t>> pos;
  for_each_index(kernel, [&](const std::vector<int64_t>& k) { pos.push_back(k); });
  return pos;
}

// The taps of the window at output position `o` that land inside the input (not padding).
void window_taps(const WindowGeometry& g, const std::vector<std::vector<int64_t>>& kpos,
                 const std::vector<int64_t>& o, std::vector<WindowTap>& taps) {
  taps.clear();
  for (size_t kk = 0; kk < kpos.size(); ++kk) {
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < g.rank() && inside; ++d) {
      int64_t ip = o[d] * g.stride[d] + kpos[kk][d] * g.dilation[d] - g.pad_begin[d];
      inside = ip >= 0 && ip < g.in[d];
      off = off * g.in[d] + ip;
    }
    if (inside) taps.push_back({static_cast<int64_t>(kk), off});
  }
}

}  // namespace

ConvShapes conv_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b) {
  check_rank(node, x);
  if (w.size() != x.size())
    fail_node(node,
              fmt::format("weights W {} must have the rank of X {}", shape_str(w), shape_str(x)));
  ConvShapes s;
  s.group = group_attr(node);
  s.n = x[0];
  s.c = x[1];
  s.m = w[0];
  if (mul_ck(node, w[1], s.group) != s.c)
    fail_node(node,
              fmt::format("weights W {} with group {} expect {} input channels, but X {} has {}",
                          shape_str(w), s.group, w[1] * s.group, shape_str(x), s.c));
  if (s.m % s.group != 0)
    fail_node(node, fmt::format("weights W {} have {} output channels, not divisible by group {}",
                                shape_str(w), s.m, s.group));
  check_bias(node, b, s.m);
  s.g = window_geometry(node, x, kernel_from_weights(node, w), false);
  s.out = {s.n, s.m};
  s.out.insert(s.out.end(), s.g.out.begin(), s.g.out.end());
  return s;
}

namespace {

OpDef conv_op() {
  OpDef d;
  d.name = "Conv";
  d.since = 1;
  d.kind = FusionKind::Opaque;  // a kernel of its own (Gemm groups are MatMul and Gemm)
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.types = kFloatTypes;
  d.attrs = {attr_s("auto_pad", "NOTSET"),
             attr_opt("dilations", AttrType::Ints),
             attr_i("group", 1),
             attr_opt("kernel_shape", AttrType::Ints),
             attr_opt("pads", AttrType::Ints),
             attr_opt("strides", AttrType::Ints)};
  d.infer = [](InferCtx& ctx) {
    check_dtypes(ctx);
    ctx.set_dtype(0, ctx.dtype(0));
    const Shape* b = ctx.has_input(2) ? &ctx.shape(2) : nullptr;
    ctx.set_shape(0, conv_shapes(ctx.node(), ctx.shape(0), ctx.shape(1), b).out);
  };
  // On the GPU: for each tap of the window inside the input, the sum over the group's input
  // channels.
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    ConvShapes s = conv_shapes(ctx.node(), x.shape(), w.shape(), b ? &b->shape() : nullptr);
    const WindowGeometry& g = s.g;
    const int64_t cg = s.c / s.group, mg = s.m / s.group;
    const int64_t plane_in = checked_numel(g.in), plane_out = checked_numel(g.out);
    const int64_t ksize = checked_numel(g.kernel);
    auto kpos = kernel_positions(g.kernel);
    std::vector<WindowTap> taps;
    int64_t p = 0;  // flat output position in one plane
    for_each_index(g.out, [&](const std::vector<int64_t>& o) {
      window_taps(g, kpos, o, taps);
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t m = 0; m < s.m; ++m) {
          int64_t grp = m / mg;
          double acc = b ? b->get_f64(m) : 0.0;
          for (int64_t cl = 0; cl < cg; ++cl) {
            int64_t x0 = (n * s.c + grp * cg + cl) * plane_in;
            int64_t w0 = (m * cg + cl) * ksize;
            for (const WindowTap& t : taps) acc += x.get_f64(x0 + t.in) * w.get_f64(w0 + t.k);
          }
          y.set_f64((n * s.m + m) * plane_out + p, acc);
        }
      ++p;
    });
  };
  return d;
}

}  // namespace

// ---- ConvTranspose ---------------------------------------------------------------------
namespace {

// ConvTranspose's output_shape attribute as spatial dims (its [N, C, ...] form too); empty
// where the node has none.
std::vector<int64_t> output_shape_attr(const Node& node, const Shape& x) {
  if (!node.has_attr("output_shape")) return {};
  const size_t r = x.size() - 2;
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  if (out_shape.size() == x.size())
    out_shape.erase(out_shape.begin(), out_shape.begin() + 2);  // [N, C, ...] form
  if (out_shape.size() != r)
    fail_node(node, fmt::format("output_shape [{}] must give {} spatial dims for X {}",
                                fmt::join(node.attr_ints("output_shape"), ","), r, shape_str(x)));
  for (int64_t v : out_shape)
    if (v < 0)
      fail_node(node,
                fmt::format("output_shape [{}] has a negative dim", fmt::join(out_shape, ",")));
  return out_shape;
}

}  // namespace

// Each input element scatters W's window into the output at in_index * stride - pad_begin.
// The end pad comes out negative when output_shape asks for more than the scattered area;
// the rest is bias only.
ConvShapes conv_transpose_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b) {
  check_rank(node, x);
  if (w.size() != x.size())
    fail_node(node,
              fmt::format("weights W {} must have the rank of X {}", shape_str(w), shape_str(x)));
  ConvShapes s;
  s.group = group_attr(node);
  s.n = x[0];
  s.c = x[1];
  if (w[0] != s.c)
    fail_node(node, fmt::format("weights W {} expect {} input channels, but X {} has {}",
                                shape_str(w), w[0], shape_str(x), s.c));
  if (s.c % s.group != 0)
    fail_node(node, fmt::format("X {} has {} input channels, not divisible by group {}",
                                shape_str(x), s.c, s.group));
  s.m = mul_ck(node, w[1], s.group);
  check_bias(node, b, s.m);

  size_t r = x.size() - 2;
  WindowGeometry& g = s.g;
  g.in.assign(x.begin() + 2, x.end());
  g.kernel = kernel_from_weights(node, w);
  g.stride = ints_attr(node, "strides", r, 1, 1, x);
  g.dilation = ints_attr(node, "dilations", r, 1, 1, x);
  std::vector<int64_t> out_pad = ints_attr(node, "output_padding", r, 0, 0, x);
  AutoPad ap = auto_pad(node);
  g.pad_begin.assign(r, 0);
  g.pad_end.assign(r, 0);
  g.out.assign(r, 0);
  const std::vector<int64_t> out_shape = output_shape_attr(node, x);
  std::vector<int64_t> pads = ints_attr(node, "pads", 2 * r, 0, 0, x);
  for (size_t i = 0; i < r; ++i) {
    int64_t ek = add_ck(node, mul_ck(node, g.kernel[i] - 1, g.dilation[i]), 1);
    // Size of the full scattered output before padding is removed.
    int64_t full =
        add_ck(node, add_ck(node, mul_ck(node, g.stride[i], g.in[i] - 1), out_pad[i]), ek);
    if (!out_shape.empty() || ap == AutoPad::SameUpper || ap == AutoPad::SameLower) {
      // SAME aims at in * stride but never pads negatively (ONNX's shape inference and ONNX
      // Runtime agree; the spec's text says in * stride alone).
      g.out[i] =
          !out_shape.empty() ? out_shape[i] : std::min(full, mul_ck(node, g.in[i], g.stride[i]));
      int64_t total = full - g.out[i];
      // An output larger than the scattered area grows at the end, like output_padding, and
      // by less than a stride (as ONNX Runtime checks).
      if (total < 0 && out_shape.size() && g.out[i] - (full - out_pad[i]) >= g.stride[i])
        fail_node(node,
                  fmt::format(
                      "output_shape [{}] is too large for X {} and W {} with strides [{}]: spatial "
                      "axis {} can be at most {}",
                      fmt::join(out_shape, ","), shape_str(x), shape_str(w),
                      fmt::join(g.stride, ","), i, full - out_pad[i] + g.stride[i] - 1));
      // A smaller output crops the scattered area: the odd one at the end for SAME_UPPER, at
      // the beginning otherwise (ONNX's node tests and ONNX Runtime agree on this).
      g.pad_begin[i] = total < 0 ? 0 : ap == AutoPad::SameUpper ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
    } else if (ap == AutoPad::Valid) {
      g.out[i] = full;
    } else {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + r];
      g.out[i] = full - pads[i] - pads[i + r];
    }
    if (g.out[i] < 0)
      fail_node(
          node,
          fmt::format(
              "spatial axis {} of the output would have negative size {} (X {}, W {}, pads {}+{})",
              i, g.out[i], shape_str(x), shape_str(w), g.pad_begin[i], g.pad_end[i]));
  }
  s.out = {s.n, s.m};
  s.out.insert(s.out.end(), g.out.begin(), g.out.end());
  return s;
}

namespace {

OpDef conv_transpose_op() {
  OpDef d;
  d.name = "ConvTranspose";
  d.since = 1;
  d.kind = FusionKind::Opaque;  // a kernel of its own (Gemm groups are MatMul and Gemm)
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.types = kFloatTypes;
  d.attrs = {attr_s("auto_pad", "NOTSET"),
             attr_opt("dilations", AttrType::Ints),
             attr_i("group", 1),
             attr_opt("kernel_shape", AttrType::Ints),
             attr_opt("output_padding", AttrType::Ints),
             attr_opt("output_shape", AttrType::Ints),
             attr_opt("pads", AttrType::Ints),
             attr_opt("strides", AttrType::Ints)};
  d.infer = [](InferCtx& ctx) {
    check_dtypes(ctx);
    ctx.set_dtype(0, ctx.dtype(0));
    const Shape* b = ctx.has_input(2) ? &ctx.shape(2) : nullptr;
    ctx.set_shape(0, conv_transpose_shapes(ctx.node(), ctx.shape(0), ctx.shape(1), b).out);
  };
  // On the GPU each output element gathers what the reference scatters: tap k of input
  // position i lands on o = i * stride + k * dilation - pad_begin, so for each tap the input
  // position is (o + pad_begin - k * dilation) / stride when that divides exactly and lies
  // inside X; the sum runs over the group's input channels.
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    ConvShapes s =
        conv_transpose_shapes(ctx.node(), x.shape(), w.shape(), b ? &b->shape() : nullptr);
    const WindowGeometry& g = s.g;
    const int64_t cg = s.c / s.group, mg = s.m / s.group;
    const int64_t plane_in = checked_numel(g.in), plane_out = checked_numel(g.out);
    const int64_t ksize = checked_numel(g.kernel);
    auto kpos = kernel_positions(g.kernel);
    std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
    if (b)
      for (int64_t nm = 0; nm < s.n * s.m; ++nm)
        for (int64_t p = 0; p < plane_out; ++p)
          acc[static_cast<size_t>(nm * plane_out + p)] = b->get_f64(nm % s.m);
    std::vector<WindowTap> taps;  // here WindowTap::in is the offset in an output plane
    int64_t p = 0;                // flat input position in one plane
    for_each_index(g.in, [&](const std::vector<int64_t>& i) {
      taps.clear();
      for (size_t kk = 0; kk < kpos.size(); ++kk) {
        int64_t off = 0;
        bool inside = true;
        for (size_t dd = 0; dd < g.rank() && inside; ++dd) {
          int64_t op = i[dd] * g.stride[dd] + kpos[kk][dd] * g.dilation[dd] - g.pad_begin[dd];
          inside = op >= 0 && op < g.out[dd];
          off = off * g.out[dd] + op;
        }
        if (inside) taps.push_back({static_cast<int64_t>(kk), off});
      }
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t c = 0; c < s.c; ++c) {
          double xv = x.get_f64((n * s.c + c) * plane_in + p);
          int64_t grp = c / cg;
          for (int64_t ml = 0; ml < mg; ++ml) {
            int64_t w0 = (c * mg + ml) * ksize;
            int64_t y0 = (n * s.m + grp * mg + ml) * plane_out;
            for (const WindowTap& t : taps)
              acc[static_cast<size_t>(y0 + t.in)] += xv * w.get_f64(w0 + t.k);
          }
        }
      ++p;
    });
    for (int64_t o = 0; o < y.numel(); ++o) y.set_f64(o, acc[static_cast<size_t>(o)]);
  };
  return d;
}

}  // namespace

namespace {

// The kernel_shape attribute of a pool or Im2Col node over X: one value >= 1 per spatial axis.
Shape kernel_shape_attr(const Node& node, const Shape& x) {
  check_rank(node, x);
  Shape kernel = node.attr_ints("kernel_shape");
  if (kernel.size() != x.size() - 2)
    fail_node(node, fmt::format("kernel_shape [{}] must have one value per spatial axis of X {}",
                                fmt::join(kernel, ","), shape_str(x)));
  for (int64_t k : kernel)
    if (k < 1)
      fail_node(node,
                fmt::format("kernel_shape [{}] must have values >= 1", fmt::join(kernel, ",")));
  checked_numel(kernel, node.describe() + " kernel_shape");
  return kernel;
}

}  // namespace

PoolShapes pool_shapes(const Node& node, const Shape& x) {
  const Shape kernel = kernel_shape_attr(node, x);
  const size_t r = kernel.size();
  int64_t ceil_mode = node.attr_int("ceil_mode");
  if (ceil_mode != 0 && ceil_mode != 1)
    fail_node(node, fmt::format("ceil_mode must be 0 or 1, got {}", ceil_mode));
  PoolShapes s;
  s.n = x[0];
  s.c = x[1];
  s.g = window_geometry(node, x, kernel, ceil_mode != 0);
  // A pad as wide as the window would make windows of padding only, which have no max or mean.
  for (size_t i = 0; i < r; ++i) {
    int64_t ek = (s.g.kernel[i] - 1) * s.g.dilation[i] + 1;
    if (s.g.pad_begin[i] >= ek || s.g.pad_end[i] >= ek)
      fail_node(node,
                fmt::format("pads {}+{} along spatial axis {} must be smaller than the window ({})",
                            s.g.pad_begin[i], s.g.pad_end[i], i, ek));
  }
  s.out = {s.n, s.c};
  s.out.insert(s.out.end(), s.g.out.begin(), s.g.out.end());
  return s;
}

WindowGeometry im2col_geometry(const Node& node, const Shape& x) {
  Shape kernel = kernel_shape_attr(node, x);
  if (node.attr_int("transposed") == 0) return window_geometry(node, x, kernel, false);
  const size_t r = kernel.size();
  WindowGeometry g;
  g.in.assign(x.begin() + 2, x.end());
  g.kernel = std::move(kernel);
  g.stride = ints_attr(node, "strides", r, 1, 1, x);
  g.dilation = ints_attr(node, "dilations", r, 1, 1, x);
  const std::vector<int64_t> pads = ints_attr(node, "pads", 2 * r, 0, 0, x);
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(r));
  g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(r), pads.end());
  g.out = ints_attr(node, "output_spatial", r, 0, 0, x);
  return g;
}

namespace {

std::vector<AttrSpec> pool_attrs() {
  return {attr_s("auto_pad", "NOTSET"),          attr_i("ceil_mode", 0),
          attr_opt("dilations", AttrType::Ints), attr_req("kernel_shape", AttrType::Ints),
          attr_opt("pads", AttrType::Ints),      attr_opt("strides", AttrType::Ints)};
}

template <class C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(v);
  else
    return false;
}

template <class C>
C lowest() {
  if constexpr (std::is_floating_point_v<C>)
    return -std::numeric_limits<C>::infinity();
  else
    return std::numeric_limits<C>::lowest();
}

// The larger of best and v; NaN wins and stays, as in the element-wise Max.
template <class C>
bool takes_over(C v, C best, bool first) {
  if (first) return true;
  if (is_nan(best)) return false;
  return is_nan(v) || v > best;
}

OpDef max_pool_op() {
  OpDef d;
  d.name = "MaxPool";
  d.since = 1;
  d.kind = FusionKind::Opaque;
  d.max_outputs = 2;  // Indices, opset 8+
  d.types = kFloatTypes | DTypeSet{DType::Int8, DType::UInt8};
  d.attrs = pool_attrs();
  d.attrs.push_back(attr_i("storage_order", 0));
  d.infer = [](InferCtx& ctx) {
    int64_t so = ctx.node().attr_int("storage_order");
    if (so != 0 && so != 1) ctx.fail(fmt::format("storage_order must be 0 or 1, got {}", so));
    ctx.set_dtype(0, ctx.dtype(0));
    ctx.set_dtype(1, DType::Int64);
    Shape out = pool_shapes(ctx.node(), ctx.shape(0)).out;
    ctx.set_shape(0, out);
    ctx.set_shape(1, out);
  };
  // On the GPU: a running maximum over the taps inside X; Indices is a second loop for the
  // first tap holding that maximum, the one the reference keeps.
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    Tensor* indices = ctx.has_output(1) ? &ctx.output(1) : nullptr;
    bool col_major = ctx.node().attr_int("storage_order") == 1;
    PoolShapes s = pool_shapes(ctx.node(), x.shape());
    const WindowGeometry& g = s.g;
    const int64_t plane_in = checked_numel(g.in), plane_out = checked_numel(g.out);
    auto kpos = kernel_positions(g.kernel);
    // Column-major offset of a row-major in-plane offset, for storage_order = 1.
    auto col_offset = [&](int64_t row) {
      std::vector<int64_t> idx = unravel(row, g.in);
      int64_t off = 0, mult = 1;
      for (size_t dd = 0; dd < idx.size(); ++dd) {
        off += idx[dd] * mult;
        mult *= g.in[dd];
      }
      return off;
    };
    std::vector<WindowTap> taps;
    int64_t p = 0;
    with_compute(x.dtype(), [&](auto c) {
      using C = decltype(c);
      for_each_index(g.out, [&](const std::vector<int64_t>& o) {
        window_taps(g, kpos, o, taps);
        for (int64_t nc = 0; nc < s.n * s.c; ++nc) {
          C best = lowest<C>();
          int64_t arg = -1;
          for (size_t t = 0; t < taps.size(); ++t) {
            C v = x.get<C>(nc * plane_in + taps[t].in);
            if (takes_over(v, best, t == 0)) {
              best = v;
              arg = taps[t].in;
            }
          }
          y.set<C>(nc * plane_out + p, best);
          if (indices)
            indices->set_i64(nc * plane_out + p,
                             arg < 0 ? -1 : nc * plane_in + (col_major ? col_offset(arg) : arg));
        }
        ++p;
      });
    });
  };
  return d;
}

OpDef average_pool_op() {
  OpDef d;
  d.name = "AveragePool";
  d.since = 1;
  d.kind = FusionKind::Opaque;
  d.types = kFloatTypes;
  d.attrs = pool_attrs();
  d.attrs.push_back(attr_i("count_include_pad", 0));
  d.infer = [](InferCtx& ctx) {
    int64_t cip = ctx.node().attr_int("count_include_pad");
    if (cip != 0 && cip != 1)
      ctx.fail(fmt::format("count_include_pad must be 0 or 1, got {}", cip));
    ctx.set_dtype(0, ctx.dtype(0));
    ctx.set_shape(0, pool_shapes(ctx.node(), ctx.shape(0)).out);
  };
  // On the GPU: the sum over the taps inside X, divided by the reference's count (taps
  // inside X, or with count_include_pad inside the padded input), counted per axis.
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    bool include_pad = ctx.node().attr_int("count_include_pad") == 1;
    PoolShapes s = pool_shapes(ctx.node(), x.shape());
    const WindowGeometry& g = s.g;
    const int64_t plane_in = checked_numel(g.in), plane_out = checked_numel(g.out);
    auto kpos = kernel_positions(g.kernel);
    std::vector<WindowTap> taps;
    int64_t p = 0;
    for_each_index(g.out, [&](const std::vector<int64_t>& o) {
      window_taps(g, kpos, o, taps);
      // With count_include_pad the divisor counts the taps inside the padded input; taps past
      // the end padding (ceil_mode's last window) never count.
      int64_t count = static_cast<int64_t>(taps.size());
      if (include_pad) {
        count = 1;
        for (size_t dd = 0; dd < g.rank(); ++dd) {
          int64_t n_in = 0;
          for (int64_t k = 0; k < g.kernel[dd]; ++k)
            if (o[dd] * g.stride[dd] + k * g.dilation[dd] <
                g.in[dd] + g.pad_begin[dd] + g.pad_end[dd])
              ++n_in;
          count *= n_in;
        }
      }
      for (int64_t nc = 0; nc < s.n * s.c; ++nc) {
        double sum = 0;
        for (const WindowTap& t : taps) sum += x.get_f64(nc * plane_in + t.in);
        y.set_f64(nc * plane_out + p, sum / static_cast<double>(count));
      }
      ++p;
    });
  };
  return d;
}

// ---- GlobalAveragePool and GlobalMaxPool -----------------------------------------------
OpDef global_pool_op(std::string name, bool is_max) {
  OpDef d;
  d.name = std::move(name);
  d.since = 1;
  d.oldest = 1;  // unchanged since opset 1
  // The mean is a reduction over the spatial axes (a row program on the GPU); the maximum a
  // loop over the plane.
  d.kind = is_max ? FusionKind::Opaque : FusionKind::Reduce;
  d.types = kFloatTypes;
  d.infer = [](InferCtx& ctx) {
    const Shape& x = ctx.shape(0);
    check_rank(ctx.node(), x);
    ctx.set_dtype(0, ctx.dtype(0));
    Shape out(x.size(), 1);
    out[0] = x[0];
    out[1] = x[1];
    ctx.set_shape(0, out);
  };
  d.reference = [is_max](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t planes = x.shape()[0] * x.shape()[1];
    const int64_t plane = checked_numel(Shape(x.shape().begin() + 2, x.shape().end()));
    for (int64_t nc = 0; nc < planes; ++nc) {
      double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t i = 0; i < plane; ++i) {
        double v = x.get_f64(nc * plane + i);
        if (!is_max)
          acc += v;
        else if (takes_over(v, acc, i == 0))
          acc = v;
      }
      y.set_f64(nc, is_max ? acc : acc / static_cast<double>(plane));
    }
  };
  return d;
}

}  // namespace

void register_conv_pool_ops(std::vector<OpDef>& r) {
  r.push_back(conv_op());
  r.push_back(conv_transpose_op());
  r.push_back(max_pool_op());
  r.push_back(average_pool_op());
  r.push_back(global_pool_op("GlobalAveragePool", false));
  r.push_back(global_pool_op("GlobalMaxPool", true));
  r.push_back(im2col_op());
}

}  // namespace braze::graph
