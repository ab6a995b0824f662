// SwapPairs (domain "braze"): each even-odd pair of the last axis exchanged,
// Y[…, 2t] = X[…, 2t + 1] and Y[…, 2t + 1] = X[…, 2t]. rotary_projections makes it
// (graph/passes/rotary_projection.h): rotate_half over a head whose weight columns are
// interleaved, so that each column's rotation partner is its neighbour. A GEMM's epilogue
// reads it from the lane's other accumulator of the pair (codegen/gemm.cpp); elsewhere it is an
// index map like the layout ops', which the reference copies through. A model cannot name it
// (OpDef::internal).
#include <fmt/format.h>

#include "graph/ops/families.h"
#include "graph/ops/helpers.h"
#include "graph/ops/movement.h"

namespace braze::graph {

OpDef swap_pairs_op() {
  OpDef d;
  d.name = "SwapPairs";
  d.domain = "braze";
  d.internal = true;
  d.kind = FusionKind::Injective;
  d.infer = [](InferCtx& ctx) {
    const Shape& x = ctx.shape(0);
    if (x.empty() || x.back() % 2 != 0)
      ctx.fail(fmt::format("the last axis of input shape {} must have an even size", shape_str(x)));
    ctx.set_dtype(0, ctx.dtype(0));
    ctx.set_shape(0, x);
  };
  d.index_map = [](const IndexMapArgs& a) {
    IndexMap m;
    std::vector<IndexId> in = m.coords(a.out_shape.size());
    // t ^ 1 = t + 1 − 2 (t mod 2), coordinates being non-negative.
    IndexId& t = in.back();
    t = m.sub(m.add(t, m.lit(1)), m.mul(m.lit(2), m.mod(t, m.lit(2))));
    m.add_region(IndexMap::kAlways, {0, in});
    return m;
  };
  d.reference = index_map_reference;
  return d;
}

}  // namespace braze::graph
