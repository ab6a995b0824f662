// How the data-movement ops (graph/ops/movement.cpp) become CUDA: each op's output element as
// a load of its input at computed coordinates, and for the ops that keep their input's
// elements in order or permute them, the forward map a GEMM epilogue stores through.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "codegen/lower/families.h"
#include "graph/ops/movement.h"

namespace braze::codegen {
namespace {

using namespace graph;

// Ops whose output holds the input's elements in the same order (Reshape, Flatten,
// Squeeze, Unsqueeze): the output coordinate's flat offset, unravelled in the input.
std::string same_order_index(CudaIndexCtx& ctx) {
  std::string flat = ctx.let("long long", cuda_linearize(out_coords(ctx), ctx.out_shape()));
  return ctx.load(0, cuda_unravel(flat, ctx.in_shape(0)));
}

// The forward map of a same-order op: flat offset in the input, unravelled in the output.
// The dims it leaves alone at either end keep their coordinates, and only those between are
// linearised and unravelled: [1024, 2304] -> [8, 128, 2304] maps (i, j) to (i / 128, i % 128,
// j), not to three divisions of i * 2304 + j (a GEMM epilogue computes them for every
// element, and a bias indexed by j needs no division at all).
std::vector<std::string> same_order_forward(const Node&, const std::vector<std::string>& in,
                                            const Shape& in_shape, const Shape& out_shape) {
  const size_t ni = in_shape.size(), no = out_shape.size();
  size_t p = 0, s = 0;
  while (p < ni && p < no && in_shape[p] == out_shape[p]) ++p;
  while (s < ni - p && s < no - p && in_shape[ni - 1 - s] == out_shape[no - 1 - s]) ++s;
  std::vector<std::string> out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(p));
  const std::vector<std::string> mid_in(in.begin() + static_cast<std::ptrdiff_t>(p),
                                        in.end() - static_cast<std::ptrdiff_t>(s));
  const Shape in_mid(in_shape.begin() + static_cast<std::ptrdiff_t>(p),
                     in_shape.end() - static_cast<std::ptrdiff_t>(s));
  const Shape out_mid(out_shape.begin() + static_cast<std::ptrdiff_t>(p),
                      out_shape.end() - static_cast<std::ptrdiff_t>(s));
  for (std::string& c : cuda_unravel(cuda_linearize(mid_in, in_mid), out_mid))
    out.push_back(std::move(c));
  out.insert(out.end(), in.end() - static_cast<std::ptrdiff_t>(s), in.end());
  return out;
}

std::optional<std::vector<int64_t>> const_list(const CudaIndexCtx& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  return ctx.in_value(i)->to_int64s();
}

std::string transpose_index(CudaIndexCtx& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.in_shape(0).size());
  std::vector<int64_t> perm = transpose_perm(ctx.node(), rank);
  std::vector<std::string> in(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d)
    in[static_cast<size_t>(perm[static_cast<size_t>(d)])] = ctx.coord(static_cast<size_t>(d));
  return ctx.load(0, in);
}

std::vector<std::string> transpose_forward(const Node& n, const std::vector<std::string>& in,
                                           const Shape& in_shape, const Shape&) {
  std::vector<int64_t> perm = transpose_perm(n, static_cast<int64_t>(in_shape.size()));
  std::vector<std::string> out(in.size());
  for (size_t d = 0; d < perm.size(); ++d) out[d] = in[static_cast<size_t>(perm[d])];
  return out;
}

std::string expand_index(CudaIndexCtx& ctx) {
  const Shape& in = ctx.in_shape(0);
  const size_t off = ctx.out_shape().size() - in.size();
  std::vector<std::string> c(in.size());
  for (size_t d = 0; d < in.size(); ++d) c[d] = in[d] == 1 ? "0LL" : ctx.coord(off + d);
  return ctx.load(0, c);
}

