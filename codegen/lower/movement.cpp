// How the data-movement ops (graph/ops/movement.cpp) become CUDA: each op's index map rendered
// as loads of its inputs (codegen/index_render.cpp), and for the ops that keep their input's
// elements in order or permute them, the map's inverse, which a GEMM epilogue stores through.
// Trilu, a mask rather than a map, has its own lowering.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "codegen/index_render.h"
#include "codegen/lower/families.h"
#include "graph/ops/movement.h"

namespace braze::codegen {
namespace {

using namespace graph;

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

// The forward map of an op whose index map permutes dims or keeps elements in order: the map
// needs input 0's shape only.
std::vector<std::string> forward_through_map(const Node& n, const std::vector<std::string>& in,
                                             const Shape& in_shape, const Shape& out_shape) {
  const IndexMap m = n.op->index_map(IndexMapArgs{n, {in_shape}, {true}, {nullptr}, out_shape, 0});
  return forward_coords(m, in, in_shape, out_shape);
}

}  // namespace

void lower_movement_ops(LoweringTable& t) {
  for (const OpDef* op : all_ops())
    if (op->index_map)
      t.add(*op).index = [op](CudaIndexCtx& ctx) {
        return render_index_map(ctx, op->index_map(index_map_args(ctx)));
      };
  // Layout ops whose map inverts: a GEMM epilogue stores through them.
  for (const OpDef* op : all_ops())
    if (op->invertible_map) t.add(*op).forward = forward_through_map;
  t.add("Trilu").index = trilu_index;
}

}  // namespace braze::codegen
