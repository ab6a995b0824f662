#include "graph/passes/gelu_fusion.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

// True when v is a one-element constant within its type's rounding of `want`.
bool is_constant_near(const Graph& g, ValueId v, double want) {
  if (v == kNoValue) return false;
  const Value& val = g.value(v);
  if (!val.constant || val.constant->numel() != 1 || !is_float(val.dtype)) return false;
  const double tol = val.dtype == DType::Float16    ? 1e-3
                     : val.dtype == DType::BFloat16 ? 8e-3
                                                    : 1e-6;
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
  std::vector<NodeId> nodes;  // every node replaced
  bool tanh_form = false;
};

// The product around the core (erf or tanh, its output `core`, m.x and m.nodes filled in):
// a = core + 1, then (x * a) * 0.5, x * (a * 0.5) or (x * 0.5) * a.
std::optional<Match> match_product(const Graph& g, const Uses& u, Match m, ValueId core) {
  auto add = u.sole_user(core);
  if (!add || !is_op(g, *add, "Add")) return std::nullopt;
  if (!is_constant_near(g, other_input(g.node(*add), core), 1.0)) return std::nullopt;
  const ValueId a = g.node(*add).outputs[0];
  auto mul = u.sole_user(a);
  if (!mul || !is_op(g, *mul, "Mul")) return std::nullopt;
  const Node& mn = g.node(*mul);
  const ValueId o = other_input(mn, a);
  m.nodes.push_back(*add);
  m.nodes.push_back(*mul);
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
    if (half == kNoNode || !u.sole_user(o) || !is_op(g, half, "Mul") ||
        scaled_by(g, g.node(half), 0.5) != m.x)
      return std::nullopt;
    m.nodes.push_back(half);
    m.out = mn.outputs[0];
  }
  const Value &xv = g.value(m.x), &ov = g.value(m.out);
  if (!is_float(xv.dtype) || ov.dtype != xv.dtype || !xv.has_shape || !ov.has_shape ||
      ov.shape != xv.shape)
    return std::nullopt;
  return m;
}

// The node producing v when v is read by one node alone (and is no graph output).
std::optional<NodeId> sole_producer(const Graph& g, const Uses& u, ValueId v) {
  const NodeId p = g.value(v).producer;
  if (p == kNoNode || !u.sole_user(v)) return std::nullopt;
  return p;
}

// erf(x / sqrt 2) or erf(x * (1 / sqrt 2)).
std::optional<Match> match_at_erf(const Graph& g, const Uses& u, NodeId erf_id) {
  const Node& erf = g.node(erf_id);
  if (erf.inputs.size() != 1 || erf.outputs.size() != 1) return std::nullopt;
  auto scale = sole_producer(g, u, erf.inputs[0]);
  if (!scale) return std::nullopt;
  Match m;
  if (is_op(g, *scale, "Div") && is_constant_near(g, g.node(*scale).inputs[1], std::sqrt(2.0)))
    m.x = g.node(*scale).inputs[0];
  else if (is_op(g, *scale, "Mul"))
    m.x = scaled_by(g, g.node(*scale), std::sqrt(0.5));
  if (m.x == kNoValue || g.value(m.x).constant) return std::nullopt;
  m.nodes = {*scale, erf_id};
  return match_product(g, u, m, erf.outputs[0]);
}

// tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)), the cube as Pow(x, 3), (x * x) * x or x * (x * x).
std::optional<Match> match_at_tanh(const Graph& g, const Uses& u, NodeId tanh_id) {
  const Node& th = g.node(tanh_id);
  if (th.inputs.size() != 1 || th.outputs.size() != 1) return std::nullopt;
  auto outer = sole_producer(g, u, th.inputs[0]);
  if (!outer || !is_op(g, *outer, "Mul")) return std::nullopt;
  const ValueId sum = scaled_by(g, g.node(*outer), std::sqrt(2.0 / std::numbers::pi));
  auto add = sum == kNoValue ? std::nullopt : sole_producer(g, u, sum);
  if (!add || !is_op(g, *add, "Add")) return std::nullopt;
  Match m;
  m.tanh_form = true;
  for (int side = 0; side < 2 && m.nodes.empty(); ++side) {
    const ValueId x = g.node(*add).inputs[side], q = g.node(*add).inputs[1 - side];
    auto scale = sole_producer(g, u, q);
    if (g.value(x).constant || !scale || !is_op(g, *scale, "Mul")) continue;
    const ValueId cube = scaled_by(g, g.node(*scale), 0.044715);
    auto pow = cube == kNoValue ? std::nullopt : sole_producer(g, u, cube);
    if (!pow) continue;
    const Node& pn = g.node(*pow);
    std::vector<NodeId> cube_nodes = {*pow};
    bool is_cube = false;
    if (is_op(g, *pow, "Pow")) {
      // The exponent exactly 3, of a float or an integer type.
      const Value& e = g.value(pn.inputs[1]);
      is_cube = pn.inputs[0] == x && e.constant && e.constant->numel() == 1 &&
                e.constant->get_f64(0) == 3.0;
    } else if (is_op(g, *pow, "Mul")) {
      // (x * x) * x or x * (x * x)
      const ValueId sq = other_input(pn, x);
      auto sq_node = sq == kNoValue ? std::nullopt : sole_producer(g, u, sq);
      is_cube = sq_node && is_op(g, *sq_node, "Mul") && g.node(*sq_node).inputs[0] == x &&
                g.node(*sq_node).inputs[1] == x;
      if (is_cube) cube_nodes.insert(cube_nodes.begin(), *sq_node);
    }
    if (!is_cube) continue;
    m.x = x;
    m.nodes = cube_nodes;
    m.nodes.insert(m.nodes.end(), {*scale, *add, *outer, tanh_id});
  }
  if (m.nodes.empty()) return std::nullopt;
  return match_product(g, u, m, th.outputs[0]);
}

}  // namespace

int fuse_gelu(Graph& g) {
  const OpDef& gelu = op("Gelu");
  const Uses u{g.users(), g};
  int changed = 0;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (n.dead || (n.op_type() != "Erf" && n.op_type() != "Tanh")) continue;
    std::optional<Match> m =
        n.op_type() == "Erf" ? match_at_erf(g, u, id) : match_at_tanh(g, u, id);
    if (!m) continue;
    std::sort(m->nodes.begin(), m->nodes.end());  // graph (import) order, for the name
    std::string name;
    for (NodeId k : m->nodes) name += (name.empty() ? "" : "+") + g.node(k).name;
    for (NodeId k : m->nodes) g.kill_node(k);
    Attributes attrs;
    if (m->tanh_form) attrs["approximate"] = std::string("tanh");
    g.add_node(&gelu, name, {m->x}, {m->out}, std::move(attrs), gelu.since);
    changed += static_cast<int>(m->nodes.size());
  }
  return changed;
}

}  // namespace braze::graph::passes
