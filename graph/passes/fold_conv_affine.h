// Per-channel affine ops after a Conv fold into its weights and bias (#19): inference
// BatchNormalization — y = (x - mean) · scale / sqrt(var + epsilon) + B — and Mul or Add by a
// constant that is one value per output channel (shape [C, 1, ...], [1, C, 1, ...] or a
// scalar). Conv(X, W, b) followed by such an op becomes Conv(X, W', b'), W' = W · s per
// output channel and b' = b · s + t, computed in double and stored once in W's dtype; the
// normalisation stops being a kernel of its own. The Conv's output must have no other reader
// and be no graph output; W, b and the op's parameters must be constants. Runs after constant
// folding (training-mode BatchNormalization, with its extra outputs, stays).
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int fold_conv_affine(Graph& g);
// Whether fold_conv_affine would fold an op into Conv `conv` (the sole reader of its output),
// for passes that would take the Conv's constant W away from it.
bool folds_affine_next(const Graph& g, const Users& users, NodeId conv);

}  // namespace braze::graph::passes
