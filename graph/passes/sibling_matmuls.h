// Sibling products as one: MatMuls that read the same activation A [.., k] against constant
// 2-D weights W_i [k, n_i] of one type (attention's Q, K and V projections) become one
// MatMul against the weights concatenated along n (made here, at compile time), followed by
// one Slice of the last axis per sibling; each sibling's constant bias Add (b_i of shape
// [n_i]) becomes one Add of the concatenated biases before the slices. One product of
// n_1 + n_2 + … columns fills the GPU where the three small ones did not, and the consumers
// read their slices in place (as they read GPT-2's fused QKV). Merged only when every
// sibling has such a bias, or none has and each sibling's output is read by layout ops
// only (Llama's Q, K and V: Reshape into heads): an element-wise op after one sibling (an
// activation, Llama's gate · up) would otherwise leave the product's epilogue for a kernel
// of its own. No sibling's output may be a graph output. Runs after constant folding.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int merge_sibling_matmuls(Graph& g);

}  // namespace braze::graph::passes
