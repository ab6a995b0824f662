// What the normalization ops mean, shared by their reference implementations
// (graph/ops/normalization.cpp) and their lowerings (codegen/lower/normalization.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::graph {

// A per-channel parameter of X (N x C x D1 …) viewed to broadcast against X: [C, 1, …].
Shape channel_view(const Shape& x);

}  // namespace braze::graph
