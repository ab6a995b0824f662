// Indexing ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements, OneHot, TopK,
// NonZero. Index values are checked against the axis they index before any element is read
// or written: an out-of-range index is a user error naming the node, the index and where it
// sits, never an out-of-bounds access.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "graph/ops/families.h"
#include "graph/ops/helpers.h"

namespace braze::graph {
namespace {

using namespace ops;

int64_t prod(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) n *= s[i];
  return n;
}

// Copies n elements (same dtype) src[src_off..] -> dst[dst_off..].
void copy_block(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  size_t es = dtype_size(src.dtype());
  std::memcpy(static_cast<unsigned char*>(dst.raw()) + dst_off * es,
              static_cast<const unsigned char*>(src.raw()) + src_off * es,
              static_cast<size_t>(n) * es);
}

void copy_all(const Tensor& src, Tensor& dst) { copy_block(src, 0, dst, 0, src.numel()); }

// Reads index `pos` of `indices` and normalises it against an axis of size `dim`, failing
// with the value, its position and the axis when it is outside [-dim, dim-1].
int64_t read_index(const RefCtx& ctx, const Tensor& indices, int64_t pos, int64_t dim,
                   int64_t axis) {
  int64_t v = indices.get_i64(pos);
  if (v < -dim || v >= dim) {
    std::string where = indices.rank() == 0
                            ? ""
                            : fmt::format("[{}]", fmt::join(unravel(pos, indices.shape()), ","));
    ctx.fail(fmt::format(
        "index {} at indices{} is out of range for axis {} of size {} (allowed [{}, {}])", v, where,
        axis, dim, -dim, dim - 1));
  }
  return v < 0 ? v + dim : v;
}

void require_index_dtype(const InferCtx& ctx, size_t i, const char* what) {
  if (!kIndexTypes.contains(ctx.dtype(i)))
    ctx.fail(fmt::format("{} must be int32 or int64, not {}", what, dtype_name(ctx.dtype(i))));
}

// Visits every multi-index of `shape` in row-major order.
class IndexCounter {
 public:
  explicit IndexCounter(const Shape& shape) : shape_(shape), idx_(shape.size(), 0) {}
  const std::vector<int64_t>& index() const { return idx_; }
  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      if (++idx_[d] < shape_[d]) return;
      idx_[d] = 0;
    }
  }

 private:
  const Shape& shape_;
  std::vector<int64_t> idx_;
};

// ---- reductions shared by the scatter ops ------------------------------------------------
enum class Reduction { None, Add, Mul, Max, Min };

// The scatter reduction; max and min came with opset 18.
Reduction parse_reduction(const Node& n) {
  std::string r = n.attr_string("reduction");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max" || r == "min") {
    if (n.opset < 18)
      throw UserError(fmt::format("{}: reduction '{}' needs opset 18 (the model imports opset {})",
                                  n.describe(), r, n.opset));
    return r == "max" ? Reduction::Max : Reduction::Min;
  }
  throw UserError(fmt::format("{}: reduction must be one of none, add, mul, max, min, not '{}'",
                              n.describe(), r));
}

template <class C>
C combine(Reduction r, C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if ((r == Reduction::Max || r == Reduction::Min) && (std::isnan(a) || std::isnan(b)))
      return std::numeric_limits<C>::quiet_NaN();
  }
  switch (r) {
    case Reduction::Add:
      if constexpr (std::is_integral_v<C>)
        return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      else
        return a + b;
    case Reduction::Mul:
      if constexpr (std::is_integral_v<C>)
        return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      else
        return a * b;
    case Reduction::Max:
      return a > b ? a : b;
    case Reduction::Min:
      return a < b ? a : b;
    case Reduction::None:
      break;
  }
  return b;
}

// out[dst] = reduce(out[dst], updates[src]) in the compute type of the data's dtype.
class Scatterer {
 public:
  Scatterer(Reduction r, const Tensor& updates, Tensor& out)
      : r_(r), updates_(updates), out_(out) {}
  void apply(int64_t src, int64_t dst) {
    if (r_ == Reduction::None) return copy_element(updates_, src, out_, dst);
    with_compute(out_.dtype(), [&](auto c) {
      using C = decltype(c);
      out_.set<C>(dst, combine<C>(r_, out_.get<C>(dst), updates_.get<C>(src)));
    });
  }

 private:
  Reduction r_;
  const Tensor& updates_;
  Tensor& out_;
};

