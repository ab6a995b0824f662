#include "graph/passes/split_to_slices.h"

#include <fmt/format.h>

#include <algorithm>

#include "graph/op_context.h"
#include "graph/registry.h"

namespace braze::graph::passes {

void replace_with_slice(Graph& g, ValueId old, ValueId in, int64_t start, int64_t end, int64_t axis,
                        const std::string& base, size_t i, int64_t step) {
  auto constant = [&](const char* what, int64_t v) {
    return g.add_constant(g.unique_name(fmt::format("{}_{}{}", base, what, i)),
                          Tensor::from_int64s({v}, {1}));
  };
  const Value ov = g.value(old);
  ValueId s = constant("start", start), e = constant("end", end), a = constant("axis", axis);
  std::vector<ValueId> ins = {in, s, e, a};
  if (step != 1) ins.push_back(constant("step", step));
  ValueId y = g.add_value(g.unique_name(ov.name + "_slice"), ov.dtype, ov.shape);
  infer_node(g, g.add_node(&op("Slice"), fmt::format("{}_slice{}", base, i), ins, {y}, {}, 13));
  g.replace_all_uses(old, y);
}

int split_to_slices(Graph& g) {
  int changed = 0;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (n.op->name != "Split" || !n.op->domain.empty()) continue;
    const Value& x = g.value(n.inputs[0]);
    if (!x.has_shape) continue;
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    bool known = true;
    for (ValueId o : n.outputs)
      if (o != kNoValue && !g.value(o).has_shape) known = false;
    if (!known) continue;
    // Each output's extent along the axis is its shape's (inference worked out the sizes).
    const std::string base = n.name;
    const ValueId in = n.inputs[0];
    const std::vector<ValueId> outs = n.outputs;
    std::vector<int64_t> extents;
    for (ValueId o : outs) extents.push_back(o == kNoValue ? -1 : g.value(o).shape[axis]);
    if (std::find(extents.begin(), extents.end(), -1) != extents.end())
      continue;  // unnamed outputs
    int64_t at = 0;
    for (size_t i = 0; i < outs.size(); ++i) {
      replace_with_slice(g, outs[i], in, at, at + extents[i], axis, base, i);
      at += extents[i];
    }
    g.kill_node(id);
    ++changed;
  }
  return changed;
}

}  // namespace braze::graph::passes
