// Expands moved down through element-wise ops, and dropped where the consumer's broadcast does
// the same: an element-wise op reading Expand(x) reads x instead when its output keeps its
// shape (Add(scores [B,H,S,S], Expand(mask [B,1,1,S]))); otherwise, when it is the Expand's one
// reader, it runs on x and the Expand follows it (Where(Expand(m), 0, -inf) computes [B,1,1,S]
// values and expands them), so that a mask kernel writes a row a batch rather than a matrix and
// the attention reads it by broadcast. Runs any time after import.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int sink_expands(Graph& g);

}  // namespace braze::graph::passes