std::string tile_index(CudaIndexCtx& ctx) {
  const Shape& in = ctx.in_shape(0);
  std::vector<std::string> c(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    c[d] = in[d] == ctx.out_shape()[d] ? ctx.coord(d)
                                       : fmt::format("({} % {}LL)", ctx.coord(d), in[d]);
  return ctx.load(0, c);
}

std::string concat_index(CudaIndexCtx& ctx) {
  int64_t axis = ctx.node().attr_int("axis");
  if (axis < 0) axis += static_cast<int64_t>(ctx.out_shape().size());
  const size_t a = static_cast<size_t>(axis);
  std::vector<std::string> c = out_coords(ctx);
  std::string type = cuda_compute_type(ctx.in_dtype(0));
  std::function<std::string(size_t, int64_t)> from = [&](size_t i, int64_t at) -> std::string {
    std::vector<std::string> ci = c;
    ci[a] = fmt::format("({} - {}LL)", c[a], at);
    int64_t size = ctx.in_shape(i)[a];
    if (i + 1 == ctx.node().inputs.size()) return ctx.load(i, ci);
    if (size == 0) return from(i + 1, at);
    return ctx.select(
        fmt::format("{} < {}LL", c[a], at + size), type, [&] { return ctx.load(i, ci); },
        [&] { return from(i + 1, at + size); });
  };
  return from(0, 0);
}

std::string split_index(CudaIndexCtx& ctx) {
  const Shape& in = ctx.in_shape(0);
  int64_t axis = ctx.node().attr_int("axis");
  if (axis < 0) axis += static_cast<int64_t>(in.size());
  std::vector<int64_t> sizes = split_sizes(ctx.node(), in[static_cast<size_t>(axis)],
                                           ctx.node().outputs.size(), const_list(ctx, 1));
  int64_t at = 0;
  for (size_t i = 0; i < ctx.output_index(); ++i) at += sizes[i];
  std::vector<std::string> c = out_coords(ctx);
  c[static_cast<size_t>(axis)] = fmt::format("({} + {}LL)", c[static_cast<size_t>(axis)], at);
  return ctx.load(0, c);
}

std::string slice_index(CudaIndexCtx& ctx) {
  std::vector<AxisRange> ranges =
      slice_ranges(ctx.node(), ctx.in_shape(0), ctx.in_value(1)->to_int64s(),
                   ctx.in_value(2)->to_int64s(), const_list(ctx, 3), const_list(ctx, 4));
  std::vector<std::string> c = out_coords(ctx);
  for (size_t d = 0; d < ranges.size(); ++d)
    if (ranges[d].start != 0 || ranges[d].step != 1)
      c[d] = fmt::format("({}LL + {} * {}LL)", ranges[d].start, c[d], ranges[d].step);
  return ctx.load(0, c);
}

std::string pad_index(CudaIndexCtx& ctx) {
  const Shape& in = ctx.in_shape(0);
  PadSpec p = pad_spec(ctx.node(), in, ctx.in_value(1)->to_int64s(), const_list(ctx, 3));
  std::vector<std::string> c = out_coords(ctx), src(in.size());
  std::string inside;
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t dim = in[d], b = p.begin[d], e = p.end[d];
    int64_t lo = std::max<int64_t>(0, -b), hi = dim - std::max<int64_t>(0, -e), m = hi - lo;
    std::string x = ctx.let("long long", fmt::format("{} - {}LL", c[d], b));
    switch (p.mode) {
      case PadMode::Constant:
        src[d] = x;
        if (b > 0 || e > 0 || lo > 0 || hi < dim)
          inside += fmt::format("{}({} >= {}LL && {} < {}LL)", inside.empty() ? "" : " && ", x, lo,
                                x, hi);
        break;
      case PadMode::Edge:
        src[d] =
            fmt::format("({0} < {1}LL ? {1}LL : ({0} >= {2}LL ? {3}LL : {0}))", x, lo, hi, hi - 1);
        break;
      case PadMode::Wrap:
        src[d] = fmt::format("({1}LL + (({0} - {1}LL) % {2}LL + {2}LL) % {2}LL)", x, lo, m);
        break;
      case PadMode::Reflect:
        if (m == 1) {
          src[d] = fmt::format("{}LL", lo);
        } else {
          int64_t period = 2 * (m - 1);
          std::string y = ctx.let(
              "long long", fmt::format("(({0} - {1}LL) % {2}LL + {2}LL) % {2}LL", x, lo, period));
          src[d] = fmt::format("({1}LL + ({0} < {2}LL ? {0} : {3}LL - {0}))", y, lo, m, period);
        }
        break;
    }
  }
  if (inside.empty()) return ctx.load(0, src);
  const ComputeType type = compute_type(ctx.in_dtype(0));
  return ctx.select(
      inside, cuda_name(type), [&] { return ctx.load(0, src); },
      [&] {
        return ctx.has_input(2)
                   ? ctx.load(2, std::vector<std::string>(ctx.in_shape(2).size(), "0LL"))
                   : cuda_literal(type, 0);
      });
}

