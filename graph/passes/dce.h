// Dead-code elimination: removes nodes none of whose outputs is used by a live node or a
// graph output, and constants no live node reads. Runs any time; the pipeline runs it last in
// each round.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int eliminate_dead_code(Graph& g);

}  // namespace braze::graph::passes
