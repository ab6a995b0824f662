// Batched rows as one product: MatMul(A [b…, m, k], B [k, n]) — a 2-D B shared by every batch,
// as every linear layer of a transformer is — becomes Reshape(A, [b… · m, k]), one MatMul of
// b… · m rows, and Reshape back to [b…, m, n]. The batches as separate products of m rows
// each leave most of the GPU idle for small m (BERT at sequence 128: 8 products of 128 rows
// instead of one of 1024); the Reshapes are layouts the GEMM reads and writes in place. Only
// where A is not itself a layout op's output (whose view may not merge its batch and rows).
// Runs after constant folding.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int flatten_matmul_rows(Graph& g);

}  // namespace braze::graph::passes
