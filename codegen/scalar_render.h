// The one renderer of element-wise ops: a scalar expression (graph/scalar.h) × compute types
// to a CUDA expression, by one table of forms per scalar op (tinygrad's C-style renderer).
// Every element-wise op of the registry reaches CUDA through here: its lowering
// (codegen/lower/elementwise.cpp) is render_scalar of its OpDef::scalar.
#pragma once

#include <string>

#include "codegen/cuda_hooks.h"
#include "graph/scalar.h"

namespace braze::codegen {

// Node c.node's scalar expression rendered over c.args (an empty arg: an absent optional
// input), as a CUDA expression of its output's compute type.
std::string render_scalar(const CudaExprCtx& c);

// Expression e rendered over c.args (c gives the operands, their dtypes and the output dtype).
std::string render_scalar(const graph::ScalarExpr& e, const CudaExprCtx& c);

}  // namespace braze::codegen
