// How the indexing ops (graph/ops/indexing.cpp) become CUDA.
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

// ---- GPU index maps --------------------------------------------------------------------
// Loads index input `input` at `coords` as a long long in [0, dim): negative indices count
// from the end, and one outside [-dim, dim) fails the run (reading element 0 meanwhile).
std::string cuda_checked_index(CudaIndexCtx& ctx, size_t input,
                               const std::vector<std::string>& coords, int64_t dim, int64_t axis) {
  std::string raw = ctx.let("long long", "(long long)" + ctx.load(input, coords));
  std::string idx = ctx.let("long long", fmt::format("{0} < 0 ? {0} + {1}LL : {0}", raw, dim));
  ctx.check(fmt::format("{0} >= 0 && {0} < {1}LL", idx, dim),
            fmt::format("an index is out of range for axis {} of size {}", axis, dim), "");
  return ctx.let("long long", fmt::format("({0} >= 0 && {0} < {1}LL) ? {0} : 0LL", idx, dim));
}

std::string gather_index(CudaIndexCtx& ctx) {
  const Shape& data = ctx.in_shape(0);
  const size_t q = ctx.in_shape(1).size();
  int64_t axis = ctx.node().attr_int("axis");
  if (axis < 0) axis += static_cast<int64_t>(data.size());
  const size_t a = static_cast<size_t>(axis);
  std::vector<std::string> c = out_coords(ctx);
  std::vector<std::string> ind(c.begin() + axis, c.begin() + axis + static_cast<int64_t>(q));
  std::vector<std::string> at(c.begin(), c.begin() + axis);
  at.push_back(cuda_checked_index(ctx, 1, ind, data[a], axis));
  at.insert(at.end(), c.begin() + axis + static_cast<int64_t>(q), c.end());
  return ctx.load(0, at);
}

std::string gather_elements_index(CudaIndexCtx& ctx) {
  const Shape& data = ctx.in_shape(0);
  int64_t axis = ctx.node().attr_int("axis");
  if (axis < 0) axis += static_cast<int64_t>(data.size());
  std::vector<std::string> c = out_coords(ctx), at = c;
  at[static_cast<size_t>(axis)] =
      cuda_checked_index(ctx, 1, c, data[static_cast<size_t>(axis)], axis);
  return ctx.load(0, at);
}

std::string gather_nd_index(CudaIndexCtx& ctx) {
  const Shape& data = ctx.in_shape(0);
  const Shape& ind = ctx.in_shape(1);
  const size_t q = ind.size();
  const int64_t b = ctx.node().attr_int("batch_dims"), k = ind[q - 1];
  std::vector<std::string> c = out_coords(ctx);
  // The output's first q - 1 coordinates index the tuples (with no tuple dims, c may be empty).
  const auto tuple_end = c.begin() + (static_cast<int64_t>(q) - 1);
  std::vector<std::string> at(c.begin(), c.begin() + b);  // batch dims
  for (int64_t j = 0; j < k; ++j) {
    std::vector<std::string> ic(c.begin(), tuple_end);
    ic.push_back(cuda_literal(ComputeType::Int, static_cast<double>(j)));
    at.push_back(cuda_checked_index(ctx, 1, ic, data[static_cast<size_t>(b + j)], b + j));
  }
  at.insert(at.end(), tuple_end, c.end());
  return ctx.load(0, at);
}

std::string one_hot_index(CudaIndexCtx& ctx) {
  const int64_t r = static_cast<int64_t>(ctx.in_shape(0).size());
  int64_t axis = ctx.node().attr_int("axis");
  if (axis < 0) axis += r + 1;
  const int64_t depth = ctx.out_shape()[static_cast<size_t>(axis)];
  std::vector<std::string> c = out_coords(ctx), ic = c;
  std::string cls = c[static_cast<size_t>(axis)];
  ic.erase(ic.begin() + axis);
  std::string v = ctx.let("long long", "(long long)" + ctx.load(0, ic));  // floats truncate
  if (!is_unsigned_int(ctx.in_dtype(0)))
    v = ctx.let("long long", fmt::format("{0} < 0 ? {0} + {1}LL : {0}", v, depth));
  std::string on = ctx.load(2, {"1LL"}), off = ctx.load(2, {"0LL"});
  return fmt::format("({} == {} ? {} : {})", v, cls, on, off);
}

}  // namespace

void lower_indexing_ops(LoweringTable& t) {
  t.add("Gather").index = gather_index;
  t.add("GatherElements").index = gather_elements_index;
  t.add("GatherND").index = gather_nd_index;
  t.add("OneHot").index = one_hot_index;
}

}  // namespace braze::codegen
