// Deterministic text form of a graph:
//   graph main (%x: float32[2,3], %y: float32[3]) -> (%out)
//     const %w: float32[3,4]
//     %t = MatMul(%x, %w)              # node 'mm0'
//     %out = Relu(%t)                  # node 'relu0'
#include <braze/tensor.h>

#include <ostream>

#include <fmt/format.h>

#include "graph/ir.h"
#include "graph/registry.h"

namespace braze::graph {

std::string value_type_str(const Value& v) {
  return fmt::format("{}{}", dtype_name(v.dtype), v.has_shape ? shape_str(v.shape) : "[?]");
}

std::string node_str(const Graph& g, const Node& n) {
  auto name_of = [&](ValueId v) {
    return v == kNoValue ? std::string("_") : "%" + g.value(v).name;
  };
  std::string outs, ins, attrs;
  for (size_t i = 0; i < n.outputs.size(); ++i) outs += (i ? ", " : "") + name_of(n.outputs[i]);
  for (size_t i = 0; i < n.inputs.size(); ++i) ins += (i ? ", " : "") + name_of(n.inputs[i]);
  for (const auto& [k, v] : n.attrs)
    attrs += (attrs.empty() ? " {" : ", ") + k + "=" + attr_value_str(v);
  if (!attrs.empty()) attrs += "}";
  return fmt::format("{} = {}({}){}", outs, n.op_type(), ins, attrs);
}

std::ostream& operator<<(std::ostream& os, const Graph& g) {
  std::string ins, outs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    ins += fmt::format("{}%{}: {}", i ? ", " : "", v.name, value_type_str(v));
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const auto& o = g.outputs()[i];
    const Value& v = g.value(o.value);
    outs += fmt::format("{}{}", i ? ", " : "",
                        o.name == v.name ? "%" + v.name : fmt::format("{}=%{}", o.name, v.name));
  }
  os << fmt::format("graph {} ({}) -> ({})\n", g.name, ins, outs);
  std::vector<bool> used(g.num_values(), false);
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    if (g.node(static_cast<NodeId>(i)).dead) continue;
    for (ValueId v : g.node(static_cast<NodeId>(i)).inputs)
      if (v != kNoValue) used[v] = true;
  }
  for (const auto& o : g.outputs()) used[o.value] = true;
  for (size_t i = 0; i < g.num_values(); ++i) {
    const Value& v = g.value(static_cast<ValueId>(i));
    if (v.constant && used[i]) os << fmt::format("  const %{}: {}\n", v.name, value_type_str(v));
  }
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    std::string types;
    for (ValueId o : n.outputs)
      if (o != kNoValue) types += (types.empty() ? "" : ", ") + value_type_str(g.value(o));
    os << fmt::format("  {}  # '{}' -> {}\n", node_str(g, n), n.name, types);
  }
  return os;
}

}  // namespace braze::graph
