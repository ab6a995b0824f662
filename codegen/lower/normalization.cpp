// How the normalization ops (graph/ops/normalization.cpp) become CUDA.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "codegen/lower/families.h"
#include "graph/ops/normalization.h"
#include "graph/ops/helpers.h"

namespace braze::codegen {
namespace {

using namespace graph;
using namespace graph::ops;

// ---- row programs (codegen/cuda_hooks.h) -----------------------------------------------
// Mean-and-variance passes over a row: s0 = sum(x), s1 = sum((x - mean)^2); so mean is
// {s0} / {n} and the (population) variance {s1} / {n}.
struct RowStats {
  ComputeType t;  // accumulator type
  std::string mean() const { return "({s0} / {n})"; }
  std::string var() const { return "({s1} / {n})"; }
  std::string rsqrt(const std::string& v) const {
    return fmt::format("(({})1 / {}({}))", t, cuda_math(t, "sqrt"), v);
  }
  std::vector<CudaRowProgram::Pass> passes() const {
    return {{Combine::Sum, "{x}", t}, {Combine::Sum, "({x} - {s0} / {n}) * ({x} - {s0} / {n})", t}};
  }
};

RowStats row_stats(DType dt) {
  return {dt == DType::Float64 ? ComputeType::Double : ComputeType::Float};
}

// InstanceNormalization (groups = C) and GroupNormalization: X viewed as
// [N, G, C/G, D1 …], each (n, g) a row; scale and bias per channel.
std::optional<CudaRowProgram> group_norm_row(const Node& n, const CudaRowInputs& in,
                                             int64_t groups) {
  const Shape& x = in.shapes[0];
  RowStats st = row_stats(in.dtypes[0]);
  std::string eps = cuda_literal(st.t, n.attr_float("epsilon"));
  CudaRowProgram p;
  p.x_view = {x[0], groups, groups ? x[1] / groups : 0};
  Shape param = {groups, groups ? x[1] / groups : 0};
  for (size_t d = 2; d < x.size(); ++d) p.x_view.push_back(x[d]), param.push_back(1);
  for (int64_t a = 2; a < static_cast<int64_t>(p.x_view.size()); ++a) p.axes.push_back(a);
  p.views = {param, param};
  p.passes = st.passes();
  p.outputs = {{true, fmt::format("({{x}} - {}) * {} * {{in1}} + {{in2}}", st.mean(),
                                  st.rsqrt(st.var() + " + " + eps))}};
  return p;
}

std::optional<CudaRowProgram> layer_normalization_row(const Node& n, const CudaRowInputs& in) {
  const int64_t rank = static_cast<int64_t>(in.shapes[0].size());
  int64_t axis = n.attr_int("axis");
  if (axis < 0) axis += rank;
  RowStats st = row_stats(in.dtypes[0]);
  std::string eps = cuda_literal(st.t, n.attr_float("epsilon"));
  std::string inv = st.rsqrt(st.var() + " + " + eps);
  CudaRowProgram p;
  for (int64_t a = axis; a < rank; ++a) p.axes.push_back(a);
  p.passes = st.passes();
  std::string y = fmt::format("({{x}} - {}) * {} * {{in1}}", st.mean(), inv);
  if (n.has_input(2)) y += " + {in2}";
  p.outputs = {{true, y}, {false, st.mean()}, {false, inv}};
  return p;
}

std::optional<CudaRowProgram> batch_normalization_row(const Node& n, const CudaRowInputs& in) {
  const Shape& x = in.shapes[0];
  RowStats st = row_stats(in.dtypes[0]);
  std::string eps = cuda_literal(st.t, n.attr_float("epsilon"));
  CudaRowProgram p;
  p.views.assign(4, channel_view(x));
  if (n.attr_int("training_mode") == 0) {
    p.outputs = {{true, fmt::format("({{x}} - {{in3}}) * {} * {{in1}} + {{in2}}",
                                    st.rsqrt("{in4} + " + eps))}};
    return p;
  }
  for (int64_t a = 0; a < static_cast<int64_t>(x.size()); ++a)
    if (a != 1) p.axes.push_back(a);
  p.passes = st.passes();
  std::string mom = cuda_literal(st.t, n.attr_float("momentum")),
              rest = cuda_literal(st.t, 1 - n.attr_float("momentum"));
  p.outputs = {{true, fmt::format("({{x}} - {}) * {} * {{in1}} + {{in2}}", st.mean(),
                                  st.rsqrt(st.var() + " + " + eps))},
               {false, fmt::format("{{in3}} * {} + {} * {}", mom, st.mean(), rest)},
               {false, fmt::format("{{in4}} * {} + {} * {}", mom, st.var(), rest)}};
  return p;
}

std::optional<CudaRowProgram> lp_normalization_row(const Node& n, const CudaRowInputs& in) {
  const int64_t rank = static_cast<int64_t>(in.shapes[0].size());
  int64_t axis = n.attr_int("axis");
  const ComputeType t = row_stats(in.dtypes[0]).t;
  bool l1 = n.attr_int("p") == 1;
  CudaRowProgram p;
  p.axes = {axis < 0 ? axis + rank : axis};
  p.passes = {{Combine::Sum, l1 ? cuda_math(t, "fabs") + "({x})" : "{x} * {x}", t}};
  std::string norm = l1 ? "{s0}" : cuda_math(t, "sqrt") + "({s0})";
  p.outputs = {{true, fmt::format("({{s0}} == 0 ? ({})0 : {{x}} / {})", t, norm)}};
  return p;
}

std::string lrn_index(CudaIndexCtx& ctx) {
  const Node& node = ctx.node();
  const Shape& x = ctx.in_shape(0);
  const int64_t size = node.attr_int("size"), before = (size - 1) / 2;
  const ComputeType t = compute_type(ctx.in_dtype(0));
  std::vector<std::string> c;
  for (size_t d = 0; d < x.size(); ++d) c.push_back(ctx.coord(d));
  std::string sq = ctx.accumulate(
      t, cuda_literal(t, 0), size, [&](const std::string& acc, const std::string& k) {
        std::string ch = ctx.let("long long", fmt::format("{} - {}LL + {}", c[1], before, k));
        std::vector<std::string> at = c;
        at[1] = ch;
        std::string v = ctx.select(
            fmt::format("{0} >= 0 && {0} < {1}LL", ch, x[1]), t, [&] { return ctx.load(0, at); },
            [&] { return cuda_literal(t, 0); });
        return fmt::format("{} + {} * {}", acc, v, v);
      });
  return fmt::format("{} / {}({} + {} * {}, {})", ctx.load(0, c), cuda_math(t, "pow"),
                     cuda_literal(t, node.attr_float("bias")),
                     cuda_literal(t, node.attr_float("alpha") / static_cast<double>(size)), sq,
                     cuda_literal(t, node.attr_float("beta")));
}

}  // namespace

void lower_normalization_ops(LoweringTable& t) {
  t.add("LayerNormalization").row = layer_normalization_row;
  t.add("BatchNormalization").row = batch_normalization_row;
  t.add("InstanceNormalization").row = [](const Node& n, const CudaRowInputs& in) {
    return group_norm_row(n, in, in.shapes[0][1]);
  };
  t.add("GroupNormalization").row = [](const Node& n, const CudaRowInputs& in) {
    return group_norm_row(n, in, n.attr_int("num_groups"));
  };
  t.add("MeanVarianceNormalization").row =
      [](const Node& n, const CudaRowInputs& in) -> std::optional<CudaRowProgram> {
    const int64_t rank = static_cast<int64_t>(in.shapes[0].size());
    RowStats st = row_stats(in.dtypes[0]);
    CudaRowProgram p;
    for (int64_t a : n.attr_ints("axes")) p.axes.push_back(a < 0 ? a + rank : a);
    std::sort(p.axes.begin(), p.axes.end());
    p.passes = st.passes();
    p.outputs = {{true, fmt::format("({{x}} - {}) / ({}({}) + {})", st.mean(),
                                    cuda_math(st.t, "sqrt"), st.var(), cuda_literal(st.t, 1e-9))}};
    return p;
  };
  t.add("LpNormalization").row = lp_normalization_row;
  t.add("LRN").index = lrn_index;
}

}  // namespace braze::codegen
