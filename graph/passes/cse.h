// Common-subexpression elimination: two live nodes with the same op, attributes and inputs
// compute the same values, so the later one's uses move to the earlier. Small constants
// with identical contents are merged first, so nodes reading equal constants match too.
// Layout ops used only as matrix products' operands stay apart (each product reads its own
// view in place).
// Runs any time; leaves the duplicates dead for DCE.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

int eliminate_common_subexpressions(Graph& g);

// Whether nodes a and b have the same attributes with equal values.
bool same_attributes(const Node& a, const Node& b);

}  // namespace braze::graph::passes
