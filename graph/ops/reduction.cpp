// Reductions and axis-wise ops: ReduceX over a set of axes, ArgMax/ArgMin, Softmax,
// LogSoftmax and Hardmax over one axis, CumSum.
//
// Canonical forms (the newest opset <= 21): ReduceX takes its axes as optional input 1
// (ReduceSum from opset 13, the others from 18; older opsets' attribute is moved there on
// import); Softmax/LogSoftmax/Hardmax work along one axis (opset 13), and the older
// opsets' coercion of the input to 2-D at `axis` is rewritten on import into
// Reshape -> op(axis=-1) -> Reshape where it is not already a last-axis op.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "graph/ops/families.h"
#include "graph/ops/helpers.h"
#include "graph/ops/reduction.h"

namespace braze::graph {
namespace {

using namespace ops;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- reduction indexing ----------------------------------------------------------------
ReduceIndex axis_index(const Shape& shape, int64_t axis) {
  std::vector<bool> mask(shape.size(), false);
  mask[static_cast<size_t>(axis)] = true;
  return reduce_index(shape, mask);
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// ---- integer arithmetic that wraps instead of overflowing (numpy's behaviour) -----------
template <class C>
C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <class C>
C wrap_mul(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}
template <class C>
C magnitude(C a) {
  if constexpr (std::is_unsigned_v<C>)
    return a;
  else if constexpr (std::is_integral_v<C>)
    return a < 0 ? static_cast<C>(0ull - static_cast<uint64_t>(a)) : a;
  else
    return std::fabs(a);
}

// The identities of Max and Min over an empty set: the extremes of the dtype.
template <class C>
C dtype_lowest(DType dt) {
  unsigned bits = 8 * static_cast<unsigned>(dtype_size(dt));
  if constexpr (std::is_floating_point_v<C>)
    return -kInf;
  else if constexpr (std::is_unsigned_v<C>)
    return 0;
  else
    return dt == DType::Bool ? 0
           : bits == 64      ? std::numeric_limits<int64_t>::min()
                             : -(int64_t{1} << (bits - 1));
}
template <class C>
C dtype_highest(DType dt) {
  unsigned bits = 8 * static_cast<unsigned>(dtype_size(dt));
  if constexpr (std::is_floating_point_v<C>)
    return kInf;
  else if constexpr (std::is_unsigned_v<C>)
    return bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1;
  else
    return dt == DType::Bool ? 1
           : bits == 64      ? std::numeric_limits<int64_t>::max()
                             : (int64_t{1} << (bits - 1)) - 1;
}

template <class C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(v);
  else
    return false;
}

}  // namespace

// Which dims of a rank-`rank` input a ReduceX node reduces, from its (valid, possibly
// negative) axes: empty axes mean all dims, or none with noop_with_empty_axes.
std::vector<bool> reduced_dims(const Node& node, const std::vector<int64_t>& axes, int64_t rank) {
  bool noop = node.attr_int("noop_with_empty_axes") != 0;
  std::vector<bool> mask(static_cast<size_t>(rank), axes.empty() && !noop);
  for (int64_t a : axes) mask[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  return mask;
}

namespace {

void infer_reduce(InferCtx& ctx) {
  ctx.set_dtype(0, ctx.dtype(0));
  const Shape& x = ctx.shape(0);
  int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    if (ctx.dtype(1) != DType::Int64)
      ctx.fail(fmt::format("axes must be int64, not {}", dtype_name(ctx.dtype(1))));
    const Tensor& t = ctx.require_value(1);
    if (t.rank() > 1)
      ctx.fail(fmt::format("axes must be a 1-D tensor, not of shape {}", shape_str(t.shape())));
    axes = normalize_axes(ctx, t.to_int64s(), rank);
  }
  std::vector<bool> mask = reduced_dims(ctx.node(), axes, rank);
  bool keepdims = ctx.node().attr_int("keepdims") != 0;
  Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!mask[d])
      out.push_back(x[d]);
    else if (keepdims)
      out.push_back(1);
  }
  ctx.set_shape(0, out);
}

