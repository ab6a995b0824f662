// Graph-wide shape inference and input binding.
#pragma once

#include <braze/tensor.h>

#include <vector>

#include "graph/ir.h"

namespace braze::graph {

// Re-infers every live node's outputs in topological order.
void infer_graph(Graph& g);

// Graph inputs whose values reach one of an op's shape_inputs (Reshape's shape, Slice's
// starts, Range's limit …), directly or through other ops (not through Shape or Size,
// which read only shapes): a static-shape compiler needs their values at build time.
std::vector<ValueId> shape_arg_inputs(const Graph& g);

// Turns graph input `v` into a constant holding `t` (dtype and shape must match the
// input's; UserError otherwise) and re-infers the graph.
void bind_input(Graph& g, ValueId v, Tensor t);

}  // namespace braze::graph
