#include "graph/passes/softmax_fusion.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes/pass.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

bool is(const Graph& g, NodeId id, const char* op) {
  const Node& n = g.node(id);
  return !n.dead && n.op_type() == op && n.outputs.size() == 1 && n.outputs[0] != kNoValue;
}

// The one axis (normalised) a ReduceMax / ReduceSum with keepdims reduces, if that is all.
std::optional<int64_t> single_axis(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (n.attr_int("keepdims") != 1 || !n.has_input(1)) return std::nullopt;
  const Value& axes = g.value(n.inputs[1]);
  const Value& x = g.value(n.inputs[0]);
  if (!axes.constant || axes.constant->numel() != 1 || !x.has_shape) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t a = axes.constant->to_int64s()[0];
  if (a < -rank || a >= rank) return std::nullopt;
  return a < 0 ? a + rank : a;
}

struct Match {
  ValueId x = kNoValue, out = kNoValue;
  int64_t axis = 0;
  std::vector<NodeId> nodes;
};

// At y = Div(e, s) or Mul(e, Reciprocal(s)).
std::optional<Match> match_at(const Graph& g, const Uses& u, NodeId y) {
  const Node& n = g.node(y);
  if (n.inputs.size() != 2) return std::nullopt;
  std::vector<NodeId> nodes = {y};
  ValueId e = n.inputs[0], s = n.inputs[1];
  if (n.op_type() == "Mul") {  // either side the reciprocal
    for (int side = 0; side < 2; ++side) {
      const ValueId r = n.inputs[static_cast<size_t>(1 - side)];
      const NodeId rp = g.value(r).producer;
      if (rp != kNoNode && is(g, rp, "Reciprocal") && u.sole_user(r) == y) {
        e = n.inputs[static_cast<size_t>(side)];
        s = g.node(rp).inputs[0];
        nodes.push_back(rp);
        break;
      }
    }
    if (nodes.size() == 1) return std::nullopt;
  }
  const NodeId sum = g.value(s).producer, ex = g.value(e).producer;
  if (sum == kNoNode || ex == kNoNode || !is(g, sum, "ReduceSum") || !is(g, ex, "Exp"))
    return std::nullopt;
  if (g.node(sum).inputs[0] != e || !u.sole_user(s)) return std::nullopt;
  const std::vector<NodeId>* e_readers = u.readers(e);
  if (!e_readers || e_readers->size() != 2) return std::nullopt;
  const ValueId d = g.node(ex).inputs[0];
  const NodeId sub = g.value(d).producer;
  if (sub == kNoNode || !is(g, sub, "Sub") || u.sole_user(d) != ex) return std::nullopt;
  const ValueId x = g.node(sub).inputs[0], mv = g.node(sub).inputs[1];
  const NodeId mx = g.value(mv).producer;
  if (mx == kNoNode || !is(g, mx, "ReduceMax") || g.node(mx).inputs[0] != x ||
      u.sole_user(mv) != sub)
    return std::nullopt;
  const std::optional<int64_t> a_max = single_axis(g, mx), a_sum = single_axis(g, sum);
  if (!a_max || a_max != a_sum) return std::nullopt;
  const Value &xv = g.value(x), &yv = g.value(n.outputs[0]);
  if (!is_float(xv.dtype) || xv.dtype != yv.dtype || !yv.has_shape || xv.shape != yv.shape)
    return std::nullopt;
  nodes.insert(nodes.end(), {sum, ex, sub, mx});
  return Match{x, n.outputs[0], *a_max, nodes};
}

}  // namespace

int fuse_softmax(Graph& g) {
  const OpDef& softmax = op("Softmax");
  const Uses u{g.users(), g};
  int changed = 0;
  for (NodeId id : g.topo_order()) {
    if (g.node(id).dead || !(is(g, id, "Div") || is(g, id, "Mul"))) continue;
    std::optional<Match> m = match_at(g, u, id);
    if (!m) continue;
    std::sort(m->nodes.begin(), m->nodes.end());  // graph (import) order, for the name
    std::string name;
    for (NodeId k : m->nodes) name += (name.empty() ? "" : "+") + g.node(k).name;
    for (NodeId k : m->nodes) g.kill_node(k);
    g.add_node(&softmax, name, {m->x}, {m->out}, {{"axis", m->axis}}, kMaxOpset);
    changed += static_cast<int>(m->nodes.size());
  }
  return changed;
}

}  // namespace braze::graph::passes