std::string depth_to_space_index(CudaIndexCtx& ctx) {
  const int64_t b = ctx.node().attr_int("blocksize"), cout = ctx.out_shape()[1];
  std::vector<std::string> c = out_coords(ctx);
  std::string i = ctx.let("long long", fmt::format("{} % {}LL", c[2], b));
  std::string j = ctx.let("long long", fmt::format("{} % {}LL", c[3], b));
  std::string ch = crd_mode(ctx.node())
                       ? fmt::format("({} * {}LL + {} * {}LL + {})", c[1], b * b, i, b, j)
                       : fmt::format("(({} * {}LL + {}) * {}LL + {})", i, b, j, cout, c[1]);
  return ctx.load(
      0, {c[0], ch, fmt::format("({} / {}LL)", c[2], b), fmt::format("({} / {}LL)", c[3], b)});
}

std::string space_to_depth_index(CudaIndexCtx& ctx) {
  const int64_t b = ctx.node().attr_int("blocksize"), cin = ctx.in_shape(0)[1];
  std::vector<std::string> c = out_coords(ctx);
  std::string i = ctx.let("long long", fmt::format("{} / {}LL", c[1], b * cin));
  std::string j = ctx.let("long long", fmt::format("({} / {}LL) % {}LL", c[1], cin, b));
  std::string ch = fmt::format("({} % {}LL)", c[1], cin);
  return ctx.load(0, {c[0], ch, fmt::format("({} * {}LL + {})", c[2], b, i),
                      fmt::format("({} * {}LL + {})", c[3], b, j)});
}

std::string trilu_index(CudaIndexCtx& ctx) {
  const size_t r = ctx.out_shape().size();
  std::string k = "0LL";
  if (ctx.has_input(1) && ctx.in_value(1)) {
    int64_t kv = std::clamp<int64_t>(ctx.in_value(1)->get_i64(0), -ctx.out_shape()[r - 2] - 1,
                                     ctx.out_shape()[r - 1] + 1);
    k = fmt::format("{}LL", kv);
  } else if (ctx.has_input(1)) {
    k = ctx.load(1, std::vector<std::string>(ctx.in_shape(1).size(), "0LL"));
  }
  bool upper = ctx.node().attr_int("upper") != 0;
  std::string keep =
      fmt::format("{} - {} {} {}", ctx.coord(r - 1), ctx.coord(r - 2), upper ? ">=" : "<=", k);
  return fmt::format("({} ? {} : {})", keep, ctx.load(0, out_coords(ctx)),
                     cuda_literal(compute_type(ctx.in_dtype(0)), 0));
}

}  // namespace

void lower_movement_ops(LoweringTable& t) {
  t.add("Reshape").index = same_order_index;
  t.add("Reshape").forward = same_order_forward;
  t.add("Flatten").index = same_order_index;
  t.add("Flatten").forward = same_order_forward;
  t.add("Squeeze").index = same_order_index;
  t.add("Squeeze").forward = same_order_forward;
  t.add("Unsqueeze").index = same_order_index;
  t.add("Unsqueeze").forward = same_order_forward;
  t.add("Transpose").index = transpose_index;
  t.add("Transpose").forward = transpose_forward;
  t.add("Expand").index = expand_index;
  t.add("Tile").index = tile_index;
  t.add("Concat").index = concat_index;
  t.add("Split").index = split_index;
  t.add("Slice").index = slice_index;
  t.add("Pad").index = pad_index;
  t.add("DepthToSpace").index = depth_to_space_index;
  t.add("SpaceToDepth").index = space_to_depth_index;
  t.add("Trilu").index = trilu_index;
}

}  // namespace braze::codegen
