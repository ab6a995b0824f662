// Gathers that are views: a data-movement op (FusionKind::Injective, no index map of its own:
// Gather, GatherElements, GatherND …) whose index inputs are constants and which hands out
// its data's elements in their own row-major order, every element once, becomes a Reshape of
// the data. Decided by running the op's reference on the data's element numbers, so no op is
// named here. The dynamo exporter writes transformers' padding mask this way
// (`mask[batch_idx, None, None, kv_idx]` as a GatherND over constant (b, s) pairs), and the
// kernel reading it then loaded two 64-bit indices an element. Runs any time after import.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int gathers_as_reshapes(Graph& g);

// Logical ops with a neutral constant operand (And with all true, Or or Xor with all false):
// the other operand, expanded where the constant broadcasts it (the same mask's And with a
// constant [1, 1, S, 1] of true). Decided by running the op's reference, for both truth
// values. Runs any time after import.
int drop_neutral_operands(Graph& g);

}  // namespace braze::graph::passes
