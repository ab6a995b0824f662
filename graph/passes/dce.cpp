#include "graph/passes/dce.h"

#include <algorithm>

namespace braze::graph::passes {

int eliminate_dead_code(Graph& g) {
  std::vector<NodeId> order = g.topo_order();
  std::vector<int> uses(g.num_values(), 0);
  for (NodeId id : order)
    for (ValueId v : g.node(id).inputs)
      if (v != kNoValue) ++uses[v];
  for (const auto& o : g.outputs()) ++uses[o.value];
  int removed = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node& n = g.node(*it);
    bool live = std::any_of(n.outputs.begin(), n.outputs.end(),
                            [&](ValueId v) { return v != kNoValue && uses[v] > 0; });
    if (live) continue;
    for (ValueId v : n.inputs)
      if (v != kNoValue) --uses[v];
    g.kill_node(*it);
    ++removed;
  }
  if (removed) g.compact();
  return removed;
}

}  // namespace braze::graph::passes
