#include "graph/passes/matmul_scale.h"

#include <optional>

#include <fmt/format.h>

#include "graph/op_context.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

// The value of a one-element float constant.
std::optional<double> scalar_of(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (!val.constant || val.constant->numel() != 1 || !is_float(val.dtype)) return std::nullopt;
  return val.constant->get_f64(0);
}

struct Scaled {
  ValueId operand = kNoValue;  // what the product reads instead
  double scale = 1;
};

// v = Mul(x, s), Mul(s, x) or Div(x, s) with s a scalar constant of v's dtype and v used
// only by the product.
std::optional<Scaled> scaled_operand(const Graph& g, const std::vector<std::vector<NodeId>>& users,
                                     ValueId v) {
  const Value& val = g.value(v);
  if (val.producer == kNoNode || users[v].size() != 1 || g.is_graph_output(v)) return std::nullopt;
  const Node& p = g.node(val.producer);
  if (!p.op->domain.empty() || p.inputs.size() != 2 || p.outputs.size() != 1) return std::nullopt;
  const bool mul = p.op->name == "Mul", div = p.op->name == "Div";
  if (!mul && !div) return std::nullopt;
  for (size_t k = 0; k < 2; ++k) {
    if (div && k == 0) continue;  // only x / s
    const ValueId other = p.inputs[1 - k];
    std::optional<double> s = scalar_of(g, p.inputs[k]);
    if (!s || g.value(p.inputs[k]).dtype != val.dtype || g.value(other).dtype != val.dtype)
      continue;
    if (g.value(other).constant || g.value(other).shape != val.shape)
      continue;  // no broadcast by the scalar
    if (div && *s == 0) return std::nullopt;
    return Scaled{other, div ? 1 / *s : *s};
  }
  return std::nullopt;
}

}  // namespace

int hoist_matmul_scales(Graph& g) {
  int changed = 0;
  // Readers of every value, recomputed after each rewrite only (not once a node).
  auto users = g.users();
  for (NodeId id : g.topo_order()) {
    Node& n = g.node(id);
    const bool gemm = n.op->name == "Gemm";
    if (!n.op->domain.empty() || (n.op->name != "MatMul" && !gemm)) continue;
    double scale = 1;
    std::vector<NodeId> dead;
    for (size_t i = 0; i < 2; ++i) {
      std::optional<Scaled> s = scaled_operand(g, users, n.inputs[i]);
      if (!s) continue;
      dead.push_back(g.value(n.inputs[i]).producer);
      n.inputs[i] = s->operand;
      scale *= s->scale;
    }
    if (dead.empty()) continue;
    for (NodeId d : dead) g.kill_node(d);
    changed += static_cast<int>(dead.size());
    if (gemm) {
      n.attrs["alpha"] = n.attr_float("alpha") * scale;
      users = g.users();
      continue;
    }
    // MatMul writes a new value; Mul(it, scale) writes the old one, which its users read.
    const ValueId y = n.outputs[0];
    const Value yv = g.value(y);
    const ValueId prod = g.add_value(g.unique_name(yv.name + "_unscaled"), yv.dtype, yv.shape);
    g.node(id).outputs[0] = prod;
    g.value(prod).producer = id;
    g.value(y).producer = kNoNode;
    const ValueId c =
        g.add_constant(g.unique_name(yv.name + "_scale"), Tensor::scalar_of(yv.dtype, scale));
    NodeId mid = g.add_node(&op("Mul"), g.node(id).name + "_scale", {prod, c}, {y}, {}, 14);
    infer_node(g, mid);
    users = g.users();
  }
  return changed;
}

}  // namespace braze::graph::passes
