// Convolutions as GEMMs (#19): Conv(X, W, b) with one group is, per image, W [M, C·K] times the
// columns of X's windows [C·K, P] (K the kernel's taps, P the output's pixels).
//   - A 1x1 kernel (any spatial rank) at stride 1 without padding reads X's pixels as they are:
//     Reshape(X) [N, C, H·W] → MatMul(W [M, C], ·) [N, M, H·W].
//   - Any other kernel, stride, dilation and padding gathers the windows first:
//     Im2Col(X) [N, C·K, P] → MatMul(W [M, C·K], ·) [N, M, P] (graph/ops/im2col.cpp), unless
//     the columns would pass 2^28 elements.
// Then Add(b [M, 1]) → Reshape [N, M, out spatial...]. An ungrouped convolution over 2 or more
// spatial axes is the same product channels-last instead, one for all images:
//   Transpose(X) [N, D…, C] → (Im2Col channels_last [N, P, J] →) Reshape [N·P, J] →
//   MatMul(·, W as [J, M]) → Add(b [M]) → Reshape [N, out spatial…, M] → Transpose to
//   [N, M, out spatial…], J = C·K rounded up to a multiple of 8 (C for a plain 1x1);
// sink_transposes then moves the Transposes so that convolutions hand each other channels-last
// activations. The GEMM schedules (wgmma, mma.sync,
// SIMT) take the product, the reshapes are views of their operands and the bias and what
// follows fuse into the GEMM's epilogue, where the Conv ran as a loop per output element.
// A grouped convolution whose groups are at least 32 deep (input channels times taps) and 16
// wide (output channels) is one product per group: the columns as [N, G, C·K / G, P] times
// W [G, M / G, C·K / G]. Depthwise and other thin groups stay loops. A ConvTranspose with one
// group is Im2Col of its transposed taps (transposed = 1: zero where a tap falls between the
// input's strided positions) times W [C, M, k...] transposed to [M, C·K]. W must be a constant
// and X's shape static.
// Runs after fold_conv_affine, so batch norms fold into W first.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

// Convolutions made products through Im2Col (every kind but the plain 1x1) below this many
// FLOPs (2·N·M·C·K·P / groups, 32 M) stay loops: for them two kernels instead of one cost more
// than the product saves (ViT-tiny's 1.6 MFLOP patch embedding, say, fused with what follows).
inline constexpr double kMinColumnsFlops = 32e6;

int conv_as_matmul(Graph& g);  // with kMinColumnsFlops
int conv_as_matmul(Graph& g, double min_columns_flops);

}  // namespace braze::graph::passes