// ---- Gather ----------------------------------------------------------------------------
OpDef gather_op() {
  OpDef d;
  d.name = "Gather";
  d.oldest = 1;  // unchanged in meaning since opset 1
  d.kind = FusionKind::Injective;
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {attr_i("axis", 0)};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    require_index_dtype(ctx, 1, "indices");
    const Shape& data = ctx.shape(0);
    const Shape& ind = ctx.shape(1);
    int64_t r = static_cast<int64_t>(data.size());
    if (r < 1) ctx.fail("data must have rank 1 or more");
    int64_t axis = ctx.axis(ctx.node().attr_int("axis"), r);
    Shape out(data.begin(), data.begin() + axis);
    out.insert(out.end(), ind.begin(), ind.end());
    out.insert(out.end(), data.begin() + axis + 1, data.end());
    ctx.set_shape(0, out);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    Tensor& out = ctx.output(0);
    int64_t r = data.rank();
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += r;
    int64_t outer = prod(data.shape(), 0, axis), dim = data.shape()[axis];
    int64_t inner = prod(data.shape(), axis + 1, r), n = ind.numel();
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) idx[j] = read_index(ctx, ind, j, dim, axis);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j)
        copy_block(data, (o * dim + idx[j]) * inner, out, (o * n + j) * inner, inner);
  };
  return d;
}

// ---- GatherElements --------------------------------------------------------------------
// Shared shape checks of GatherElements and ScatterElements: same rank, and away from the
// axis the indices stay within the data.
int64_t check_elements_shapes(const InferCtx& ctx, const Shape& data, const Shape& ind) {
  int64_t r = static_cast<int64_t>(data.size());
  if (r < 1) ctx.fail("data must have rank 1 or more");
  if (ind.size() != data.size())
    ctx.fail(
        fmt::format("indices {} must have the rank of data {}", shape_str(ind), shape_str(data)));
  int64_t axis = ctx.axis(ctx.node().attr_int("axis"), r);
  for (int64_t i = 0; i < r; ++i)
    if (i != axis && ind[i] > data[i])
      ctx.fail(fmt::format("indices {} exceed data {} at dimension {}", shape_str(ind),
                           shape_str(data), i));
  return axis;
}

OpDef gather_elements_op() {
  OpDef d;
  d.name = "GatherElements";
  d.since = 11;
  d.kind = FusionKind::Injective;
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {attr_i("axis", 0)};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    require_index_dtype(ctx, 1, "indices");
    check_elements_shapes(ctx, ctx.shape(0), ctx.shape(1));
    ctx.set_shape(0, ctx.shape(1));
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    Tensor& out = ctx.output(0);
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += data.rank();
    std::vector<int64_t> st = contiguous_strides(data.shape());
    int64_t dim = data.shape()[axis];
    IndexCounter it(ind.shape());
    for (int64_t i = 0; i < ind.numel(); ++i, it.next()) {
      int64_t v = read_index(ctx, ind, i, dim, axis);
      const std::vector<int64_t>& at = it.index();
      int64_t off = ravel(at, st) + (v - at[axis]) * st[axis];
      copy_element(data, off, out, i);
    }
  };
  return d;
}

