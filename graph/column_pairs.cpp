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

bool is_swap_pairs(const Node& n) { return n.op->domain == "braze" && n.op->name == "SwapPairs"; }

bool keeps_pairs(const Layout& view, int64_t cols) {
  if (cols % 2 != 0 || view.offset % 2 != 0 || view.dims.empty()) return false;
  // The last dim's innermost factor runs over whole pairs at stride 1; every other factor
  // moves by an even number of elements (or broadcasts).
  const std::vector<StridedDim>& last = view.dims.back();
  size_t inner = last.size();
  while (inner > 0 && last[inner - 1].size == 1) --inner;
  if (inner == 0 || last[inner - 1].stride != 1 || last[inner - 1].size % 2 != 0) return false;
  for (size_t d = 0; d < view.dims.size(); ++d)
    for (size_t f = 0; f < view.dims[d].size(); ++f) {
      const bool pair_factor = d + 1 == view.dims.size() && f + 1 == inner;
      if (!pair_factor && view.dims[d][f].size > 1 && view.dims[d][f].stride % 2 != 0) return false;
    }
  return true;
}

}  // namespace braze::graph
