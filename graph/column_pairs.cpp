#include "graph/column_pairs.h"

#include "graph/layout.h"
#include "graph/ops/movement.h"
#include "graph/registry.h"

namespace braze::graph {

std::optional<AxisRange> last_axis_slice(const Graph& g, const Node& n) {
  if (n.op->name != "Slice" || !n.op->domain.empty() || n.inputs.size() < 3) return std::nullopt;
  const Value& x = g.value(n.inputs[0]);
  if (!x.has_shape || x.shape.empty()) return std::nullopt;
  std::optional<std::vector<int64_t>> lists[4];  // starts, ends, axes, steps
  for (size_t i = 1; i < 5; ++i) {
    if (!n.has_input(i)) continue;
    const Value& v = g.value(n.inputs[i]);
    if (!v.constant) return std::nullopt;
    lists[i - 1] = v.constant->to_int64s();
  }
  if (!lists[0] || !lists[1]) return std::nullopt;
  const std::vector<AxisRange> r =
      slice_ranges(n, x.shape, *lists[0], *lists[1], lists[2], lists[3]);
  for (size_t d = 0; d + 1 < r.size(); ++d)
    if (r[d].start != 0 || r[d].step != 1 || r[d].size != x.shape[d]) return std::nullopt;
  return r.back();
}

int column_pair_parity(const Graph& g, const Node& n) {
  const std::optional<AxisRange> r = last_axis_slice(g, n);
  if (!r) return -1;
  const int64_t cols = g.value(n.inputs[0]).shape.back();
  if (cols == 0 || cols % 2 != 0 || r->step != 2 || r->size != cols / 2) return -1;
  return r->start == 0 || r->start == 1 ? static_cast<int>(r->start) : -1;
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
