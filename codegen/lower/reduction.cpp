// How the reduction ops (graph/ops/reduction.cpp) become CUDA.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "codegen/lower/families.h"
#include "graph/ops/reduction.h"
#include "graph/ops/helpers.h"

namespace braze::codegen {
namespace {

using namespace graph;
using namespace graph::ops;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- row programs (codegen/cuda_hooks.h) -----------------------------------------------
// The accumulator type of a row program over dtype dt.
ComputeType row_acc_type(DType dt) {
  if (dt == DType::Float64) return ComputeType::Double;
  if (is_float(dt)) return ComputeType::Float;
  if (is_unsigned_int(dt)) return ComputeType::UInt;
  return ComputeType::Int;  // bool rows count
}

CudaRowFn reduce_row(Reduction red) {
  return [red](const Node& n, const CudaRowInputs& in) -> std::optional<CudaRowProgram> {
    if (n.has_input(1) && !in.values[1]) return std::nullopt;  // axes known only at run time
    std::vector<int64_t> axes = n.has_input(1) ? in.values[1]->to_int64s() : std::vector<int64_t>{};
    const int64_t rank = static_cast<int64_t>(in.shapes[0].size());
    std::vector<bool> mask = reduced_dims(n, axes, rank);
    CudaRowProgram p;
    int64_t len = 1;
    for (int64_t d = 0; d < rank; ++d)
      if (mask[static_cast<size_t>(d)])
        p.axes.push_back(d), len *= in.shapes[0][static_cast<size_t>(d)];
    const DType dt = in.dtypes[0];
    const ComputeType t = row_acc_type(dt);
    const bool flt = is_float(dt);
    auto m = [&](const char* fn) { return cuda_math(t, fn); };
    std::string out = "{s0}";
    switch (red) {
      case Reduction::Sum:
        p.passes = {{Combine::Sum, "{x}", t}};
        break;
      case Reduction::Mean:
        p.passes = {{Combine::Sum, "{x}", t}};
        out = flt || len > 0 ? "{s0} / {n}" : "0";
        break;
      case Reduction::Max:
        p.passes = {{Combine::Max, "{x}", t}};
        break;
      case Reduction::Min:
        p.passes = {{Combine::Min, "{x}", t}};
        break;
      case Reduction::Prod:
        p.passes = {{Combine::Prod, "{x}", t}};
        break;
      case Reduction::SumSquare:
        p.passes = {{Combine::Sum, "{x} * {x}", t}};
        break;
      case Reduction::L1:
        p.passes = {{Combine::Sum, flt ? m("fabs") + "({x})" : "({x} < 0 ? -{x} : {x})", t}};
        break;
      case Reduction::L2:
        if (!flt) return std::nullopt;
        p.passes = {{Combine::Sum, "{x} * {x}", t}};
        out = m("sqrt") + "({s0})";
        break;
      case Reduction::LogSum:
        if (!flt) return std::nullopt;
        p.passes = {{Combine::Sum, "{x}", t}};
        out = m("log") + "({s0})";
        break;
      case Reduction::LogSumExp: {
        if (!flt) return std::nullopt;
        // Shifted by the largest finite value, as the reference does.
        std::string ninf = cuda_literal(t, -kInf), zero = cuda_literal(t, 0);
        std::string shift = fmt::format("({{s0}} == {} ? {} : {{s0}})", ninf, zero);
        p.passes = {{Combine::Max, fmt::format("(isfinite({{x}}) ? {{x}} : {})", ninf), t},
                    {Combine::Sum, fmt::format("{}({{x}} - {})", m("exp"), shift), t}};
        out = fmt::format("{}({{s1}}) + {}", m("log"), shift);
        break;
      }
    }
    p.outputs = {{false, out}};
    return p;
  };
}

// GlobalAveragePool: the mean over every spatial axis (2, 3 …), a row per (n, c). As a row
// program rather than a loop per output element: a warp per row takes the plane's pixels
// together, where a thread per output walked them one by one (a latency chain of 49 loads at
// ResNet-50's 7 x 7, over four blocks at batch 1), and in a channels-last plan the row is read
// through the Transpose in front of it.
std::optional<CudaRowProgram> global_average_row(const Node&, const CudaRowInputs& in) {
  const int64_t rank = static_cast<int64_t>(in.shapes[0].size());
  if (rank < 3 || !is_float(in.dtypes[0])) return std::nullopt;
  CudaRowProgram p;
  for (int64_t d = 2; d < rank; ++d) p.axes.push_back(d);
  p.passes = {{Combine::Sum, "{x}", row_acc_type(in.dtypes[0])}};
  p.outputs = {{false, "{s0} / {n}"}};
  return p;
}

// ArgMax and ArgMin: one pass keeping the row index of the first (or last) extreme.
CudaRowFn arg_row(bool want_max) {
  return [want_max](const Node& n, const CudaRowInputs& in) -> std::optional<CudaRowProgram> {
    int64_t rank = static_cast<int64_t>(in.shapes[0].size());
    int64_t axis = n.attr_int("axis");
    CudaRowProgram p;
    p.axes = {axis < 0 ? axis + rank : axis};
    const bool last = n.attr_int("select_last_index") != 0;
    const Combine combine = want_max ? (last ? Combine::ArgMaxLast : Combine::ArgMax)
                                     : (last ? Combine::ArgMinLast : Combine::ArgMin);
    p.passes = {{combine, "{x}", ComputeType::Int}};
    p.outputs = {{false, "{s0}"}};
    return p;
  };
}

// Softmax and LogSoftmax: a max pass and a sum of exponentials (fused online where the
// schedule streams the row); Hardmax: the first maximum's index.
CudaRowFn axis_row(AxisOp kind) {
  return [kind](const Node& n, const CudaRowInputs& in) -> std::optional<CudaRowProgram> {
    int64_t rank = static_cast<int64_t>(in.shapes[0].size());
    int64_t axis = n.attr_int("axis");
    CudaRowProgram p;
    p.axes = {axis < 0 ? axis + rank : axis};
    const ComputeType t = row_acc_type(in.dtypes[0]);
    if (kind == AxisOp::Hardmax) {
      p.passes = {{Combine::ArgMax, "{x}", ComputeType::Int}};
      p.outputs = {{true, "({r} == {s0} ? 1 : 0)"}};
      return p;
    }
    // exp of an argument at most 0: the hardware exponential (braze_exp_fast); the output
    // reuses pass 1's exp ({p1}) and multiplies by the reciprocal of the row's sum.
    p.passes = {{Combine::Max, "{x}", t}, {Combine::Sum, "braze_exp_fast({x} - {s0})", t}};
    p.online_softmax = true;
    p.outputs = {{true, kind == AxisOp::Softmax
                            ? "{p1} * (" + cuda_literal(t, 1) + " / {s1})"
                            : "({x} - {s0}) - " + cuda_math(t, "log") + "({s1})"}};
    return p;
  };
}

std::string cum_sum_index(CudaIndexCtx& ctx) {
  const Shape& shape = ctx.in_shape(0);
  if (!ctx.in_value(1))
    throw CudaUnsupported{ctx.node().describe() + ": the axis is not a constant"};
  int64_t axis = ctx.in_value(1)->get_i64(0);
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  const size_t a = static_cast<size_t>(axis);
  bool exclusive = ctx.node().attr_int("exclusive") != 0,
       reverse = ctx.node().attr_int("reverse") != 0;
  ComputeType t = compute_type(ctx.in_dtype(0));
  std::vector<std::string> c;
  for (size_t d = 0; d < shape.size(); ++d) c.push_back(ctx.coord(d));
  const std::string me = c[a];
  return ctx.accumulate(
      t, cuda_literal(t, 0), shape[a], [&](const std::string& acc, const std::string& k) {
        std::vector<std::string> at = c;
        at[a] = k;
        std::string cond =
            fmt::format("{} {}{} {}", k, reverse ? ">" : "<", exclusive ? "" : "=", me);
        return fmt::format("({} ? {} + {} : {})", cond, acc, ctx.load(0, at), acc);
      });
}

}  // namespace

void lower_reduction_ops(LoweringTable& t) {
  const std::pair<const char*, Reduction> reductions[] = {
      {"ReduceSum", Reduction::Sum},
      {"ReduceMean", Reduction::Mean},
      {"ReduceMax", Reduction::Max},
      {"ReduceMin", Reduction::Min},
      {"ReduceProd", Reduction::Prod},
      {"ReduceL1", Reduction::L1},
      {"ReduceL2", Reduction::L2},
      {"ReduceLogSum", Reduction::LogSum},
      {"ReduceLogSumExp", Reduction::LogSumExp},
      {"ReduceSumSquare", Reduction::SumSquare}};
  for (const auto& [name, red] : reductions) t.add(name).row = reduce_row(red);
  t.add("GlobalAveragePool").row = global_average_row;
  t.add("ArgMax").row = arg_row(true);
  t.add("ArgMin").row = arg_row(false);
  t.add("Softmax").row = axis_row(AxisOp::Softmax);
  t.add("LogSoftmax").row = axis_row(AxisOp::LogSoftmax);
  t.add("Hardmax").row = axis_row(AxisOp::Hardmax);
  t.add("CumSum").index = cum_sum_index;
}

}  // namespace braze::codegen
