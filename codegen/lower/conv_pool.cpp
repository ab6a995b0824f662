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

// ---- Channels at a time ---------------------------------------------------------------
// In a channels-last plan the pointwise schedule's vector lanes run along the output's
// channels (the emitter's Lowering::lanes), and a depthwise convolution or pooling computes
// them together: one loop over the window's taps, each tap's loads of the lanes' channels one
// vector load (X channels-last; a depthwise W stored [taps…, 1, C] by
// store_depthwise_weights_channels_last), where lane by lane each would be a scalar load in a
// loop of its own. The scalar index maps are the same code with one channel.

// The channel coordinate of each lane (coordinate 1 where the call has one lane); none where
// the lanes run along another dimension.
std::vector<std::string> lane_channels(const CudaIndexCtx& ctx) {
  if (ctx.lanes() == 1) return {ctx.coord(1)};
  if (ctx.lane_dim() != 1) return {};
  std::vector<std::string> ch;
  for (int j = 0; j < ctx.lanes(); ++j) ch.push_back(ctx.lane_coord(j));
  return ch;
}

// A window reduced per channel: acc_j = inits[j], then for each tap inside the input
// acc_j = step(acc_j, channels[j], tap), where a tap in the padding leaves it. Without a
// branch: every tap loads (a tap in the padding at position 0, inside the input) and a select
// keeps the accumulator where the tap is outside, so that the loop's loads are independent of
// one another and in flight together; a branch a tap kept one tap's loads in flight at a time
// (the stride-2 depthwise 3x3 from 112 x 112 x 96 at 54% of DRAM's bandwidth on the H100).
using WindowStep =
    std::function<std::string(const std::string& acc, const std::string& ch, const TapCode& tap)>;
std::vector<std::string> window_lanes(CudaIndexCtx& ctx, const WindowGeometry& g, ComputeType t,
                                      const std::vector<std::string>& inits,
                                      const std::vector<std::string>& channels,
                                      const WindowStep& step) {
  const std::vector<std::string> c = out_coords(ctx);
  const std::vector<std::string> o(c.begin() + 2, c.end());
  return ctx.accumulate_n(
      cuda_name(t), inits, checked_numel(g.kernel),
      [&](const CudaIndexCtx::Values& accs, const std::string& k) {
        TapCode tap = tap_code(ctx, g, o, k);
        const std::string inside = ctx.let("bool", tap.inside);
        for (std::string& p : tap.pos)
          p = ctx.let("long long", fmt::format("({} ? {} : 0LL)", inside, p));
        CudaIndexCtx::Values next;
        for (size_t j = 0; j < accs.size(); ++j)
          next.push_back(ctx.let(
              cuda_name(t),
              fmt::format("{} ? {} : {}", inside, step(accs[j], channels[j], tap), accs[j])));
        return next;
      });
}

// X at (n, ch) and the tap's input position.
std::string x_at_tap(CudaIndexCtx& ctx, const std::string& ch, const TapCode& tap) {
  std::vector<std::string> xi = {ctx.coord(0), ch};
  xi.insert(xi.end(), tap.pos.begin(), tap.pos.end());
  return ctx.load(0, xi);
}

// A depthwise convolution (one input and one output channel a group), channels at a time.
std::vector<std::string> depthwise_lanes(CudaIndexCtx& ctx) {
  const std::vector<std::string> channels = lane_channels(ctx);
  if (channels.empty() || ctx.lanes() == 1) return {};
  const Shape* b = ctx.has_input(2) ? &ctx.in_shape(2) : nullptr;
  const ConvShapes s = conv_shapes(ctx.node(), ctx.in_shape(0), ctx.in_shape(1), b);
  if (s.group != s.c || s.m != s.c) return {};
  const ComputeType t = compute_type(ctx.in_dtype(0));
  std::vector<std::string> inits;
  for (const std::string& ch : channels)
    inits.push_back(b ? ctx.load(2, {ch}) : cuda_literal(t, 0));
  return window_lanes(ctx, s.g, t, inits, channels,
                      [&](const std::string& acc, const std::string& ch, const TapCode& tap) {
                        std::vector<std::string> wi = {ch, "0LL"};
                        wi.insert(wi.end(), tap.kernel.begin(), tap.kernel.end());
                        return fmt::format("{} + {} * {}", acc, x_at_tap(ctx, ch, tap),
                                           ctx.load(1, wi));
                      });
}

