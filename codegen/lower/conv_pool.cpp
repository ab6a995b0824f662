// How the conv / pool ops (graph/ops/conv_pool.cpp) become CUDA.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "codegen/lower/families.h"
#include "graph/ops/conv_pool.h"
#include "graph/ops/helpers.h"

namespace braze::codegen {
namespace {

using namespace graph;
using namespace graph::ops;

// ---- GPU index maps ----------------------------------------------------------------------
// On the GPU one thread computes one output element: a loop over the window's taps (and the
// input channels) through ctx.accumulate, with a tap that falls in padding skipped through
// ctx.select so that its load is never issued. The geometry is the reference's.

// e * m as a `long long` expression.
std::string times(const std::string& e, int64_t m) {
  if (m == 0) return "0LL";
  if (m == 1) return e;
  return fmt::format("{} * {}LL", e, m);
}

// WindowTap k (a flat kernel index) of the window at output spatial coordinates o: its kernel
// coordinates, the input positions it reads and whether they all lie inside the input.
struct TapCode {
  std::vector<std::string> kernel, pos;
  std::string inside;
};

TapCode tap_code(CudaIndexCtx& ctx, const WindowGeometry& g, const std::vector<std::string>& o,
                 const std::string& k) {
  TapCode t;
  t.kernel = cuda_unravel(k, g.kernel);
  std::vector<std::string> conds;
  for (size_t d = 0; d < g.rank(); ++d) {
    std::string p =
        ctx.let("long long", fmt::format("{} + {} - {}LL", times(o[d], g.stride[d]),
                                         times(t.kernel[d], g.dilation[d]), g.pad_begin[d]));
    t.pos.push_back(p);
    conds.push_back(fmt::format("{0} >= 0LL && {0} < {1}LL", p, g.in[d]));
  }
  t.inside = fmt::format("{}", fmt::join(conds, " && "));
  return t;
}

// The lowest value of compute type t: the start of a running maximum.
std::string lowest_literal(ComputeType t) {
  return cuda_literal(t, -std::numeric_limits<double>::infinity());
}

// The running maximum acc after seeing v: NaN wins and stays (the reference's takes_over).
std::string max_step(ComputeType t, const std::string& acc, const std::string& v) {
  if (is_floating(t))
    return fmt::format("(({0} != {0}) ? {0} : (({1} != {1} || {1} > {0}) ? {1} : {0}))", acc, v);
  return fmt::format("({1} > {0} ? {1} : {0})", acc, v);
}

// GlobalMaxPool and GlobalAveragePool: one output per (n, c), a loop over the plane.
CudaIndexFn global_pool_index(bool is_max) {
  return [is_max](CudaIndexCtx& ctx) {
    const Shape& x = ctx.in_shape(0);
    const Shape plane(x.begin() + 2, x.end());
    const int64_t size = checked_numel(plane);
    const ComputeType t = compute_type(ctx.in_dtype(0));
    std::string r =
        ctx.accumulate(t, is_max ? lowest_literal(t) : cuda_literal(t, 0), size,
                       [&](const std::string& acc, const std::string& k) {
                         std::vector<std::string> xi = {ctx.coord(0), ctx.coord(1)};
                         for (const std::string& p : cuda_unravel(k, plane)) xi.push_back(p);
                         std::string v = ctx.load(0, xi);
                         return is_max ? max_step(t, acc, v) : fmt::format("{} + {}", acc, v);
                       });
    return is_max ? r : fmt::format("{} / {}", r, cuda_literal(t, static_cast<double>(size)));
  };
}

std::string conv_index(CudaIndexCtx& ctx) {
  const Shape* b = ctx.has_input(2) ? &ctx.in_shape(2) : nullptr;
  ConvShapes s = conv_shapes(ctx.node(), ctx.in_shape(0), ctx.in_shape(1), b);
  const WindowGeometry& g = s.g;
  const int64_t cg = s.c / s.group, mg = std::max<int64_t>(1, s.m / s.group);
  const ComputeType t = compute_type(ctx.in_dtype(0));
  const std::vector<std::string> c = out_coords(ctx);
  const std::string &n = c[0], &m = c[1];
  const std::vector<std::string> o(c.begin() + 2, c.end());
  // The first input channel of output channel m's group.
  const std::string ch0 = ctx.let("long long", times(fmt::format("({} / {}LL)", m, mg), cg));
  const std::string init = b ? ctx.load(2, {m}) : cuda_literal(t, 0);
  return ctx.accumulate(
      t, init, checked_numel(g.kernel), [&](const std::string& acc, const std::string& k) {
        TapCode tap = tap_code(ctx, g, o, k);
        std::string v = ctx.select(
            tap.inside, t,
            [&] {
              return ctx.accumulate(
                  t, cuda_literal(t, 0), cg, [&](const std::string& a, const std::string& cl) {
                    std::vector<std::string> xi = {
                        n, ctx.let("long long", fmt::format("{} + {}", ch0, cl))};
                    xi.insert(xi.end(), tap.pos.begin(), tap.pos.end());
                    std::vector<std::string> wi = {m, cl};
                    wi.insert(wi.end(), tap.kernel.begin(), tap.kernel.end());
                    return fmt::format("{} + {} * {}", a, ctx.load(0, xi), ctx.load(1, wi));
                  });
            },
            [&] { return cuda_literal(t, 0); });
        return fmt::format("{} + {}", acc, v);
      });
}

std::string conv_transpose_index(CudaIndexCtx& ctx) {
  const Shape* b = ctx.has_input(2) ? &ctx.in_shape(2) : nullptr;
  ConvShapes s = conv_transpose_shapes(ctx.node(), ctx.in_shape(0), ctx.in_shape(1), b);
  const WindowGeometry& g = s.g;
  const int64_t cg = s.c / s.group, mg = std::max<int64_t>(1, s.m / s.group);
  const ComputeType t = compute_type(ctx.in_dtype(0));
  const std::vector<std::string> c = out_coords(ctx);
  const std::string &n = c[0], &m = c[1];
  const std::vector<std::string> o(c.begin() + 2, c.end());
  const std::string ch0 = ctx.let("long long", times(fmt::format("({} / {}LL)", m, mg), cg));
  const std::string ml = mg == 1 ? "0LL" : ctx.let("long long", fmt::format("{} % {}LL", m, mg));
  const std::string init = b ? ctx.load(2, {m}) : cuda_literal(t, 0);
  return ctx.accumulate(
      t, init, checked_numel(g.kernel), [&](const std::string& acc, const std::string& k) {
        std::vector<std::string> kd = cuda_unravel(k, g.kernel), pos, conds;
        for (size_t dd = 0; dd < g.rank(); ++dd) {
          std::string num = ctx.let(
              "long long",
              fmt::format("{} + {}LL - {}", o[dd], g.pad_begin[dd], times(kd[dd], g.dilation[dd])));
          int64_t st = g.stride[dd];
          if (st == 1) {
            conds.push_back(fmt::format("{0} >= 0LL && {0} < {1}LL", num, g.in[dd]));
            pos.push_back(num);
          } else {
            conds.push_back(fmt::format("{0} >= 0LL && {0} % {1}LL == 0LL && {0} / {1}LL < {2}LL",
                                        num, st, g.in[dd]));
            pos.push_back(fmt::format("({} / {}LL)", num, st));
          }
        }
        std::string v = ctx.select(
            fmt::format("{}", fmt::join(conds, " && ")), t,
            [&] {
              return ctx.accumulate(
                  t, cuda_literal(t, 0), cg, [&](const std::string& a, const std::string& cl) {
                    std::string ch = ctx.let("long long", fmt::format("{} + {}", ch0, cl));
                    std::vector<std::string> xi = {n, ch};
                    xi.insert(xi.end(), pos.begin(), pos.end());
                    std::vector<std::string> wi = {ch, ml};
                    wi.insert(wi.end(), kd.begin(), kd.end());
                    return fmt::format("{} + {} * {}", a, ctx.load(0, xi), ctx.load(1, wi));
                  });
            },
            [&] { return cuda_literal(t, 0); });
        return fmt::format("{} + {}", acc, v);
      });
}

std::string max_pool_index(CudaIndexCtx& ctx) {
  PoolShapes s = pool_shapes(ctx.node(), ctx.in_shape(0));
  const WindowGeometry& g = s.g;
  const ComputeType t = compute_type(ctx.in_dtype(0));
  const std::vector<std::string> c = out_coords(ctx);
  const std::vector<std::string> o(c.begin() + 2, c.end());
  const int64_t ksize = checked_numel(g.kernel);
  auto x_at = [&](const TapCode& tap) {
    std::vector<std::string> xi = {c[0], c[1]};
    xi.insert(xi.end(), tap.pos.begin(), tap.pos.end());
    return ctx.load(0, xi);
  };
  std::string best = ctx.accumulate(
      t, lowest_literal(t), ksize, [&](const std::string& acc, const std::string& k) {
        TapCode tap = tap_code(ctx, g, o, k);
        return ctx.select(
            tap.inside, t, [&] { return max_step(t, acc, x_at(tap)); }, [&] { return acc; });
      });
  if (ctx.output_index() == 0) return best;
  // Flat index into X: the plane's start plus the tap's offset in the plane, row-major or
  // (storage_order 1) column-major.
  const bool col_major = ctx.node().attr_int("storage_order") == 1;
  std::vector<int64_t> mult(g.rank());
  int64_t step = 1;
  for (size_t dd = 0; dd < g.rank(); ++dd) {
    size_t e = col_major ? dd : g.rank() - 1 - dd;
    mult[e] = step;
    step *= g.in[e];
  }
  const std::string base = ctx.let(
      "long long", fmt::format("({} * {}LL + {}) * {}LL", c[0], s.c, c[1], checked_numel(g.in)));
  return ctx.accumulate(
      "long long", "-1LL", ksize, [&](const std::string& acc, const std::string& k) {
        TapCode tap = tap_code(ctx, g, o, k);
        return ctx.select(
            fmt::format("{} < 0LL && {}", acc, tap.inside), "long long",
            [&] {
              std::string v = x_at(tap);
              std::string match =
                  is_floating(t)
                      ? fmt::format("({0} == {1} || ({0} != {0} && {1} != {1}))", v, best)
                      : fmt::format("{} == {}", v, best);
              std::string off = base;
              for (size_t dd = 0; dd < g.rank(); ++dd) off += " + " + times(tap.pos[dd], mult[dd]);
              return fmt::format("(({}) ? {} : {})", match, off, acc);
            },
            [&] { return acc; });
      });
}

std::string average_pool_index(CudaIndexCtx& ctx) {
  const bool include_pad = ctx.node().attr_int("count_include_pad") == 1;
  PoolShapes s = pool_shapes(ctx.node(), ctx.in_shape(0));
  const WindowGeometry& g = s.g;
  const ComputeType t = compute_type(ctx.in_dtype(0));
  const std::vector<std::string> c = out_coords(ctx);
  const std::vector<std::string> o(c.begin() + 2, c.end());
  std::string sum = ctx.accumulate(t, cuda_literal(t, 0), checked_numel(g.kernel),
                                   [&](const std::string& acc, const std::string& k) {
                                     TapCode tap = tap_code(ctx, g, o, k);
                                     std::string v = ctx.select(
                                         tap.inside, t,
                                         [&] {
                                           std::vector<std::string> xi = {c[0], c[1]};
                                           xi.insert(xi.end(), tap.pos.begin(), tap.pos.end());
                                           return ctx.load(0, xi);
                                         },
                                         [&] { return cuda_literal(t, 0); });
                                     return fmt::format("{} + {}", acc, v);
                                   });
  std::vector<std::string> counts;
  for (size_t dd = 0; dd < g.rank(); ++dd) {
    counts.push_back(ctx.accumulate(
        "long long", "0LL", g.kernel[dd], [&](const std::string& acc, const std::string& k) {
          if (include_pad)
            return fmt::format("{} + ({} + {} < {}LL ? 1LL : 0LL)", acc, times(o[dd], g.stride[dd]),
                               times(k, g.dilation[dd]),
                               g.in[dd] + g.pad_begin[dd] + g.pad_end[dd]);
          std::string p =
              ctx.let("long long", fmt::format("{} + {} - {}LL", times(o[dd], g.stride[dd]),
                                               times(k, g.dilation[dd]), g.pad_begin[dd]));
          return fmt::format("{0} + ({1} >= 0LL && {1} < {2}LL ? 1LL : 0LL)", acc, p, g.in[dd]);
        }));
  }
  return fmt::format("{} / ({})({})", sum, t, fmt::join(counts, " * "));
}

}  // namespace

void lower_conv_pool_ops(LoweringTable& t) {
  const std::pair<const char*, CudaIndexFn> loops[] = {
      {"Conv", conv_index},
      {"ConvTranspose", conv_transpose_index},
      {"MaxPool", max_pool_index},
      {"AveragePool", average_pool_index},
      {"GlobalAveragePool", global_pool_index(false)},
      {"GlobalMaxPool", global_pool_index(true)}};
  for (const auto& [name, fn] : loops) {
    Lowering& l = t.add(name);
    l.index = fn;
    l.schedule = "direct";
  }
}

}  // namespace braze::codegen