// Reduces the values at base + inner[k] of x into output element o of y.
template <class C>
void reduce_one(Reduction red, const Tensor& x, int64_t base, const std::vector<int64_t>& inner,
                Tensor& y, int64_t o) {
  auto at = [&](size_t k) { return x.get<C>(base + inner[k]); };
  const size_t n = inner.size();
  C acc{};
  switch (red) {
    case Reduction::Sum:
    case Reduction::Mean:
    case Reduction::LogSum:
      for (size_t k = 0; k < n; ++k) acc = wrap_add(acc, at(k));
      break;
    case Reduction::SumSquare:
    case Reduction::L2:
      for (size_t k = 0; k < n; ++k) acc = wrap_add(acc, wrap_mul(at(k), at(k)));
      break;
    case Reduction::L1:
      for (size_t k = 0; k < n; ++k) acc = wrap_add(acc, magnitude(at(k)));
      break;
    case Reduction::Prod:
      acc = 1;
      for (size_t k = 0; k < n; ++k) acc = wrap_mul(acc, at(k));
      break;
    case Reduction::Max:
      acc = dtype_lowest<C>(x.dtype());
      for (size_t k = 0; k < n && !is_nan(acc); ++k) {
        C v = at(k);
        if (is_nan(v) || v > acc) acc = v;
      }
      break;
    case Reduction::Min:
      acc = dtype_highest<C>(x.dtype());
      for (size_t k = 0; k < n && !is_nan(acc); ++k) {
        C v = at(k);
        if (is_nan(v) || v < acc) acc = v;
      }
      break;
    case Reduction::LogSumExp: {
      // Shifted by the largest finite value so exp cannot overflow; infinities and NaN
      // pass through exp and log as they should.
      double shift = -kInf;
      for (size_t k = 0; k < n; ++k) {
        double v = static_cast<double>(at(k));
        if (std::isfinite(v)) shift = std::max(shift, v);
      }
      if (shift == -kInf) shift = 0;
      double s = 0;
      for (size_t k = 0; k < n; ++k) s += std::exp(static_cast<double>(at(k)) - shift);
      y.set_f64(o, std::log(s) + shift);
      return;
    }
  }
  switch (red) {
    case Reduction::Mean:
      if (n == 0 && std::is_integral_v<C>)
        y.set_i64(o, 0);  // 0/0 has no integer value
      else
        y.set_f64(o, static_cast<double>(acc) / static_cast<double>(n));
      return;
    case Reduction::L2:
      y.set_f64(o, std::sqrt(static_cast<double>(acc)));
      return;
    case Reduction::LogSum:
      y.set_f64(o, std::log(static_cast<double>(acc)));
      return;
    default:
      y.set<C>(o, acc);
  }
}

RefFn reduce_ref(Reduction red) {
  return [red](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> axes;
    if (ctx.has_input(1)) axes = ctx.input(1).to_int64s();
    ReduceIndex ix = reduce_index(x.shape(), reduced_dims(ctx.node(), axes, x.rank()));
    Tensor& y = ctx.output(0);
    with_compute(x.dtype(), [&](auto c) {
      using C = decltype(c);
      for (size_t o = 0; o < ix.outer.size(); ++o)
        reduce_one<C>(red, x, ix.outer[o], ix.inner, y, static_cast<int64_t>(o));
    });
  };
}

// Opsets before `input_since` give the axes as an attribute; the canonical form takes them
// as input 1 (an empty or absent list still means every axis).
UpgradeFn axes_to_input(int input_since) {
  return [input_since](Graph& g, NodeId n) {
    Node& node = g.node(n);
    if (node.opset >= input_since) {
      if (node.has_attr("axes"))
        throw UserError(fmt::format("{}: from opset {} axes is an input, not an attribute",
                                    node.describe(), input_since));
      return;
    }
    if (node.has_attr("noop_with_empty_axes"))
      throw UserError(
          fmt::format("{}: noop_with_empty_axes exists from opset {} (the model imports opset {})",
                      node.describe(), input_since, node.opset));
    if (node.inputs.size() > 1)
      throw UserError(
          fmt::format("{}: takes one input before opset {} (axes is an attribute there)",
                      node.describe(), input_since));
    if (node.has_attr("axes") && attr_type(node.attrs.find("axes")->second) != AttrType::Ints)
      throw UserError(
          fmt::format("{}: attribute 'axes' should be a list of ints", node.describe()));
    move_attr_to_input(g, n, "axes", 1, DType::Int64);
  };
}

