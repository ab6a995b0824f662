// Generator ops: Shape and Size (read only their input's shape), ConstantOfShape, Constant,
// Range and EyeLike (build a tensor from attributes and constant inputs).
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "graph/onnx_dtype.h"
#include "graph/ops/families.h"
#include "graph/ops/helpers.h"

namespace braze::graph {
namespace {

using namespace ops;

// ---- Shape, Size -----------------------------------------------------------------------
// [start, end) of Shape's slice of dims: negative values count from the back, then both are
// clamped to [0, rank].
std::pair<int64_t, int64_t> shape_range(const Node& n, int64_t rank) {
  auto clamp = [rank](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
  int64_t start = clamp(n.attr_int("start"));
  int64_t end = n.has_attr("end") ? clamp(n.attr_int("end")) : rank;
  return {start, std::max(start, end)};
}

OpDef shape_op() {
  OpDef d;
  d.name = "Shape";
  d.oldest = 1;  // unchanged in meaning since opset 1
  d.attrs = {attr_i("start", 0), attr_opt("end", AttrType::Int)};
  d.reads_shapes_only = true;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, DType::Int64);
    auto [start, end] = shape_range(ctx.node(), ctx.rank(0));
    ctx.set_shape(0, {end - start});
  };
  d.reference = [](RefCtx& ctx) {
    const Shape& s = ctx.input(0).shape();
    auto [start, end] = shape_range(ctx.node(), static_cast<int64_t>(s.size()));
    for (int64_t i = start; i < end; ++i) ctx.output(0).set_i64(i - start, s[i]);
  };
  return d;
}

OpDef size_op() {
  OpDef d;
  d.name = "Size";
  d.oldest = 1;  // unchanged in meaning since opset 1
  d.reads_shapes_only = true;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, DType::Int64);
    ctx.shape(0);  // the shape must be known
    ctx.set_shape(0, {});
  };
  d.reference = [](RefCtx& ctx) { ctx.output(0).set_i64(0, checked_numel(ctx.input(0).shape())); };
  return d;
}

// ---- ConstantOfShape -------------------------------------------------------------------
OpDef constant_of_shape_op() {
  OpDef d;
  d.name = "ConstantOfShape";
  d.since = 9;
  d.attrs = {with_role(attr_opt("value", AttrType::Tensor), AttrRole::OutputValue)};
  d.shape_inputs = {0};
  d.types = DTypeSet{DType::Int64};
  d.infer = [](InferCtx& ctx) {
    const Node& n = ctx.node();
    DType dt = DType::Float32;  // the default value is a float32 zero
    if (n.has_attr("value")) {
      const Tensor& v = n.attr_tensor("value");
      if (v.numel() != 1)
        ctx.fail(fmt::format("value must hold one element, not {} (shape {})", v.numel(),
                             shape_str(v.shape())));
      dt = v.dtype();
    }
    ctx.set_dtype(0, dt);
    if (ctx.rank(0) != 1)
      ctx.fail(fmt::format("the shape input must be a vector, not of shape {}",
                           shape_str(ctx.shape(0))));
    std::vector<int64_t> dims = ctx.ints(0);
    for (int64_t x : dims)
      if (x < 0)
        ctx.fail(fmt::format("the shape [{}] has a negative dimension", fmt::join(dims, ",")));
    ctx.set_shape(0, dims);
  };
  d.reference = [](RefCtx& ctx) {
    if (!ctx.node().has_attr("value")) return;  // zero-filled already
    const Tensor& v = ctx.node().attr_tensor("value");
    Tensor& out = ctx.output(0);
    for (int64_t i = 0; i < out.numel(); ++i) copy_element(v, 0, out, i);
  };
  return d;
}

// ---- Constant --------------------------------------------------------------------------
const char* const kConstantAttrs[] = {"value",      "value_float",  "value_floats", "value_int",
                                      "value_ints", "value_string", "value_strings"};

