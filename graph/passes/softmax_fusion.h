// fuse_softmax: softmax written out, as some exporters and hand-written models give it,
// becomes one Softmax over the same axis:
//
//   m = ReduceMax(x, [a], keepdims = 1)   e = Exp(Sub(x, m))   s = ReduceSum(e, [a], keepdims = 1)
//   y = Div(e, s)   or   y = Mul(e, Reciprocal(s))
//
// One axis, the intermediates used only there (e by the sum and the division) and not graph
// outputs. The same numbers (the Softmax's reference subtracts the row maximum too), and
// what the attention recognition looks for: softmax(Q Kᵀ) V written out is one attention
// kernel. Runs any time after import; leaves the matched nodes dead for DCE.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int fuse_softmax(Graph& g);

}  // namespace braze::graph::passes
