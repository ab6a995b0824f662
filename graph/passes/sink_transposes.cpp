#include "graph/passes/sink_transposes.h"

#include <cstddef>
#include <optional>
#include <vector>

#include "graph/op_context.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

using Perm = std::vector<int64_t>;

// [0, r−1, 1, …, r−2], r >= 4: what conv_as_matmul puts after a channels-last product.
bool is_to_channels_first(const Perm& p) {
  const int64_t r = static_cast<int64_t>(p.size());
  if (r < 4 || p[0] != 0 || p[1] != r - 1) return false;
  for (int64_t d = 1; d + 1 < r; ++d)
    if (p[static_cast<size_t>(d + 1)] != d) return false;
  return true;
}

// [0, 2, …, r−1, 1], r >= 4: what it puts before one (also a transformer's Kᵀ, [B,S,H,D] →
// [B,H,D,S], which therefore only ever cancels, never moves).
bool is_to_channels_last(const Perm& p) {
  const int64_t r = static_cast<int64_t>(p.size());
  if (r < 4 || p[0] != 0 || p[static_cast<size_t>(r - 1)] != 1) return false;
  for (int64_t d = 1; d + 1 < r; ++d)
    if (p[static_cast<size_t>(d)] != d + 1) return false;
  return true;
}

// [0, 2, …, r−1, 1] (to channels-last) or [0, r−1, 1, …, r−2] (back), r >= 4.
bool is_channel_move(const Perm& p) { return is_to_channels_first(p) || is_to_channels_last(p); }

// The perm of the live Transpose making v, where it is a channel move.
std::optional<Perm> channel_move_of(const Graph& g, ValueId v) {
  if (v == kNoValue || g.value(v).producer == kNoNode) return std::nullopt;
  const Node& t = g.node(g.value(v).producer);
  if (t.dead || !t.op->domain.empty() || t.op->name != "Transpose" || !t.has_attr("perm"))
    return std::nullopt;
  Perm p = t.attr_ints("perm");
  if (!is_channel_move(p)) return std::nullopt;
  return p;
}

// Transpose(Transpose(a, p0), p1) with p0[p1[i]] = i for every i is a.
bool cancels(const Perm& p0, const Perm& p1) {
  for (size_t i = 0; i < p1.size(); ++i)
    if (p0[static_cast<size_t>(p1[i])] != static_cast<int64_t>(i)) return false;
  return true;
}

bool cancel(Graph& g, NodeId id) {
  const Node& t = g.node(id);
  if (!t.op->domain.empty() || t.op->name != "Transpose" || !t.has_attr("perm")) return false;
  const Perm p1 = t.attr_ints("perm");
  const std::optional<Perm> p0 = channel_move_of(g, t.inputs[0]);
  if (!is_channel_move(p1) || !p0 || !cancels(*p0, p1)) return false;
  const ValueId a = g.node(g.value(t.inputs[0]).producer).inputs[0], out = t.outputs[0];
  if (g.is_graph_output(out) && (g.is_graph_input(a) || g.is_graph_output(a))) return false;
  g.replace_all_uses(out, a);
  g.kill_node(id);
  return true;
}

// Constant c, read broadcast over values of the Transpose's output [rank], as the constant that
// reads the same over its input: c' = Transpose(c with rank's dims, p⁻¹).
Tensor permuted(const Tensor& c, const Perm& p) {
  Shape cs(p.size() - c.shape().size(), 1);
  cs.insert(cs.end(), c.shape().begin(), c.shape().end());
  Perm inverse(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    inverse[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
  return transposed(c.reshaped(cs), inverse);
}

// The perm every non-constant input of element-wise node n is transposed by, where they all
// are (with n's output shape) and n's constants have no more dimensions than it.
std::optional<Perm> common_move(const Graph& g, const Node& n) {
  const Value& y = g.value(n.outputs[0]);
  if (!y.has_shape) return std::nullopt;
  std::optional<Perm> perm;
  for (ValueId v : n.inputs) {
    if (v == kNoValue) continue;
    const Value& in = g.value(v);
    if (in.constant) {
      if (in.shape.size() > y.shape.size()) return std::nullopt;
      continue;
    }
    const std::optional<Perm> p = channel_move_of(g, v);
    if (!p || !is_to_channels_first(*p) || !in.has_shape || in.shape != y.shape ||
        (perm && *perm != *p))
      return std::nullopt;
    perm = p;
  }
  return perm;
}

// n(Transpose(a, p), c…) → Transpose(n(a, c'…), p).
bool sink_through(Graph& g, NodeId id) {
  const Node n = g.node(id);  // a copy: the node is killed below
  if (!is_elementwise(n)) return false;
  const std::optional<Perm> p = common_move(g, n);
  if (!p) return false;
  std::vector<ValueId> ins;
  for (ValueId v : n.inputs) {
    if (v == kNoValue || !g.value(v).constant) {
      ins.push_back(v == kNoValue ? v : g.node(g.value(v).producer).inputs[0]);
      continue;
    }
    const Tensor& c = *g.value(v).constant;
    ins.push_back(c.numel() == 1 ? v
                                 : g.add_constant(g.unique_name(g.value(v).name + "_channels_last"),
                                                  permuted(c, *p)));
  }
  const ValueId y = n.outputs[0];
  g.kill_node(id);
  g.value(y).producer = kNoNode;
  const ValueId moved =
      g.add_value(g.unique_name(g.value(y).name + "_channels_last"), g.value(y).dtype, {});
  infer_node(g, g.add_node(n.op, g.unique_name(n.name + "_channels_last"), std::move(ins), {moved},
                           n.attrs, n.opset));
  infer_node(g, g.add_node(&op("Transpose"), g.unique_name(n.name + "_transpose"), {moved}, {y},
                           {{"perm", *p}}, 13));
  return true;
}

}  // namespace

int sink_transposes(Graph& g) {
  int changed = 0;
  for (bool again = true; again;) {
    again = false;
    for (NodeId id : g.topo_order()) {
      if (g.node(id).dead) continue;
      if (cancel(g, id) || sink_through(g, id)) {
        ++changed;
        again = true;
      }
    }
  }
  return changed;
}

}  // namespace braze::graph::passes