// ---- GatherND --------------------------------------------------------------------------
OpDef gather_nd_op() {
  OpDef d;
  d.name = "GatherND";
  d.kind = FusionKind::Injective;  // an index map: it fuses into the loads of its consumer
  d.since = 11;
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {attr_i("batch_dims", 0)};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    if (ctx.dtype(1) != DType::Int64)
      ctx.fail(fmt::format("indices must be int64, not {}", dtype_name(ctx.dtype(1))));
    const Shape& data = ctx.shape(0);
    const Shape& ind = ctx.shape(1);
    int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(ind.size());
    int64_t b = ctx.node().attr_int("batch_dims");
    if (r < 1 || q < 1) ctx.fail("data and indices must have rank 1 or more");
    if (b < 0 || b >= std::min(q, r))
      ctx.fail(fmt::format("batch_dims {} must be in [0, {})", b, std::min(q, r)));
    for (int64_t i = 0; i < b; ++i)
      if (data[i] != ind[i])
        ctx.fail(
            fmt::format("the first {} (batch) dimensions of data {} and indices {} must be equal",
                        b, shape_str(data), shape_str(ind)));
    int64_t k = ind[q - 1];
    if (k < 1 || k > r - b)
      ctx.fail(fmt::format("the last dimension of indices {} must be in [1, {}]", shape_str(ind),
                           r - b));
    Shape out(ind.begin(), ind.end() - 1);
    out.insert(out.end(), data.begin() + b + k, data.end());
    ctx.set_shape(0, out);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    Tensor& out = ctx.output(0);
    const Shape& ds = data.shape();
    const Shape& is = ind.shape();
    size_t r = ds.size(), q = is.size();
    size_t b = static_cast<size_t>(ctx.node().attr_int("batch_dims"));
    size_t k = static_cast<size_t>(is[q - 1]);
    int64_t batches = prod(ds, 0, b), per_batch = prod(is, b, q - 1);
    int64_t slice = prod(ds, b + k, r), batch_stride = prod(ds, b, r);
    std::vector<int64_t> st = contiguous_strides(ds);
    for (int64_t bi = 0; bi < batches; ++bi)
      for (int64_t m = 0; m < per_batch; ++m) {
        int64_t tuple = bi * per_batch + m;
        int64_t off = bi * batch_stride;
        for (size_t j = 0; j < k; ++j)
          off += read_index(ctx, ind, tuple * static_cast<int64_t>(k) + static_cast<int64_t>(j),
                            ds[b + j], static_cast<int64_t>(b + j)) *
                 st[b + j];
        copy_block(data, off, out, tuple * slice, slice);
      }
  };
  return d;
}

// ---- ScatterND -------------------------------------------------------------------------
OpDef scatter_nd_op() {
  OpDef d;
  d.name = "ScatterND";
  d.since = 11;
  d.min_inputs = d.max_inputs = 3;
  d.attrs = {attr_s("reduction", "none")};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    parse_reduction(ctx.node());
    if (ctx.dtype(1) != DType::Int64)
      ctx.fail(fmt::format("indices must be int64, not {}", dtype_name(ctx.dtype(1))));
    if (ctx.dtype(2) != ctx.dtype(0))
      ctx.fail(fmt::format("updates ({}) must have the dtype of data ({})",
                           dtype_name(ctx.dtype(2)), dtype_name(ctx.dtype(0))));
    const Shape& data = ctx.shape(0);
    const Shape& ind = ctx.shape(1);
    const Shape& upd = ctx.shape(2);
    int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(ind.size());
    if (r < 1 || q < 1) ctx.fail("data and indices must have rank 1 or more");
    int64_t k = ind[q - 1];
    if (k < 1 || k > r)
      ctx.fail(
          fmt::format("the last dimension of indices {} must be in [1, {}]", shape_str(ind), r));
    Shape want(ind.begin(), ind.end() - 1);
    want.insert(want.end(), data.begin() + k, data.end());
    if (upd != want)
      ctx.fail(fmt::format("updates {} must have shape {} (indices {}, data {})", shape_str(upd),
                           shape_str(want), shape_str(ind), shape_str(data)));
    ctx.set_shape(0, data);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const Tensor& upd = ctx.input(2);
    Tensor& out = ctx.output(0);
    copy_all(data, out);
    const Shape& ds = data.shape();
    size_t k = static_cast<size_t>(ind.shape().back());
    int64_t tuples = prod(ind.shape(), 0, ind.shape().size() - 1);
    int64_t slice = prod(ds, k, ds.size());
    std::vector<int64_t> st = contiguous_strides(ds);
    Scatterer sc(parse_reduction(ctx.node()), upd, out);
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (size_t j = 0; j < k; ++j)
        off += read_index(ctx, ind, t * static_cast<int64_t>(k) + static_cast<int64_t>(j), ds[j],
                          static_cast<int64_t>(j)) *
               st[j];
      for (int64_t s = 0; s < slice; ++s) sc.apply(t * slice + s, off + s);
    }
  };
  return d;
}

