#include "graph/infer.h"

#include <braze/error.h>

#include <algorithm>

#include <fmt/format.h>

#include "graph/op_context.h"
#include "graph/registry.h"

namespace braze::graph {

void infer_graph(Graph& g) {
  for (NodeId n : g.topo_order()) infer_node(g, n);
}

std::vector<ValueId> shape_arg_inputs(const Graph& g) {
  std::vector<bool> relevant(g.num_values(), false);
  std::vector<ValueId> work;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(static_cast<NodeId>(i));
    if (n.dead) continue;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k] != kNoValue && n.op->is_shape_input(static_cast<int>(k)) &&
          !relevant[n.inputs[k]]) {
        relevant[n.inputs[k]] = true;
        work.push_back(n.inputs[k]);
      }
  }
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    NodeId p = g.value(v).producer;
    if (p == kNoNode || g.node(p).op->reads_shapes_only) continue;
    for (ValueId in : g.node(p).inputs)
      if (in != kNoValue && !relevant[in]) {
        relevant[in] = true;
        work.push_back(in);
      }
  }
  std::vector<ValueId> out;
  for (ValueId in : g.inputs())
    if (relevant[in]) out.push_back(in);
  return out;
}

void bind_input(Graph& g, ValueId v, Tensor t) {
  BRAZE_CHECK(g.is_graph_input(v), "bind_input on a value that is not a graph input");
  Value& val = g.value(v);
  if (t.dtype() != val.dtype || (val.has_shape && t.shape() != val.shape))
    throw UserError(fmt::format("input '{}' is given as {}{}, but the model expects {}", val.name,
                                dtype_name(t.dtype()), shape_str(t.shape()), value_type_str(val)));
  val.constant = std::make_shared<const Tensor>(std::move(t));
  val.shape = val.constant->shape();
  val.has_shape = true;
  g.remove_input(v);
  infer_graph(g);
}

}  // namespace braze::graph
