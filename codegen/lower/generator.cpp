// How the generator ops (graph/ops/generator.cpp) become CUDA.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "codegen/lower/families.h"
#include "graph/ops/helpers.h"

namespace braze::codegen {
namespace {

using namespace graph;
using namespace graph::ops;

std::string constant_of_shape_index(CudaIndexCtx& ctx) {
  const Node& n = ctx.node();
  if (!n.has_attr("value")) return std::string("0.0f");
  const Tensor& v = n.attr_tensor("value");
  const ComputeType t = compute_type(v.dtype());
  return is_float(v.dtype()) ? cuda_literal(t, v.get_f64(0))
                             : cuda_literal(t, static_cast<double>(v.get_i64(0)));
}

std::string range_index(CudaIndexCtx& ctx) {
  const ComputeType t = compute_type(ctx.in_dtype(0));
  std::string start = ctx.load(0, std::vector<std::string>(ctx.in_shape(0).size(), "0LL"));
  std::string delta = ctx.load(2, std::vector<std::string>(ctx.in_shape(2).size(), "0LL"));
  if (t == ComputeType::Int)
    return fmt::format(
        "(long long)((unsigned long long){} + (unsigned long long){} * (unsigned long long){})",
        start, ctx.coord(0), delta);
  return fmt::format("{} + ({}){} * {}", start, t, ctx.coord(0), delta);
}

std::string eye_like_index(CudaIndexCtx& ctx) {
  return fmt::format("({} - {} == {}LL ? 1 : 0)", ctx.coord(1), ctx.coord(0),
                     ctx.node().attr_int("k"));
}

}  // namespace

void lower_generator_ops(LoweringTable& t) {
  t.add("ConstantOfShape").index = constant_of_shape_index;
  t.add("Range").index = range_index;
  t.add("EyeLike").index = eye_like_index;
}

}  // namespace braze::codegen
