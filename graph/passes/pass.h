// A graph pass: one free function over the Graph that returns how many nodes it changed
// or removed (0 = unchanged). Each pass's header says what it does and where it may run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::graph::passes {

// Who reads each value, for the rewrites that match chains of single-use intermediates.
struct Uses {
  std::vector<std::vector<NodeId>> users;
  const Graph& g;
  // The live nodes reading v, when v is no graph output (nullptr otherwise).
  const std::vector<NodeId>* readers(ValueId v) const {
    if (v == kNoValue || g.is_graph_output(v)) return nullptr;
    return &users[static_cast<size_t>(v)];
  }
  // The one live node reading v, when v has exactly one use and is no graph output.
  std::optional<NodeId> sole_user(ValueId v) const {
    const std::vector<NodeId>* r = readers(v);
    if (!r || r->size() != 1) return std::nullopt;
    return (*r)[0];
  }
};

// `shape` as a new 1-D int64 constant named after `name` (a Reshape's or Expand's shape input).
inline ValueId shape_constant(Graph& g, const std::string& name, const Shape& shape) {
  return g.add_constant(g.unique_name(name),
                        Tensor::from_int64s(std::vector<int64_t>(shape.begin(), shape.end()),
                                            {static_cast<int64_t>(shape.size())}));
}

using PassFn = int (*)(Graph& g);

struct Pass {
  const char* name;
  PassFn run;
};

}  // namespace braze::graph::passes
