#include "graph/passes/depthwise_weights.h"

#include <map>
#include <vector>

#include "graph/op_context.h"
#include "graph/passes/fold_conv_affine.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

bool is_plain(const Node& n, const char* name) {
  return !n.dead && n.op->name == name && n.op->domain.empty();
}

// [0, r+1, 1, …, r] for `spatial` = r: an [N, D…, C] value channels-first, or a W' [k…, 1, C]
// read as W [C, 1, k…].
std::vector<int64_t> to_channels_first(size_t spatial) {
  std::vector<int64_t> p = {static_cast<int64_t>(spatial) + 1, static_cast<int64_t>(spatial)};
  for (size_t d = 0; d < spatial; ++d) p.push_back(static_cast<int64_t>(d));
  return p;
}

// W [C, 1, k…] to W' [k…, 1, C]: the inverse of to_channels_first.
std::vector<int64_t> to_channels_last(size_t spatial) {
  std::vector<int64_t> p;
  for (size_t d = 0; d < spatial; ++d) p.push_back(static_cast<int64_t>(d) + 2);
  p.push_back(1);
  p.push_back(0);
  return p;
}

// Conv n is depthwise (C groups of one input and one output channel) over static shapes.
bool depthwise(const Graph& g, const Node& n) {
  if (!is_plain(n, "Conv") || !n.has_input(0) || !n.has_input(1)) return false;
  const Value &x = g.value(n.inputs[0]), &w = g.value(n.inputs[1]);
  if (!x.has_shape || !w.has_shape || x.shape.size() < 3 || w.shape.size() != x.shape.size())
    return false;
  const int64_t c = x.shape[1];
  return c > 1 && n.attr_int("group") == c && w.shape[0] == c && w.shape[1] == 1;
}

// X of Conv n comes channels-first from a channels-last value: a Transpose [0, r+1, 1, …, r]
// with r + 2 = X's rank.
bool reads_channels_last(const Graph& g, const Node& n) {
  const Value& x = g.value(n.inputs[0]);
  if (x.producer == kNoNode || !is_plain(g.node(x.producer), "Transpose")) return false;
  std::vector<int64_t> perm = {0, static_cast<int64_t>(x.shape.size()) - 1};
  for (size_t d = 1; d + 1 < x.shape.size(); ++d) perm.push_back(static_cast<int64_t>(d));
  return g.node(x.producer).attr_ints("perm") == perm;
}

}  // namespace

bool is_depthwise_weight(const Graph& g, const Users& users, NodeId t) {
  const Node& n = g.node(t);
  if (!is_plain(n, "Transpose") || !n.has_input(0) || n.outputs.empty() || n.outputs[0] == kNoValue)
    return false;
  const Value& w = g.value(n.inputs[0]);
  if (!w.constant || !w.has_shape || w.shape.size() < 3) return false;
  if (n.attr_ints("perm") != to_channels_first(w.shape.size() - 2)) return false;
  const ValueId y = n.outputs[0];
  if (g.is_graph_output(y)) return false;
  bool read = false;
  for (NodeId u : users[static_cast<size_t>(y)]) {
    const Node& conv = g.node(u);
    if (conv.dead) continue;
    if (!depthwise(g, conv) || conv.inputs[1] != y || conv.inputs[0] == y) return false;
    read = true;
  }
  return read;
}

int store_depthwise_weights_channels_last(Graph& g) {
  int changed = 0;
  const OpDef& transpose = op("Transpose");
  const Users users = g.users();
  std::map<ValueId, ValueId> view_of;  // one copy and one Transpose per weight
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (!depthwise(g, n) || !g.value(n.inputs[1]).constant || !reads_channels_last(g, n) ||
        folds_affine_next(g, users, id))
      continue;
    // Copies: adding values and nodes may move the graph's storage.
    const ValueId wid = n.inputs[1];
    const std::string name = n.name;
    if (!view_of.count(wid)) {
      const Value w = g.value(wid);
      const size_t spatial = w.shape.size() - 2;
      const ValueId stored = g.add_constant(g.unique_name(w.name + "_channels_last"),
                                            transposed(*w.constant, to_channels_last(spatial)));
      const ValueId view = g.add_value(g.unique_name(w.name + "_view"), w.dtype, w.shape);
      const NodeId t = g.add_node(&transpose, name + "_weight", {stored}, {view},
                                  {{"perm", to_channels_first(spatial)}}, 13);
      infer_node(g, t);
      view_of[wid] = view;
    }
    g.node(id).inputs[1] = view_of[wid];
    ++changed;
  }
  return changed;
}

}  // namespace braze::graph::passes