// MaxPool's values (output 0), channels at a time or one.
std::vector<std::string> max_pool_lanes(CudaIndexCtx& ctx) {
  const std::vector<std::string> channels = lane_channels(ctx);
  if (channels.empty() || ctx.output_index() != 0) return {};
  const PoolShapes s = pool_shapes(ctx.node(), ctx.in_shape(0));
  const ComputeType t = compute_type(ctx.in_dtype(0));
  return window_lanes(ctx, s.g, t, std::vector<std::string>(channels.size(), lowest_literal(t)),
                      channels,
                      [&](const std::string& acc, const std::string& ch, const TapCode& tap) {
                        return max_step(t, acc, x_at_tap(ctx, ch, tap));
                      });
}

// AveragePool's divisor at the output position: the taps inside the input (or inside the
// padded input, with count_include_pad), the same for every channel.
std::string average_pool_count(CudaIndexCtx& ctx, const WindowGeometry& g) {
  const bool include_pad = ctx.node().attr_int("count_include_pad") == 1;
  const std::vector<std::string> c = out_coords(ctx);
  const std::vector<std::string> o(c.begin() + 2, c.end());
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
  return fmt::format("{}", fmt::join(counts, " * "));
}

// AveragePool's values, channels at a time or one.
std::vector<std::string> average_pool_lanes(CudaIndexCtx& ctx) {
  const std::vector<std::string> channels = lane_channels(ctx);
  if (channels.empty()) return {};
  const PoolShapes s = pool_shapes(ctx.node(), ctx.in_shape(0));
  const WindowGeometry& g = s.g;
  const ComputeType t = compute_type(ctx.in_dtype(0));
  std::vector<std::string> sums = window_lanes(
      ctx, g, t, std::vector<std::string>(channels.size(), cuda_literal(t, 0)), channels,
      [&](const std::string& acc, const std::string& ch, const TapCode& tap) {
        return fmt::format("{} + {}", acc, x_at_tap(ctx, ch, tap));
      });
  const std::string count = average_pool_count(ctx, g);
  for (std::string& sum : sums) sum = fmt::format("{} / ({})({})", sum, t, count);
  return sums;
}

// GlobalMaxPool: one output per (n, c), a loop over the plane. (GlobalAveragePool is a row
// program: codegen/lower/reduction.cpp.)
std::string global_max_pool_index(CudaIndexCtx& ctx) {
  const Shape& x = ctx.in_shape(0);
  const Shape plane(x.begin() + 2, x.end());
  const ComputeType t = compute_type(ctx.in_dtype(0));
  return ctx.accumulate(t, lowest_literal(t), checked_numel(plane),
                        [&](const std::string& acc, const std::string& k) {
                          std::vector<std::string> xi = {ctx.coord(0), ctx.coord(1)};
                          for (const std::string& p : cuda_unravel(k, plane)) xi.push_back(p);
                          return max_step(t, acc, ctx.load(0, xi));
                        });
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
  auto x_at = [&](const TapCode& tap) { return x_at_tap(ctx, c[1], tap); };
  const std::string best =
      window_lanes(ctx, g, t, {lowest_literal(t)}, {c[1]},
                   [&](const std::string& acc, const std::string&, const TapCode& tap) {
                     return max_step(t, acc, x_at(tap));
                   })
          .at(0);
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

std::string average_pool_index(CudaIndexCtx& ctx) { return average_pool_lanes(ctx).at(0); }

}  // namespace

void lower_conv_pool_ops(LoweringTable& t) {
  const std::pair<const char*, CudaIndexFn> loops[] = {{"Conv", conv_index},
                                                       {"ConvTranspose", conv_transpose_index},
                                                       {"MaxPool", max_pool_index},
                                                       {"AveragePool", average_pool_index},
                                                       {"GlobalMaxPool", global_max_pool_index}};
  for (const auto& [name, fn] : loops) {
    Lowering& l = t.add(name);
    l.index = fn;
    l.schedule = "direct";
  }
  t.add("Conv").lanes = depthwise_lanes;
  t.add("Conv").lanes_schedule = "depthwise";
  for (const auto& [name, fn] : {std::pair<const char*, CudaLanesFn>{"MaxPool", max_pool_lanes},
                                 {"AveragePool", average_pool_lanes}}) {
    t.add(name).lanes = fn;
    t.add(name).lanes_schedule = "pool";
  }
}

}  // namespace braze::codegen
