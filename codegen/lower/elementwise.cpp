// Element-wise ops (graph/ops/elementwise.cpp) become CUDA through the one renderer of scalar
// expressions (codegen/scalar_render.cpp): every registry op with a scalar expression is
// lowered to its rendering.
#include "codegen/lower/families.h"
#include "codegen/scalar_render.h"

namespace braze::codegen {

void lower_elementwise_ops(LoweringTable& t) {
  for (const graph::OpDef* op : graph::all_ops())
    if (op->scalar) t.add(*op).expr = [](const CudaExprCtx& c) { return render_scalar(c); };
}

}  // namespace braze::codegen
