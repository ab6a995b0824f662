// 1x1 convolutions as plain GEMMs (#19): Conv(X, W, b) with a 1x1 kernel (any spatial rank),
// stride 1, no padding and one group is, per image, W [M, C] times X's pixels [C, H·W].
// It becomes Reshape(X) [N, C, H·W] → MatMul(W [M, C], ·) [N, M, H·W] → Add(b [M, 1]) →
// Reshape [N, M, H, W]: the GEMM schedules (wgmma, mma.sync, SIMT) take it, the reshapes are
// views of their operands and the bias and what follows fuse into the GEMM's epilogue, where
// the Conv ran as a loop per output element. W must be a constant and X's shape static. Runs
// after fold_conv_affine, so batch norms fold into W first.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int conv_as_matmul(Graph& g);

}  // namespace braze::graph::passes
