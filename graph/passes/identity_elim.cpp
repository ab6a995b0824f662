#include "graph/passes/identity_elim.h"

#include "graph/registry.h"

namespace braze::graph::passes {

int eliminate_identities(Graph& g) {
  int removed = 0;
  for (NodeId id : g.topo_order()) {
    Node& n = g.node(id);
    if (!n.op->passes_through || !n.op->passes_through(g, n)) continue;
    ValueId in = n.inputs[0], out = n.outputs[0];
    if (n.outputs.size() > 1 && n.outputs[1] != kNoValue) {
      const Value& mask = g.value(n.outputs[1]);
      if (!mask.has_shape) continue;
      Tensor ones(DType::Bool, mask.shape);
      for (int64_t i = 0; i < ones.numel(); ++i) ones.set_i64(i, 1);
      ValueId c = g.add_constant(g.unique_name(mask.name + "_ones"), std::move(ones));
      g.replace_all_uses(n.outputs[1], c);
    }
    if (out != kNoValue) g.replace_all_uses(out, in);
    g.kill_node(id);
    ++removed;
  }
  return removed;
}

}  // namespace braze::graph::passes