// ---- ScatterElements -------------------------------------------------------------------
OpDef scatter_elements_op() {
  OpDef d;
  d.name = "ScatterElements";
  d.since = 11;
  d.min_inputs = d.max_inputs = 3;
  d.attrs = {attr_i("axis", 0), attr_s("reduction", "none")};
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    parse_reduction(ctx.node());
    require_index_dtype(ctx, 1, "indices");
    if (ctx.dtype(2) != ctx.dtype(0))
      ctx.fail(fmt::format("updates ({}) must have the dtype of data ({})",
                           dtype_name(ctx.dtype(2)), dtype_name(ctx.dtype(0))));
    if (ctx.shape(2) != ctx.shape(1))
      ctx.fail(fmt::format("updates {} must have the shape of indices {}", shape_str(ctx.shape(2)),
                           shape_str(ctx.shape(1))));
    check_elements_shapes(ctx, ctx.shape(0), ctx.shape(1));
    ctx.set_shape(0, ctx.shape(0));
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const Tensor& upd = ctx.input(2);
    Tensor& out = ctx.output(0);
    copy_all(data, out);
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += data.rank();
    std::vector<int64_t> st = contiguous_strides(data.shape());
    int64_t dim = data.shape()[axis];
    Scatterer sc(parse_reduction(ctx.node()), upd, out);
    IndexCounter it(ind.shape());
    for (int64_t i = 0; i < ind.numel(); ++i, it.next()) {
      int64_t v = read_index(ctx, ind, i, dim, axis);
      const std::vector<int64_t>& at = it.index();
      sc.apply(i, ravel(at, st) + (v - at[axis]) * st[axis]);
    }
  };
  return d;
}

// ---- OneHot ----------------------------------------------------------------------------
int64_t onehot_depth(const InferCtx& ctx) {
  const Tensor& t = ctx.require_value(1);
  if (t.numel() != 1 || t.rank() > 1)
    ctx.fail(fmt::format("depth must be a scalar or a one-element vector, not of shape {}",
                         shape_str(t.shape())));
  if (is_float(t.dtype()) && !std::isfinite(t.get_f64(0))) ctx.fail("depth must be finite");
  int64_t depth = t.get_i64(0);  // floating depths are truncated, as a cast to int64
  if (depth < 1) ctx.fail(fmt::format("depth must be positive, not {}", depth));
  return depth;
}

OpDef onehot_op() {
  OpDef d;
  d.name = "OneHot";
  d.since = 9;
  d.min_inputs = d.max_inputs = 3;
  d.attrs = {attr_i("axis", -1)};
  d.shape_inputs = {1};
  d.types = kNumericTypes;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(2));
    if (!kNumericTypes.contains(ctx.dtype(1)))
      ctx.fail(fmt::format("depth must be numeric, not {}", dtype_name(ctx.dtype(1))));
    const Shape& values = ctx.shape(2);
    if (values.size() != 1 || values[0] != 2)
      ctx.fail(fmt::format("values must be [off_value, on_value] (shape [2]), not of shape {}",
                           shape_str(values)));
    const Shape& ind = ctx.shape(0);
    int64_t r = static_cast<int64_t>(ind.size());
    int64_t axis = ctx.axis(ctx.node().attr_int("axis"), r + 1);
    int64_t depth = onehot_depth(ctx);
    Shape out = ind;
    out.insert(out.begin() + axis, depth);
    ctx.set_shape(0, out);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& ind = ctx.input(0);
    const Tensor& values = ctx.input(2);
    Tensor& out = ctx.output(0);
    int64_t r = ind.rank();
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += r + 1;
    int64_t depth = out.shape()[axis];
    int64_t outer = prod(ind.shape(), 0, axis), inner = prod(ind.shape(), axis, r);
    for (int64_t i = 0; i < out.numel(); ++i) copy_element(values, 0, out, i);
    bool is_unsigned = is_unsigned_int(ind.dtype());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t pos = o * inner + i;
        int64_t v;
        if (is_unsigned) {
          uint64_t u = ind.get_u64(pos);
          if (u >= static_cast<uint64_t>(depth)) continue;
          v = static_cast<int64_t>(u);
        } else {
          v = ind.get_i64(pos);  // floating indices truncate toward zero
          if (v < 0) v += depth;
          if (v < 0 || v >= depth) continue;  // outside [-depth, depth-1]: all off
        }
        copy_element(values, 1, out, (o * depth + v) * inner + i);
      }
  };
  return d;
}

