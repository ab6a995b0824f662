#include "graph/passes/sink_expands.h"

#include <algorithm>
#include <optional>

#include "graph/op_context.h"
#include "graph/passes/pass.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

// The multidirectional (numpy) broadcast of shapes, or nullopt where two dims differ and
// neither is 1.
std::optional<Shape> broadcast(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;
    }
  return out;
}

// The shape element-wise node u's output has with value e read as x (nullopt when an input's
// shape is unknown or they do not broadcast).
std::optional<Shape> shape_reading(const Graph& g, const Node& u, ValueId e, ValueId x) {
  std::vector<Shape> shapes;
  for (ValueId in : u.inputs) {
    if (in == kNoValue) continue;
    const Value& v = g.value(in == e ? x : in);
    if (!v.has_shape) return std::nullopt;
    shapes.push_back(v.shape);
  }
  return broadcast(shapes);
}

bool is_expand(const Node& n) { return n.op->name == "Expand" && n.op->domain.empty(); }

// Moves Expand node `id` below its one reader u, element-wise: u computes on x, a new Expand
// makes u's old output from it.
void move_below(Graph& g, NodeId id, NodeId u, const Shape& shape) {
  const ValueId e = g.node(id).outputs[0], x = g.node(id).inputs[0];
  const ValueId out = g.node(u).outputs[0];
  const Value& ov = g.value(out);
  const std::string name = ov.name;
  const DType dtype = ov.dtype;
  const Shape full = ov.shape;
  const ValueId small = g.add_value(g.unique_name(name + "_unexpanded"), dtype, shape);
  Node& un = g.node(u);
  for (ValueId& in : un.inputs)
    if (in == e) in = x;
  un.outputs[0] = small;
  g.value(small).producer = u;
  g.value(out).producer = kNoNode;
  const ValueId dims = shape_constant(g, name + "_shape", full);
  infer_node(
      g, g.add_node(&op("Expand"), g.unique_name(name + "_expand"), {small, dims}, {out}, {}, 13));
}

}  // namespace

int sink_expands(Graph& g) {
  int changed = 0;
  for (NodeId id : g.topo_order()) {
    if (g.node(id).dead || !is_expand(g.node(id))) continue;
    const ValueId e = g.node(id).outputs[0], x = g.node(id).inputs[0];
    if (e == kNoValue || g.is_graph_output(e) || !g.value(x).has_shape) continue;
    const std::vector<NodeId> readers = g.users()[static_cast<size_t>(e)];
    for (NodeId u : readers) {
      const Node& un = g.node(u);
      if (!is_elementwise(un) || un.outputs[0] == kNoValue || !g.value(un.outputs[0]).has_shape)
        continue;
      const std::optional<Shape> shape = shape_reading(g, un, e, x);
      if (!shape) continue;
      if (*shape == g.value(un.outputs[0]).shape) {
        for (ValueId& in : g.node(u).inputs)
          if (in == e) in = x;
        ++changed;
      } else if (readers.size() == 1 && !g.is_graph_output(un.outputs[0])) {
        move_below(g, id, u, *shape);
        ++changed;
      }
    }
  }
  return changed;
}

}  // namespace braze::graph::passes