OpDef reduce_op(std::string name, Reduction red, int input_since, DTypeSet types) {
  OpDef d;
  d.name = std::move(name);
  d.since = 1;
  d.oldest = 1;  // opsets 1-10 differ only in not allowing negative axes
  d.kind = FusionKind::Reduce;
  d.min_inputs = 1;
  d.max_inputs = 2;
  d.attrs = {attr_i("keepdims", 1), attr_i("noop_with_empty_axes", 0)};
  d.shape_inputs = {1};
  d.types = types;
  d.upgrade = axes_to_input(input_since);
  d.infer = infer_reduce;
  d.reference = reduce_ref(red);
  return d;
}

void add_reduce_ops(std::vector<OpDef>& r) {
  const DTypeSet wide =
      kFloatTypes | DTypeSet{DType::Int32, DType::Int64, DType::UInt32, DType::UInt64};
  const DTypeSet ordered = wide | DTypeSet{DType::Int8, DType::UInt8, DType::Bool};
  r.push_back(reduce_op("ReduceSum", Reduction::Sum, 13, wide));
  r.push_back(reduce_op("ReduceMean", Reduction::Mean, 18, wide));
  r.push_back(reduce_op("ReduceMax", Reduction::Max, 18, ordered));
  r.push_back(reduce_op("ReduceMin", Reduction::Min, 18, ordered));
  r.push_back(reduce_op("ReduceProd", Reduction::Prod, 18, wide));
  r.push_back(reduce_op("ReduceL1", Reduction::L1, 18, wide));
  r.push_back(reduce_op("ReduceL2", Reduction::L2, 18, wide));
  r.push_back(reduce_op("ReduceLogSum", Reduction::LogSum, 18, wide));
  r.push_back(reduce_op("ReduceLogSumExp", Reduction::LogSumExp, 18, wide));
  r.push_back(reduce_op("ReduceSumSquare", Reduction::SumSquare, 18, wide));
}

// ---- ArgMax / ArgMin -------------------------------------------------------------------
// numpy's rules: NaN counts as the extreme (the first NaN wins, the last with
// select_last_index); ties go to the first index, or the last with select_last_index.
template <class C>
int64_t arg_extreme(const Tensor& x, int64_t base, const std::vector<int64_t>& inner, bool want_max,
                    bool last) {
  int64_t best = 0;
  C bv = x.get<C>(base + inner[0]);
  for (size_t k = 1; k < inner.size(); ++k) {
    C v = x.get<C>(base + inner[k]);
    bool better;
    if (is_nan(v))
      better = last || !is_nan(bv);
    else if (is_nan(bv))
      better = false;
    else if (v == bv)
      better = last;
    else
      better = want_max ? v > bv : v < bv;
    if (better) {
      best = static_cast<int64_t>(k);
      bv = v;
    }
  }
  return best;
}

OpDef arg_op(std::string name, bool want_max) {
  OpDef d;
  d.name = std::move(name);
  d.since = 1;
  d.oldest = 1;  // unchanged since opset 1 but for negative axes and select_last_index (12)
  d.kind = FusionKind::Reduce;
  d.attrs = {attr_i("axis", 0), attr_i("keepdims", 1), attr_i("select_last_index", 0)};
  d.types = kNumericTypes;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, DType::Int64);
    Shape x = ctx.shape(0);
    int64_t axis = ctx.axis(ctx.node().attr_int("axis"), static_cast<int64_t>(x.size()));
    Shape rest = x;
    rest.erase(rest.begin() + axis);
    if (x[static_cast<size_t>(axis)] == 0 && checked_numel(rest) != 0)
      ctx.fail(fmt::format("axis {} is empty: there is no element to pick", axis));
    if (ctx.node().attr_int("keepdims") != 0)
      x[static_cast<size_t>(axis)] = 1;
    else
      x.erase(x.begin() + axis);
    ctx.set_shape(0, x);
  };
  d.reference = [want_max](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += x.rank();
    bool last = ctx.node().attr_int("select_last_index") != 0;
    ReduceIndex ix = axis_index(x.shape(), axis);
    Tensor& y = ctx.output(0);
    with_compute(x.dtype(), [&](auto c) {
      using C = decltype(c);
      for (size_t o = 0; o < ix.outer.size(); ++o)
        y.set_i64(static_cast<int64_t>(o),
                  arg_extreme<C>(x, ix.outer[o], ix.inner, want_max, last));
    });
  };
  return d;
}

