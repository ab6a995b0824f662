// Narrow convolution windows padded to 16 bytes (#19). A channels-last Im2Col (conv_as_matmul's)
// of a half-precision X with fewer than 8 channels — a network's stem, 3 colour channels —
// read through a Reshape as the A of one product reads X padded to 8 channels instead (a Pad
// of its channels axis, computed in the kernel that moves X channels-last), and the product's
// weight rows gain zeros for the padding channels. The windows then come in 16-byte pieces,
// one tap's channels, which the wgmma schedule loads in place with TMA's im2col mode, eight
// taps a k-tile, where the columns were written out and read back (ResNet-50's stem at batch
// 32 on the H100, 2026-12-06: 150 us for the Im2Col kernel, 147 for the product, of 1.71 ms).
// Not run by the compile script: measured slower than the columns it replaces (H100,
// 2026-12-06, same runs: ResNet-50 b32 fp16 end to end 1.517 ms with it, 1.438 without;
// MobileNetV2 b32 0.791 against 0.715 — the stem's product with eight 16-byte im2col copies a
// k-tile took 276 us where the columns' Im2Col and product took 235). Kept, with the
// schedule's narrow-window loads and their tests, for a faster load of those windows. W is the
// product's constant B [K·C (or more), M], or B's k-major copy behind its Transpose
// (store_weights_k_major).
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int pad_narrow_windows(Graph& g);

}  // namespace braze::graph::passes
