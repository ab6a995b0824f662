// Split as Slices: each used output of a Split whose sizes are known becomes its own Slice
// of the input. A Split is one node with several outputs, so a kernel that took it would
// write all of them; a Slice is a layout op any consumer can read as a view of the input
// (GPT-2's fused QKV projection split into Q, K and V, each read by its attention product in
// place). Runs after constant folding (the sizes are constants by then).
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int split_to_slices(Graph& g);

// Rewires every use of `old` to a new Slice of `in`, [start, end) along `axis` by `step` (node
// `<base>_slice<i>`, constants `<base>_start<i>` …): how split_to_slices,
// merge_sibling_matmuls and merge_gated_matmuls hand out the parts of one value.
void replace_with_slice(Graph& g, ValueId old, ValueId in, int64_t start, int64_t end, int64_t axis,
                        const std::string& base, size_t i, int64_t step = 1);

}  // namespace braze::graph::passes
