// LayerNormalization folded into the products that read it. For y = LN(x) · W (the
// normalisation over x's last axis, scale γ and bias β constants, W a constant):
//
//   y[i, n] = rstd_i · (Σ_k x[i, k] γ_k W[k, n]  −  mean_i · c_n)  +  d_n,
//   c_n = Σ_k γ_k W[k, n],   d_n = Σ_k β_k W[k, n]
//
// so the product reads x itself with the weights γ W (a new constant), and its epilogue takes
// the row's mean and 1/σ (the LayerNormalization's own Mean and InvStdDev outputs) with the
// columns' c and d (float32 constants). Element-wise readers of LN(x) (BERT's residual Add)
// get it rebuilt from x and the statistics, (x − mean) · rstd · γ + β, which their kernel's
// epilogue computes (fusion/partition.cpp's side producers), so LN(x) itself is never
// written: the LayerNormalization is left computing statistics only — a row's two floats.
// The epilogue's arithmetic is float32 whatever x's type (Casts around it in half precision:
// the product's sum − mean · c cancels where |mean| is large against σ, so the sum is not
// rounded to the half type first; the fused kernels keep the accumulator's float).
//
// Only where every reader of LN(x) is such a product (through the rows Reshape that
// flatten_matmul_rows puts in front, W constant or a k-major Transpose of one) or element-wise,
// and one at least a product. Runs once after the pipeline (and after convert_precision, so that
// the statistics, which stay float32, meet float32 arithmetic), then the pipeline again.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int fold_norms_into_products(Graph& g);

}  // namespace braze::graph::passes