// Opsets before 13 coerce the input to 2-D [prod(dims[:axis]), prod(dims[axis:])] (axis
// default 1) and work along the second dim. Where that is a last-axis op already (every
// dim between axis and the last is 1, or the tensor is empty) only the axis changes;
// otherwise the node becomes Reshape -> op(axis=-1) -> Reshape back.
void upgrade_coerced_2d(Graph& g, NodeId n) {
  Node& node = g.node(n);
  if (node.opset >= 13) return;
  if (node.inputs.size() != 1 || node.inputs[0] == kNoValue || node.outputs.size() != 1 ||
      node.outputs[0] == kNoValue)
    return;  // wrong arity: inference reports it
  auto it = node.attrs.find("axis");
  if (it != node.attrs.end() && attr_type(it->second) != AttrType::Int)
    throw UserError(fmt::format("{}: attribute 'axis' should be an int", node.describe()));
  int64_t axis = it != node.attrs.end() ? std::get<int64_t>(it->second) : 1;
  ValueId x = node.inputs[0];
  if (!g.value(x).has_shape)
    throw UserError(
        fmt::format("{}: before opset 13 the op flattens its input to 2-D, so the shape of '{}' "
                    "must be known at import",
                    node.describe(), g.value(x).name));
  const Shape dims = g.value(x).shape;
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axis < -rank || axis >= rank)
    throw UserError(
        fmt::format("{}: axis {} is out of range for rank {}", node.describe(), axis, rank));
  const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  const int64_t outer = product(dims, 0, a), inner = product(dims, a, dims.size());
  if (product(dims, a, dims.size() - 1) == 1 || outer * inner == 0) {
    node.attrs["axis"] = int64_t{-1};
    return;
  }
  const OpDef& reshape = op("Reshape");
  const OpDef* self = node.op;
  const std::string name = node.name;
  const int opset = node.opset;
  const ValueId y = node.outputs[0];
  Attributes attrs = node.attrs;
  attrs["axis"] = int64_t{-1};
  const DType dt = g.value(x).dtype;
  const std::string base = g.value(x).name;
  g.kill_node(n);  // `node` is not used past here: adding nodes may move it

  ValueId flat_shape =
      g.add_constant(g.unique_name(name + "_2d_shape"), Tensor::from_int64s({outer, inner}, {2}));
  ValueId orig_shape =
      g.add_constant(g.unique_name(name + "_nd_shape"), Tensor::from_int64s(dims, {rank}));
  ValueId x2 = g.add_value(g.unique_name(base + "_2d"), dt, {outer, inner});
  ValueId y2 = g.add_value(g.unique_name(g.value(y).name + "_2d"), dt, {outer, inner});
  g.add_node(&reshape, name + "_to_2d", {x, flat_shape}, {x2}, {}, opset);
  g.add_node(self, name, {x2}, {y2}, std::move(attrs), opset);
  g.add_node(&reshape, name + "_from_2d", {y2, orig_shape}, {y}, {}, opset);
}

