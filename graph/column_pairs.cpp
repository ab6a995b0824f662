#include "graph/column_pairs.h"

#include "graph/layout.h"
#include "graph/registry.h"

namespace braze::graph {

namespace {

// The constant input i of n as one int64, or nullopt.
std::optional<int64_t> constant_scalar(const Graph& g, const Node& n, size_t i) {
  if (!n.has_input(i)) return std::nullopt;
  const Value& v = g.value(n.inputs[i]);
  if (!v.constant || v.constant->numel() != 1) return std::nullopt;
  return v.constant->to_int64s()[0];
}

}  // namespace

int column_pair_parity(const Graph& g, const Node& n) {
  if (n.op->name != "Slice" || !n.op->domain.empty() || n.inputs.size() != 5) return -1;
  const Value& x = g.value(n.inputs[0]);
  if (!x.has_shape || x.shape.empty()) return -1;
  const int64_t rank = static_cast<int64_t>(x.shape.size()), cols = x.shape.back();
  const std::optional<int64_t> start = constant_scalar(g, n, 1), end = constant_scalar(g, n, 2),
                               axis = constant_scalar(g, n, 3), step = constant_scalar(g, n, 4);
  if (!start || !end || !axis || !step || *step != 2 || cols % 2 != 0 || cols == 0) return -1;
  if (*axis != rank - 1 && *axis != -1) return -1;
  if (*end < cols) return -1;  // to the end (a larger end is clamped)
  if (*start != 0 && *start != 1) return -1;
  return static_cast<int>(*start);
}

std::optional<ColumnPair> column_pair_of(const Graph& g, ValueId v,
                                         const std::vector<NodeId>& users) {
  if (users.size() != 2 || g.is_graph_output(v)) return std::nullopt;
  ColumnPair p;
  for (NodeId u : users) {
    const Node& n = g.node(u);
    if (n.inputs[0] != v) return std::nullopt;
    const int parity = column_pair_parity(g, n);
    NodeId& slot = parity == 0 ? p.even : p.odd;
    if (parity < 0 || slot != kNoNode) return std::nullopt;
    slot = u;
  }
  return p;
}

bool keeps_columns(const Graph& g, const Node& n) {
  if (!n.op->layout || n.inputs.empty() || n.outputs.size() != 1) return false;
  const Value &x = g.value(n.inputs[0]), &y = g.value(n.outputs[0]);
  if (!x.has_shape || !y.has_shape || x.shape.empty() || y.shape.empty() ||
      x.shape.back() != y.shape.back())
    return false;
  const std::optional<Layout> view = n.op->layout(g, n, Layout::contiguous(x.shape));
  return view && view->offset == 0 && view->flat() == Layout::contiguous(y.shape).flat();
}

}  // namespace braze::graph
