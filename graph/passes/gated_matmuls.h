// Gated sibling products as one: two MatMuls of the same activation A [.., k] against constant
// 2-D weights of one shape [k, n] and type, whose outputs meet in an element-wise expression
// (Llama's MLP: SiLU(A W_gate) · (A W_up); GeGLU's GELU(A W_1) · (A W_2)), become one MatMul
// against the weights interleaved column by column, [k, 2n] (made here, at compile time),
// followed by the Slices of its even and its odd columns (graph/column_pairs.h). A GEMM
// epilogue reads the two as each lane's pair of adjacent accumulators, so the expression runs
// in one kernel: one product of 2n columns where there were two of n, and neither sibling's
// output goes through DRAM (the second product's epilogue read the first's whole output).
// Merged only where every consumer of both outputs is an element-wise op over their shape and
// the element-wise ops reachable from them leave one value to the rest of the graph (the
// epilogue's single output); no bias Add (a bias of each would be interleaved the same way: not
// done). The same for one product against a constant [k, 2n] weight whose two halves of
// columns, Slices [0, n) and [n, 2n) (torch.chunk of a fused gate and up: Phi-3, ChatGLM), meet
// so: its weight's columns are permuted into the interleaved order. Runs after constant
// folding and split_to_slices, before merge_sibling_matmuls.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int merge_gated_matmuls(Graph& g);

}  // namespace braze::graph::passes
