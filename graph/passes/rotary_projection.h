// Rotary position embedding in the projection's epilogue. Llama (and every model written like
// it: Mistral, Qwen, Phi-3 …) rotates each head of Q and K after its projection,
//   T   = Transpose(Reshape(Y, [B, S, h, D]), perm [0, 2, 1, 3])      Y = A · W (+ bias)
//   out = T · cos + Concat(−T[…, D/2:], T[…, :D/2]) · sin               cos, sin: [S, D] constants
// where Y is the whole product or (merge_sibling_matmuls) one column Slice of the merged Q, K
// and V product. The rotation pairs column t of a head with t + D/2: held by different lanes of
// a GEMM's tile. This pass permutes the columns of W (and of the bias) head by head so that
// t and t + D/2 become the neighbours 2t and 2t + 1, and writes the rotation over all the
// product's heads at once,
//   T'  = Transpose(Reshape(Y', [B, S, H, D]))
//   R   = T' · cos' + SwapPairs(T') · sin'         (cos', sin' permuted alike, sin' signed)
//   R'  = Where(rotated heads, R, T')              (when some head group — V — is not rotated)
//   U   = Reshape(Transpose(Reshape(R', [B, H, S, D/2, 2]), perm [0, 1, 2, 4, 3]), [B, H, S, D])
// and hands each former head group out as a Slice of U's heads. A GEMM's epilogue computes R
// from each lane's two adjacent accumulators (SwapPairs: codegen/gemm.cpp) and stores U with
// the columns back in order, so the rotation costs no kernel and no pass through DRAM, and the
// attention reads Q, K and V from U in place.
//
// Opset 23's RotaryEmbedding (expanded at import, graph/ops/composite.cpp) is taken the same
// way: on P = Reshape(Y, [B, S, h, D]) (3-D X with num_heads) or on T transposed back (4-D X),
//   re = P[…, :D/2] · cos − P[…, D/2:] · sin,  im = P[…, :D/2] · sin + P[…, D/2:] · cos
//   out = Concat(re, im)                       cos, sin: [b, S, 1, D/2], usually gathered at
//                                              position_ids at run time
// its tables interleaved over the pairs by layout ops (cos'[2t + p] = cos[t], sin' signed),
// which a small kernel computes once for every layer that shares them. The interleaved form
// (pairs P[…, 2t], P[…, 2t + 1]) rotates neighbours already: no columns move and U is R'. The
// op's output reaches its uses as U's heads, without the transposes back and forth. Not
// matched: a rotation of part of each head (rotary_embedding_dim < D).
//
// Every rotated group must use the same form and tables. Runs after merge_sibling_matmuls,
// before flatten_matmul_rows.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int rotary_projections(Graph& g);

}  // namespace braze::graph::passes
