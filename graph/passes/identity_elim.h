// Identity elimination: Identity nodes, Casts to their input's own type, and Dropout in
// inference mode (no training_mode input, or a constant false one), forward their input to
// their consumers. A Dropout mask
// that is used becomes a constant of all true. A graph output produced this way is
// re-pointed at the forwarded value under its own name. Runs any time after import.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int eliminate_identities(Graph& g);

}  // namespace braze::graph::passes
