// What the reduction ops mean, shared by their reference implementations
// (graph/ops/reduction.cpp) and their lowerings (codegen/lower/reduction.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::graph {

enum class Reduction { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

enum class AxisOp { Softmax, LogSoftmax, Hardmax };

// Which dims of a rank-`rank` input a ReduceX node reduces, from its (valid, possibly
// negative) axes: empty axes mean all dims, or none with noop_with_empty_axes.
std::vector<bool> reduced_dims(const Node& node, const std::vector<int64_t>& axes, int64_t rank);

}  // namespace braze::graph
