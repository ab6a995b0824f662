// What the matrix ops mean, shared by their reference implementations
// (graph/ops/matrix.cpp) and their lowerings (codegen/lower/matrix.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::graph {

// Each distinct index is a label. The dims an ellipsis stands for are labels too: with E the
// largest ellipsis rank over the operands, labels 0..E-1 are the ellipsis dims (operands
// with fewer align to the right, numpy-style), and letters follow.
struct EinsumSpec {
  std::vector<std::vector<int>> in_labels;  // per operand, per dim
  std::vector<int> out_labels;
  std::vector<int64_t> sizes;  // per label
};

EinsumSpec parse_einsum(const Node& node, const std::vector<Shape>& shapes);

}  // namespace braze::graph
