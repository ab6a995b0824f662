// Scalar factors of a product's operands move to the product: MatMul(Mul(a, s), Mul(b, t)),
// s and t one-element constants (or Div by one), becomes Mul(MatMul(a, b), s·t); a Gemm
// takes them into alpha. The exporters scale attention's Q and K this way (sdpa's
// 1/sqrt(sqrt(d)) on each); moved, the scale runs in the product's epilogue and the
// operands stay layouts a tensor-core kernel reads in place. Each Mul must have no other
// use. Runs after constant folding.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int hoist_matmul_scales(Graph& g);

}  // namespace braze::graph::passes
