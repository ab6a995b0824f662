// What movement ops mean, shared by their reference implementations (graph/ops/movement.cpp) and
// their lowerings (codegen/lower/movement.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/index_map.h"
#include "graph/ir.h"
#include "graph/op_context.h"

namespace braze::graph {

// Along one axis: the first element taken, the step, and how many are taken.
struct AxisRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t size = 0;
};

enum class PadMode { Constant, Reflect, Edge, Wrap };

struct PadSpec {
  PadMode mode = PadMode::Constant;
  std::vector<int64_t> begin, end;  // per dimension; negative crops
  Shape out;
};

std::vector<int64_t> transpose_perm(const Node& n, int64_t rank);

// Sizes of Split's outputs along the axis of size `dim`.
std::vector<int64_t> split_sizes(const Node& n, int64_t dim, size_t outputs,
                                 const std::optional<std::vector<int64_t>>& split);

std::vector<AxisRange> slice_ranges(const Node& n, const Shape& in,
                                    const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& ends,
                                    const std::optional<std::vector<int64_t>>& axes_in,
                                    const std::optional<std::vector<int64_t>>& steps_in);

// Negative pads crop first; reflect, edge and wrap then extend what is left of the axis.
PadSpec pad_spec(const Node& n, const Shape& in, const std::vector<int64_t>& pads,
                 const std::optional<std::vector<int64_t>>& axes_in);

bool crd_mode(const Node& n);

// The reference implementation of the ops with an index map (graph/ops/index_reference.cpp):
// each output's elements copied from where the map says.
void index_map_reference(RefCtx& ctx);
// What node ctx's index map for output `output` is built from, on concrete inputs.
IndexMapArgs index_map_args(RefCtx& ctx, size_t output);

// SwapPairs (graph/ops/swap_pairs.cpp; registered by register_movement_ops).
struct OpDef;
OpDef swap_pairs_op();

}  // namespace braze::graph