// The one attribute that carries the constant's value.
std::string constant_source(const InferCtx& ctx) {
  std::vector<std::string> given;
  for (const char* a : kConstantAttrs)
    if (ctx.node().has_attr(a)) given.push_back(a);
  if (ctx.node().has_attr("sparse_value"))
    throw UnsupportedError(ctx.node().describe() +
                           ": sparse constants (sparse_value) are not supported");
  if (given.size() != 1)
    ctx.fail(fmt::format(
        "exactly one of value, value_float(s), value_int(s), value_string(s) must be given{}",
        given.empty() ? std::string() : fmt::format(", not {}", fmt::join(given, ", "))));
  if (given[0] == "value_string" || given[0] == "value_strings")
    throw UnsupportedError(fmt::format("{}: string constants ({}) are not supported",
                                       ctx.node().describe(), given[0]));
  return given[0];
}

OpDef constant_op() {
  OpDef d;
  d.name = "Constant";
  d.oldest = 1;  // unchanged in meaning since opset 1
  d.min_inputs = d.max_inputs = 0;
  d.attrs = {
      attr_opt("value", AttrType::Tensor),         attr_opt("value_float", AttrType::Float),
      attr_opt("value_floats", AttrType::Floats),  attr_opt("value_int", AttrType::Int),
      attr_opt("value_ints", AttrType::Ints),      attr_opt("value_string", AttrType::String),
      attr_opt("value_strings", AttrType::Strings)};
  d.infer = [](InferCtx& ctx) {
    const Node& n = ctx.node();
    std::string src = constant_source(ctx);
    if (src == "value") {
      const Tensor& t = n.attr_tensor("value");
      ctx.set_output(0, t.dtype(), t.shape());
    } else if (src == "value_float") {
      ctx.set_output(0, DType::Float32, {});
    } else if (src == "value_floats") {
      ctx.set_output(0, DType::Float32, {static_cast<int64_t>(n.attr_floats(src).size())});
    } else if (src == "value_int") {
      ctx.set_output(0, DType::Int64, {});
    } else {
      ctx.set_output(0, DType::Int64, {static_cast<int64_t>(n.attr_ints(src).size())});
    }
  };
  d.reference = [](RefCtx& ctx) {
    const Node& n = ctx.node();
    Tensor& out = ctx.output(0);
    if (n.has_attr("value")) {
      const Tensor& t = n.attr_tensor("value");
      if (t.nbytes()) std::memcpy(out.raw(), t.raw(), t.nbytes());
    } else if (n.has_attr("value_float")) {
      out.set_f64(0, n.attr_float("value_float"));
    } else if (n.has_attr("value_floats")) {
      std::vector<double> v = n.attr_floats("value_floats");
      for (size_t i = 0; i < v.size(); ++i) out.set_f64(static_cast<int64_t>(i), v[i]);
    } else if (n.has_attr("value_int")) {
      out.set_i64(0, n.attr_int("value_int"));
    } else {
      std::vector<int64_t> v = n.attr_ints("value_ints");
      for (size_t i = 0; i < v.size(); ++i) out.set_i64(static_cast<int64_t>(i), v[i]);
    }
  };
  return d;
}

// ---- Range -----------------------------------------------------------------------------
// max(ceil((limit - start) / delta), 0), exactly for integers.
int64_t range_count(const InferCtx& ctx, const Tensor& start, const Tensor& limit,
                    const Tensor& delta) {
  DType dt = start.dtype();
  if (is_float(dt)) {
    double s = start.get_f64(0), l = limit.get_f64(0), dl = delta.get_f64(0);
    if (!std::isfinite(s) || !std::isfinite(l) || !std::isfinite(dl))
      ctx.fail(fmt::format("start {}, limit {} and delta {} must be finite", s, l, dl));
    if (dl == 0) ctx.fail("delta must not be zero");
    double n = std::ceil((l - s) / dl);
    if (!(n < 9.0e15))
      ctx.fail(fmt::format("start {}, limit {}, delta {} give too many elements", s, l, dl));
    return n > 0 ? static_cast<int64_t>(n) : 0;
  }
  // 128-bit, so that limit - start cannot overflow for any 64-bit operands.
  auto wide = [&](const Tensor& t) -> __int128 {
    return is_unsigned_int(dt) ? static_cast<__int128>(t.get_u64(0)) : t.get_i64(0);
  };
  __int128 s = wide(start), l = wide(limit), dl = wide(delta);
  if (dl == 0) ctx.fail("delta must not be zero");
  __int128 span = l - s;
  if (span == 0 || (span > 0) != (dl > 0)) return 0;
  if (span < 0) {
    span = -span;
    dl = -dl;
  }
  __int128 n = (span + dl - 1) / dl;
  if (n > std::numeric_limits<int64_t>::max()) ctx.fail("the range has too many elements");
  return static_cast<int64_t>(n);
}