// ---- TopK ------------------------------------------------------------------------------
// a > b, with NaN above every number (and equal to NaN), so the order is strict and weak.
template <class C>
bool greater(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

OpDef topk_op() {
  OpDef d;
  d.name = "TopK";
  d.min_inputs = d.max_inputs = 2;
  d.min_outputs = d.max_outputs = 2;
  d.attrs = {attr_i("axis", -1), attr_i("largest", 1), attr_i("sorted", 1)};
  d.shape_inputs = {1};
  d.types = kNumericTypes;
  d.upgrade = [](Graph& g, NodeId n) {  // opset < 10: k is an attribute
    if (g.node(n).opset < 10) {
      if (!g.node(n).has_attr("k"))
        throw UserError(g.node(n).describe() + ": missing required attribute 'k'");
      move_attr_to_input(g, n, "k", 1, DType::Int64);
    }
  };
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    ctx.set_dtype(1, DType::Int64);
    if (ctx.dtype(1) != DType::Int64)
      ctx.fail(fmt::format("K must be int64, not {}", dtype_name(ctx.dtype(1))));
    for (const char* a : {"largest", "sorted"})
      if (int64_t v = ctx.node().attr_int(a); v != 0 && v != 1)
        ctx.fail(fmt::format("{} must be 0 or 1, not {}", a, v));
    const Shape& x = ctx.shape(0);
    int64_t axis = ctx.axis(ctx.node().attr_int("axis"), static_cast<int64_t>(x.size()));
    const Tensor& kt = ctx.require_value(1);
    if (kt.numel() != 1 || kt.rank() > 1)
      ctx.fail(
          fmt::format("K must be a one-element vector, not of shape {}", shape_str(kt.shape())));
    int64_t k = kt.get_i64(0);
    if (k < 0 || k > x[axis])
      ctx.fail(fmt::format("k = {} is out of range for axis {} of size {}", k, axis, x[axis]));
    Shape out = x;
    out[axis] = k;
    ctx.set_shape(0, out);
    ctx.set_shape(1, out);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& values = ctx.output(0);
    Tensor* indices = ctx.has_output(1) ? &ctx.output(1) : nullptr;
    int64_t r = x.rank();
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += r;
    bool largest = ctx.node().attr_int("largest") != 0;
    int64_t dim = x.shape()[axis], k = values.shape()[axis];
    int64_t outer = prod(x.shape(), 0, axis), inner = prod(x.shape(), axis + 1, r);
    with_compute(x.dtype(), [&](auto c) {
      using C = decltype(c);
      std::vector<C> line(static_cast<size_t>(dim));
      std::vector<int64_t> order(static_cast<size_t>(dim));
      // Ties keep the lower index first (the spec's tiebreak), so the order is total.
      auto before = [&](int64_t a, int64_t b) {
        C va = line[a], vb = line[b];
        bool first = largest ? greater(va, vb) : greater(vb, va);
        bool second = largest ? greater(vb, va) : greater(va, vb);
        return first || (!second && a < b);
      };
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t base = o * dim * inner + i;
          for (int64_t j = 0; j < dim; ++j) line[j] = x.get<C>(base + j * inner);
          std::iota(order.begin(), order.end(), 0);
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
          for (int64_t j = 0; j < k; ++j) {
            int64_t dst = o * k * inner + j * inner + i;
            copy_element(x, base + order[j] * inner, values, dst);
            if (indices) indices->set_i64(dst, order[j]);
          }
        }
    });
  };
  return d;
}

// ---- NonZero ---------------------------------------------------------------------------
bool is_nonzero(const Tensor& t, int64_t i) {
  return is_float(t.dtype()) ? t.get_f64(i) != 0.0 : t.get_u64(i) != 0;  // NaN counts as non-zero
}

OpDef nonzero_op() {
  OpDef d;
  d.name = "NonZero";
  d.since = 9;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, DType::Int64);
    const Tensor& x = ctx.require_value(0);  // the output's shape depends on the data
    int64_t count = 0;
    for (int64_t i = 0; i < x.numel(); ++i) count += is_nonzero(x, i);
    ctx.set_shape(0, {x.rank(), count});  // a scalar gives [0, count], as the spec says
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& out = ctx.output(0);
    int64_t count = out.shape()[1];
    int64_t c = 0;
    IndexCounter it(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i, it.next()) {
      if (!is_nonzero(x, i)) continue;
      for (size_t dd = 0; dd < it.index().size(); ++dd)
        out.set_i64(static_cast<int64_t>(dd) * count + c, it.index()[dd]);
      ++c;
    }
  };
  return d;
}

}  // namespace

void register_indexing_ops(std::vector<OpDef>& r) {
  r.push_back(gather_op());
  r.push_back(gather_elements_op());
  r.push_back(gather_nd_op());
  r.push_back(scatter_nd_op());
  r.push_back(scatter_elements_op());
  r.push_back(onehot_op());
  r.push_back(topk_op());
  r.push_back(nonzero_op());
}

}  // namespace braze::graph
