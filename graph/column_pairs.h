// Column pairs: the two Slices of a value's last axis that take its even and its odd columns
// (step 2, from 0 and from 1, to the end). merge_gated_matmuls (graph/passes/gated_matmuls.h)
// makes them: one product over interleaved weights whose even columns are one sibling's
// product and odd columns the other's. A GEMM's epilogue reads such a pair from registers,
// where every lane holds two adjacent columns of the product (fusion, codegen/gemm.cpp).
#pragma once

#include <optional>

#include "graph/ir.h"
#include "graph/ops/movement.h"

namespace braze::graph {

// The range of its input's last axis that Slice node n takes (graph/ops/movement.h's
// slice_ranges of its constant starts, ends, axes and steps), where it takes every element of
// the other axes; else nullopt.
std::optional<AxisRange> last_axis_slice(const Graph& g, const Node& n);

// 0 or 1 when node n is a Slice of its input's last axis, step 2, from that column to the end
// (the input's last dim even), else -1.
int column_pair_parity(const Graph& g, const Node& n);

struct ColumnPair {
  NodeId even = kNoNode, odd = kNoNode;
};
// v's consumers (`users`) when they are exactly an even and an odd column Slice of v, and v
// is no graph output.
std::optional<ColumnPair> column_pair_of(const Graph& g, ValueId v,
                                         const std::vector<NodeId>& users);

// Whether layout op n views its input's elements in their own order (a Reshape, Squeeze …)
// and keeps the last dim: the columns a column pair after it takes are the product's.
bool keeps_columns(const Graph& g, const Node& n);

// Whether a value viewed as `view` of a product with `cols` columns (composed through layout
// ops from Layout::contiguous of the product's shape) holds each even-odd pair of its last
// axis at an even-odd pair of one product row: what SwapPairs after the product reads from
// each lane's two adjacent accumulators (graph/ops/swap_pairs.cpp, codegen/gemm.cpp).
bool keeps_pairs(const Layout& view, int64_t cols);

// Whether n is a SwapPairs node.
bool is_swap_pairs(const Node& n);

}  // namespace braze::graph
