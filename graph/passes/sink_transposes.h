// Channels-last plans (#19): conv_as_matmul puts a Transpose before each convolution's product
// ([N, C, D…] → [N, D…, C]) and one after it (back to [N, C, D…]). This pass moves the second
// kind down the graph through element-wise ops (Relu, Clip, the bias and residual Adds, Casts),
// which then run on the channels-last values, and cancels a Transpose that meets its inverse,
// so one convolution hands the next its output channels-last and layouts change only at the
// model's edges and around the ops that read channels-first (pooling, depthwise convolutions),
// whose kernels read and write through the Transposes (fusion/partition.cpp).
//
//   Conv → Relu → Conv        Transpose(X) → … MatMul … → Transpose⁻¹ → Relu → Transpose → …
//                     becomes Transpose(X) → … MatMul … → Relu → … MatMul … → Transpose⁻¹
//
// Only the move back to channels-first ([0, r−1, 1, …, r−2], rank 4 and more) moves; the move
// to channels-last only cancels, since a transformer's Kᵀ ([B,S,H,D] → [B,H,D,S]) has its
// perm and the attention match wants it where the exporter put it. An element-wise op moves
// its inputs' Transposes after it when every input is either such a Transpose or a constant
// (permuted here, at compile time). Runs after conv_as_matmul.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int sink_transposes(Graph& g);

}  // namespace braze::graph::passes
