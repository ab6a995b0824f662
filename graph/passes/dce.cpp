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
  // A constant nothing reads any more (a weight a pass replaced: merged, transposed, rounded
  // to another precision) is dropped too, so that its bytes are neither converted again nor
  // written into the engine (BERT-base's engine held 213 MB of them).
  std::vector<bool> is_input(g.num_values(), false);
  for (ValueId v : g.inputs()) is_input[v] = true;
  int unread = 0;
  for (size_t i = 0; i < g.num_values(); ++i)
    if (g.value(static_cast<ValueId>(i)).constant && uses[i] == 0 && !is_input[i]) ++unread;
  if (removed || unread) g.compact();
  return removed + unread;
}

}  // namespace braze::graph::passes
