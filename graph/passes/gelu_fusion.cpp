#include "graph/passes/gelu_fusion.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

struct Uses {
  std::vector<std::vector<NodeId>> users;
  const Graph& g;
  // The one live node reading v, when v has exactly one use and is no graph output.
  std::optional<NodeId> sole_user(ValueId v) const {
    if (v == kNoValue || users[v].size() != 1 || g.is_graph_output(v)) return std::nullopt;
    return users[v][0];
  }
};

// True when v is a one-element constant within its type's rounding of `want`.
bool is_constant_near(const Graph& g, ValueId v, double want) {
  if (v == kNoValue) return false;
  const Value& val = g.value(v);
  if (!val.constant || val.constant->numel() != 1 || !is_float(val.dtype)) return false;
  const double tol = val.dtype == DType::Float16 ? 1e-3 : val.dtype == DType::BFloat16 ? 8e-3 : 1e-6;
  return std::fabs(val.constant->get_f64(0) - want) <= tol * std::fabs(want);
}

bool is_op(const Graph& g, NodeId id, const char* op) {
  const Node& n = g.node(id);
  return !n.dead && n.op_type() == op && n.inputs.size() == 2 && n.outputs.size() == 1;
}

// For a two-input node with `known` as one input, the other one (kNoValue if neither).
ValueId other_input(const Node& n, ValueId known) {
  if (n.inputs[0] == known) return n.inputs[1];
  if (n.inputs[1] == known) return n.inputs[0];
  return kNoValue;
}

// For Mul(a, b) with one side a constant near `want`, the other side.
ValueId scaled_by(const Graph& g, const Node& n, double want) {
  if (is_constant_near(g, n.inputs[1], want)) return n.inputs[0];
  if (is_constant_near(g, n.inputs[0], want)) return n.inputs[1];
  return kNoValue;
}

struct Match {
  ValueId x = kNoValue, out = kNoValue;
  std::vector<NodeId> nodes;  // in graph order: the scale, Erf, Add, the Muls
};

std::optional<Match> match_at_erf(const Graph& g, const Uses& u, NodeId erf_id) {
  const Node& erf = g.node(erf_id);
  if (erf.inputs.size() != 1 || erf.outputs.size() != 1) return std::nullopt;
  // x / sqrt 2 or x * (1 / sqrt 2), read by the Erf alone.
  const ValueId d = erf.inputs[0];
  const NodeId scale = g.value(d).producer;
  if (scale == kNoNode || !u.sole_user(d)) return std::nullopt;
  Match m;
  if (is_op(g, scale, "Div") && is_constant_near(g, g.node(scale).inputs[1], std::sqrt(2.0)))
    m.x = g.node(scale).inputs[0];
  else if (is_op(g, scale, "Mul"))
    m.x = scaled_by(g, g.node(scale), std::sqrt(0.5));
  if (m.x == kNoValue || g.value(m.x).constant) return std::nullopt;
  // a = erf + 1.
  auto add = u.sole_user(erf.outputs[0]);
  if (!add || !is_op(g, *add, "Add")) return std::nullopt;
  if (!is_constant_near(g, other_input(g.node(*add), erf.outputs[0]), 1.0)) return std::nullopt;
  const ValueId a = g.node(*add).outputs[0];
  auto mul = u.sole_user(a);
  if (!mul || !is_op(g, *mul, "Mul")) return std::nullopt;
  const Node& mn = g.node(*mul);
  const ValueId o = other_input(mn, a);
  m.nodes = {scale, erf_id, *add, *mul};
  if (o == m.x || is_constant_near(g, o, 0.5)) {
    // (x * a) * 0.5 or x * (a * 0.5): a second Mul finishes it.
    auto last = u.sole_user(mn.outputs[0]);
    if (!last || !is_op(g, *last, "Mul")) return std::nullopt;
    const ValueId rest = other_input(g.node(*last), mn.outputs[0]);
    if (o == m.x ? !is_constant_near(g, rest, 0.5) : rest != m.x) return std::nullopt;
    m.nodes.push_back(*last);
    m.out = g.node(*last).outputs[0];
  } else {
    // (x * 0.5) * a: o is the half of x, read by this Mul alone.
    const NodeId half = o == kNoValue ? kNoNode : g.value(o).producer;
    if (half == kNoNode || !u.sole_user(o) || !is_op(g, half, "Mul") || scaled_by(g, g.node(half), 0.5) != m.x)
      return std::nullopt;
    m.nodes.insert(m.nodes.begin(), half);
    m.out = mn.outputs[0];
  }
  const Value &xv = g.value(m.x), &ov = g.value(m.out);
  if (!is_float(xv.dtype) || ov.dtype != xv.dtype || !xv.has_shape || !ov.has_shape || ov.shape != xv.shape)
    return std::nullopt;
  return m;
}

}  // namespace

int fuse_gelu(Graph& g) {
  const OpDef& gelu = op("Gelu");
  const Uses u{g.users(), g};
  int changed = 0;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (n.dead || n.op_type() != "Erf") continue;
    std::optional<Match> m = match_at_erf(g, u, id);
    if (!m) continue;
    std::string name;
    for (NodeId k : m->nodes) name += (name.empty() ? "" : "+") + g.node(k).name;
    for (NodeId k : m->nodes) g.kill_node(k);
    g.add_node(&gelu, name, {m->x}, {m->out}, {}, gelu.since);
    changed += static_cast<int>(m->nodes.size());
  }
  return changed;
}

}  // namespace braze::graph::passes
