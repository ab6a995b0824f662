// GELU recognition. x * 0.5 * (1 + erf(x / sqrt 2)) written out in Div (or Mul by
// 1 / sqrt 2), Erf, Add and two Muls — as exporters emit nn.GELU and BERT's gelu before
// opset 20 — becomes one Gelu node (approximate = "none"); x * 0.5 * (1 + tanh(sqrt(2 / pi)
// * (x + 0.044715 x^3))), GPT-2's gelu, with the cube as Pow(x, 3) or two Muls, one Gelu with
// approximate = "tanh". The product's three orders are matched: (x * a) * 0.5, x * (a * 0.5)
// and (x * 0.5) * a, with a = 1 + erf(...) or 1 + tanh(...), and each operand on either
// side. The constants must be one-element tensors within the rounding of their type
// (float16 1e-3, bfloat16 8e-3, float32 / float64 1e-6 relative; Pow's exponent exactly 3),
// the intermediates used once and not graph outputs, the result of x's type and shape.
// Codegen computes the erf form in fewer instructions than the five ops and without erf's
// cancellation in 1 + erf for negative x (ops.cuh). Runs any time after import; leaves the
// matched nodes dead for DCE.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int fuse_gelu(Graph& g);

}  // namespace braze::graph::passes
