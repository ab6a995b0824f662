// Half-precision weights stored k-major. A MatMul's B that is a 2-D float16 / bfloat16
// constant W [k, n] becomes Transpose(Wᵀ), perm (1, 0), with Wᵀ [n, k] made here at compile
// time; a Gemm's constant B with transB = 0 becomes Bᵀ with transB = 1. The tensor-core
// schedules read a k-contiguous B in place (through the Transpose) in TMA boxes of any
// multiple of 16 rows, where an n-contiguous B takes boxes 64 columns wide: k-major weights
// let a tile be as wide as fills the multiprocessors (BERT's 1024 x 2304 QKV in 128 tiles of
// 128 x 144 on 132 SMs, where 128 x 192 gives 96). Float32 weights stay as they are (the SIMT
// schedule reads rows of n). Only where k is a multiple of 8 (rows of whole 16-byte units, as
// TMA takes them) and A is not a constant (a product of constants is folded). fold_constants
// leaves such a Transpose alone (is_k_major_weight). Runs after constant folding and after the
// passes that rewrite MatMuls of constant weights (merge_sibling_matmuls, flatten_matmul_rows).
#pragma once

#include <vector>

#include "graph/ir.h"

namespace braze::graph::passes {

// Whether node `t` is the Transpose this pass leaves: of a 2-D half-precision constant, perm
// (1, 0), read only as the B of live MatMuls whose A is not a constant.
bool is_k_major_weight(const Graph& g, const std::vector<std::vector<NodeId>>& users, NodeId t);

int store_weights_k_major(Graph& g);
// The same for float32 weights, rounded to the half type `store_as` as they are transposed:
// convert_precision's pass over the weights that become k-major (one copy of each, where
// rounding and then transposing made two). With store_as = Float32, float32 weights made
// k-major as they are: at --precision tf32 (after the pipeline, whose fold_constants would
// fold such a Transpose back: is_k_major_weight takes half types only), for the wgmma
// schedule, whose tf32 instructions read k-contiguous operands only.
int store_weights_k_major_as(Graph& g, DType store_as);

}  // namespace braze::graph::passes