OpDef range_op() {
  OpDef d;
  d.name = "Range";
  d.since = 11;
  d.min_inputs = d.max_inputs = 3;
  d.shape_inputs = {0, 1, 2};
  d.types = kNumericTypes;
  d.infer = [](InferCtx& ctx) {
    DType dt = ctx.dtype(0);
    ctx.set_dtype(0, dt);
    const char* names[] = {"start", "limit", "delta"};
    for (size_t i = 0; i < 3; ++i) {
      if (ctx.dtype(i) != dt)
        ctx.fail(fmt::format("start, limit and delta must share a dtype ({} is {}, start is {})",
                             names[i], dtype_name(ctx.dtype(i)), dtype_name(dt)));
      if (checked_numel(ctx.shape(i)) != 1 || ctx.rank(i) > 1)
        ctx.fail(
            fmt::format("{} must be a scalar, not of shape {}", names[i], shape_str(ctx.shape(i))));
    }
    int64_t n = range_count(ctx, ctx.require_value(0), ctx.require_value(1), ctx.require_value(2));
    ctx.set_shape(0, {n});
  };
  // start + i * delta, with start and delta read as the constants shape inference needed.
  d.reference = [](RefCtx& ctx) {
    const Tensor &start = ctx.input(0), &delta = ctx.input(2);
    Tensor& out = ctx.output(0);
    DType dt = start.dtype();
    if (is_float(dt)) {
      double s = start.get_f64(0), dl = delta.get_f64(0);
      for (int64_t i = 0; i < out.numel(); ++i) out.set_f64(i, s + static_cast<double>(i) * dl);
    } else {  // wraps as two's complement past the dtype's range, as the dtype would
      uint64_t s = start.get_u64(0), dl = delta.get_u64(0);
      for (int64_t i = 0; i < out.numel(); ++i) out.set_u64(i, s + static_cast<uint64_t>(i) * dl);
    }
  };
  return d;
}

// ---- EyeLike ---------------------------------------------------------------------------
OpDef eye_like_op() {
  OpDef d;
  d.name = "EyeLike";
  d.since = 9;
  d.attrs = {with_role(attr_opt("dtype", AttrType::Int), AttrRole::OutputDType), attr_i("k", 0)};
  d.infer = [](InferCtx& ctx) {
    const Node& n = ctx.node();
    DType dt = ctx.dtype(0);
    if (n.has_attr("dtype")) {
      auto want = dtype_from_onnx(n.attr_int("dtype"));
      if (!want)
        throw UnsupportedError(fmt::format("{}: dtype {} is not supported", n.describe(),
                                           onnx_dtype_name(n.attr_int("dtype"))));
      dt = *want;
    }
    ctx.set_dtype(0, dt);
    if (ctx.rank(0) != 2)
      ctx.fail(fmt::format("the input must be a matrix, not of shape {}", shape_str(ctx.shape(0))));
    ctx.set_shape(0, ctx.shape(0));
  };
  d.reference = [](RefCtx& ctx) {
    Tensor& out = ctx.output(0);
    int64_t rows = out.shape()[0], cols = out.shape()[1];
    int64_t k = ctx.node().attr_int("k");
    for (int64_t i = 0; i < rows; ++i) {
      // Column i + k must lie in [0, cols); compared so that an extreme k cannot overflow.
      bool inside = k >= 0 ? k < cols - i : (i + k >= 0 && i + k < cols);
      if (inside) out.set_i64(i * cols + i + k, 1);
    }
  };
  return d;
}

}  // namespace

void register_generator_ops(std::vector<OpDef>& r) {
  r.push_back(shape_op());
  r.push_back(size_op());
  r.push_back(constant_of_shape_op());
  r.push_back(constant_op());
  r.push_back(range_op());
  r.push_back(eye_like_op());
}

}  // namespace braze::graph