OpDef axis_op(std::string name, AxisOp kind) {
  OpDef d;
  d.name = std::move(name);
  d.since = 1;
  d.oldest = 1;  // opsets 1-12 share the 2-D coercion that upgrade_coerced_2d rewrites
  d.kind = FusionKind::Reduce;
  d.attrs = {attr_i("axis", -1)};
  d.types = kFloatTypes;
  d.upgrade = upgrade_coerced_2d;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    const Shape& x = ctx.shape(0);
    ctx.axis(ctx.node().attr_int("axis"), static_cast<int64_t>(x.size()));
    ctx.set_shape(0, x);
  };
  d.reference = [kind](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += x.rank();
    ReduceIndex ix = axis_index(x.shape(), axis);
    Tensor& y = ctx.output(0);
    const size_t n = ix.inner.size();
    std::vector<double> v(n);
    for (int64_t base : ix.outer) {
      if (kind == AxisOp::Hardmax) {
        int64_t pick = n ? arg_extreme<double>(x, base, ix.inner, true, false) : 0;
        for (size_t k = 0; k < n; ++k)
          y.set_f64(base + ix.inner[k], static_cast<int64_t>(k) == pick ? 1.0 : 0.0);
        continue;
      }
      for (size_t k = 0; k < n; ++k) v[k] = x.get_f64(base + ix.inner[k]);
      // numpy's formulation: subtract the (NaN-propagating) max, so a row holding NaN or
      // +inf, or only -inf, gives NaN as numpy does.
      double m = -kInf;
      for (double e : v) m = (std::isnan(e) || std::isnan(m)) ? kNaN : std::max(m, e);
      double s = 0;
      for (double e : v) s += std::exp(e - m);
      for (size_t k = 0; k < n; ++k) {
        double t = v[k] - m;
        y.set_f64(base + ix.inner[k], kind == AxisOp::Softmax ? std::exp(t) / s : t - std::log(s));
      }
    }
  };
  return d;
}

// ---- CumSum ----------------------------------------------------------------------------
OpDef cumsum_op() {
  OpDef d;
  d.name = "CumSum";
  d.since = 11;
  d.kind = FusionKind::Reduce;
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {attr_i("exclusive", 0), attr_i("reverse", 0)};
  d.shape_inputs = {1};
  d.types = kFloatTypes | DTypeSet{DType::Int32, DType::Int64, DType::UInt32, DType::UInt64};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    if (ctx.dtype(1) != DType::Int32 && ctx.dtype(1) != DType::Int64)
      ctx.fail(fmt::format("axis must be int32 or int64, not {}", dtype_name(ctx.dtype(1))));
    const Shape& x = ctx.shape(0);
    const Tensor& a = ctx.require_value(1);
    if (a.numel() != 1 || a.rank() > 1)
      ctx.fail(fmt::format("axis must be a scalar, not of shape {}", shape_str(a.shape())));
    ctx.axis(a.get_i64(0), static_cast<int64_t>(x.size()));
    ctx.set_shape(0, x);
  };
  // On the GPU each output element sums its prefix along the axis.
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    int64_t axis = ctx.input(1).get_i64(0);
    if (axis < 0) axis += x.rank();
    bool exclusive = ctx.node().attr_int("exclusive") != 0,
         reverse = ctx.node().attr_int("reverse") != 0;
    ReduceIndex ix = axis_index(x.shape(), axis);
    Tensor& y = ctx.output(0);
    const size_t n = ix.inner.size();
    with_compute(x.dtype(), [&](auto c) {
      using C = decltype(c);
      for (int64_t base : ix.outer) {
        C acc{};
        for (size_t j = 0; j < n; ++j) {
          int64_t off = base + ix.inner[reverse ? n - 1 - j : j];
          C v = x.get<C>(off);
          if (!exclusive) acc = wrap_add(acc, v);
          y.set<C>(off, acc);
          if (exclusive) acc = wrap_add(acc, v);
        }
      }
    });
  };
  return d;
}

}  // namespace

void register_reduction_ops(std::vector<OpDef>& r) {
  add_reduce_ops(r);
  r.push_back(arg_op("ArgMax", true));
  r.push_back(arg_op("ArgMin", false));
  r.push_back(axis_op("Softmax", AxisOp::Softmax));
  r.push_back(axis_op("LogSoftmax", AxisOp::LogSoftmax));
  r.push_back(axis_op("Hardmax", AxisOp::Hardmax));
  r.push_back(cumsum_op());
}

}  // namespace braze::graph
