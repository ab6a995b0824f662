// A graph pass: one free function over the Graph that returns how many nodes it changed
// or removed (0 = unchanged). Each pass's header says what it does and where it may run.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

using PassFn = int (*)(Graph& g);

struct Pass {
  const char* name;
  PassFn run;
};

}  // namespace braze::graph::passes
