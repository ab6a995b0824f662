// Constant folding: evaluates every node whose inputs are all constants through the
// registry's reference implementation and turns its outputs into constants. Ops marked
// reads_shapes_only (Shape, Size) fold as soon as their inputs' shapes are known, so with
// static shapes the Shape -> Gather -> Unsqueeze -> Concat -> Reshape subgraphs of
// exported models fold away. Outputs over kMaxFoldBytes stay computed at run time, so
// folding never bloats the model. Runs any time after import; leaves dead nodes to DCE.
#pragma once

#include <cstdint>

#include "graph/ir.h"

namespace braze::graph::passes {

inline constexpr uint64_t kMaxFoldBytes = uint64_t{64} << 20;

int fold_constants(Graph& g);

}  // namespace braze::graph::passes
