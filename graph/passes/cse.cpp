#include "graph/passes/cse.h"

#include <algorithm>
#include <map>
#include <string>

#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

constexpr size_t kMaxMergedConstantBytes = 4096;

bool attr_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, Tensor>)
          return x.bitwise_equal(y);
        else
          return x == y;
      },
      a);
}

}  // namespace

bool same_attributes(const Node& a, const Node& b) {
  if (a.attrs.size() != b.attrs.size()) return false;
  for (auto ia = a.attrs.begin(), ib = b.attrs.begin(); ia != a.attrs.end(); ++ia, ++ib)
    if (ia->first != ib->first || !attr_equal(ia->second, ib->second)) return false;
  return true;
}

namespace {

bool same_node(const Node& a, const Node& b) {
  if (a.op != b.op || a.inputs != b.inputs || a.outputs.size() != b.outputs.size()) return false;
  if (!same_attributes(a, b)) return false;
  // Optional outputs present in one and absent in the other would leave a use unmatched.
  for (size_t i = 0; i < a.outputs.size(); ++i)
    if ((a.outputs[i] == kNoValue) != (b.outputs[i] == kNoValue)) return false;
  return true;
}

std::string constant_key(const Tensor& t) {
  std::string k(dtype_name(t.dtype()));
  k += shape_str(t.shape());
  k.append(static_cast<const char*>(t.raw()), t.nbytes());
  return k;
}

int merge_constants(Graph& g) {
  std::vector<bool> used(g.num_values(), false);
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(static_cast<NodeId>(i));
    if (n.dead) continue;
    for (ValueId v : n.inputs)
      if (v != kNoValue) used[v] = true;
  }
  // Each small constant maps to the first equal one; then one sweep moves the inputs.
  std::map<std::string, ValueId> first;
  std::vector<ValueId> to(g.num_values(), kNoValue);
  bool any = false;
  for (size_t i = 0; i < g.num_values(); ++i) {
    const Value& v = g.value(static_cast<ValueId>(i));
    if (!used[i] || !v.constant || v.constant->nbytes() > kMaxMergedConstantBytes) continue;
    auto [it, fresh] = first.emplace(constant_key(*v.constant), static_cast<ValueId>(i));
    if (!fresh) to[i] = it->second, any = true;
  }
  if (!any) return 0;
  // Only node inputs move: a graph output keeps its own value.
  int merged = 0;
  for (size_t k = 0; k < g.num_nodes(); ++k) {
    Node& n = g.node(static_cast<NodeId>(k));
    if (n.dead) continue;
    for (ValueId& in : n.inputs)
      if (in != kNoValue && to[in] != kNoValue) in = to[in], ++merged;
  }
  return merged;
}

// A layout op whose every use is a matrix product's operand: each product reads it in place
// as a view, so two equal ones are not merged — merged, the view would have two consumers and
// be written out by a kernel of its own (Q, K and V projections of one activation each
// flattened to rows by flatten_matmul_rows).
bool view_of_products(const Graph& g, const std::vector<std::vector<NodeId>>& users,
                      const Node& n) {
  if (!n.op->layout || n.outputs.size() != 1 || n.outputs[0] == kNoValue) return false;
  const std::vector<NodeId>& us = users[n.outputs[0]];
  return !us.empty() && std::all_of(us.begin(), us.end(), [&](NodeId u) {
    return g.node(u).op->kind == FusionKind::OutEWiseFusable;
  });
}

}  // namespace

int eliminate_common_subexpressions(Graph& g) {
  int changed = merge_constants(g);
  const std::vector<std::vector<NodeId>> users = g.users();
  // Candidates share op and first input; bucket by those to avoid a quadratic scan.
  std::map<std::pair<const OpDef*, ValueId>, std::vector<NodeId>> buckets;
  // A merged node's outputs stand for the first node's: nodes come in topological order, so
  // each node's inputs are renamed through this before it is compared (one sweep, where
  // rewiring every use at each merge would scan the whole graph per merge).
  std::vector<ValueId> same_as(g.num_values(), kNoValue);
  for (NodeId id : g.topo_order()) {
    Node& n = g.node(id);
    for (ValueId& in : n.inputs)
      if (in != kNoValue && same_as[in] != kNoValue) in = same_as[in];
    if (n.op->may_be_random) continue;
    if (view_of_products(g, users, n)) continue;
    ValueId key_in = n.inputs.empty() ? kNoValue : n.inputs[0];
    auto& bucket = buckets[{n.op, key_in}];
    NodeId match = kNoNode;
    for (NodeId c : bucket)
      if (same_node(g.node(c), n)) {
        match = c;
        break;
      }
    if (match == kNoNode) {
      bucket.push_back(id);
      continue;
    }
    const Node& m = g.node(match);
    bool replaced = false;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i] == kNoValue) continue;
      // Graph outputs keep their value: skip nodes producing them.
      if (g.is_graph_output(n.outputs[i])) continue;
      same_as[n.outputs[i]] = m.outputs[i];
      replaced = true;
    }
    if (replaced) ++changed;
  }
  return changed;
}

}  // namespace braze::graph::passes
