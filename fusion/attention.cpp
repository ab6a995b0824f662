#include "fusion/attention.h"

#include <algorithm>

#include <fmt/format.h>

#include "graph/registry.h"

namespace braze::fusion {

using graph::kNoNode;
using graph::Node;
using graph::NodeId;
using graph::ValueId;

namespace {

constexpr size_t kMaxChain = 8;

bool broadcasts_to(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t d = in[in.size() - 1 - i];
    if (d != 1 && d != out[out.size() - 1 - i]) return false;
  }
  return true;
}

bool is_matmul(const Node& n) { return n.op_type() == "MatMul" && n.inputs.size() == 2; }

// v's single consumer, or kNoNode (several, none, or a graph output).
NodeId only_user(const graph::Graph& g, ValueId v, const std::vector<std::vector<NodeId>>& users) {
  if (g.is_graph_output(v) || users[v].size() != 1) return kNoNode;
  return users[v][0];
}

// The element-wise chain from a MatMul's output to `v` (nearest the product first) over the
// scores' shape `s`; false when there is none.
bool chain_to_product(const graph::Graph& g, ValueId v, const Shape& s,
                      const std::vector<std::vector<NodeId>>& users, const Lowerings& lower,
                      std::vector<NodeId>& chain, NodeId& qk) {
  const NodeId p = g.value(v).producer;
  if (p == kNoNode) return false;
  const Node& n = g.node(p);
  if (is_matmul(n)) {
    if (g.value(n.outputs[0]).shape != s) return false;
    qk = p;
    return true;
  }
  if (chain.size() >= kMaxChain || !lower.pointwise(n) || n.outputs.size() != 1) return false;
  for (ValueId u : n.inputs) {
    if (u == graph::kNoValue || g.value(u).shape != s || only_user(g, u, users) != p) continue;
    chain.insert(chain.begin(), p);
    bool others_broadcast = true;
    for (ValueId w : n.inputs)
      if (w != u && w != graph::kNoValue)
        others_broadcast = others_broadcast && broadcasts_to(g.value(w).shape, s);
    if (others_broadcast && chain_to_product(g, u, s, users, lower, chain, qk)) return true;
    chain.erase(chain.begin());
  }
  return false;
}

bool is_zero_constant(const graph::Graph& g, ValueId v) {
  const graph::Value& val = g.value(v);
  if (!val.constant) return false;
  for (int64_t i = 0; i < val.constant->numel(); ++i)
    if (val.constant->get_f64(i) != 0) return false;
  return true;
}

}  // namespace

std::vector<NodeId> AttentionMatch::nodes() const {
  std::vector<NodeId> r{qk};
  r.insert(r.end(), chain.begin(), chain.end());
  r.push_back(softmax);
  if (isnan != kNoNode) r.insert(r.end(), {isnan, where});
  r.insert(r.end(), casts.begin(), casts.end());
  r.push_back(pv);
  return r;
}

std::optional<AttentionMatch> match_attention(const graph::Graph& g, NodeId softmax,
                                              const std::vector<std::vector<NodeId>>& users,
                                              const Lowerings& lower, std::string* why_not) {
  const Node& sm = g.node(softmax);
  auto fail = [&](std::string why) -> std::optional<AttentionMatch> {
    *why_not = std::move(why);
    return std::nullopt;
  };
  if (sm.op_type() != "Softmax") return fail("not a Softmax");
  const graph::Value& x = g.value(sm.inputs[0]);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = sm.attr_int("axis");
  if (axis < 0) axis += rank;
  if (rank < 2 || axis != rank - 1)
    return fail("the Softmax is not over the last axis of a matrix");
  AttentionMatch m;
  m.softmax = softmax;
  if (!chain_to_product(g, sm.inputs[0], x.shape, users, lower, m.chain, m.qk))
    return fail(
        "the Softmax's input is not a MatMul's output through element-wise ops that read the rest "
        "by broadcast");
  const Node& qk = g.node(m.qk);
  if (only_user(g, qk.outputs[0], users) == kNoNode) return fail("the scores have other consumers");
  if (g.value(qk.inputs[0]).shape.size() < 2 || g.value(qk.inputs[1]).shape.size() < 2)
    return fail("Q Kᵀ is a matrix-vector product");
  ValueId p = sm.outputs[0];
  if (g.is_graph_output(p)) return fail("the probabilities are a graph output");
  if (users[p].size() == 2) {
    // sdpa's export: Where(IsNaN(P), 0, P).
    const Node* isnan = nullptr;
    const Node* where = nullptr;
    for (NodeId u : users[p]) {
      if (g.node(u).op_type() == "IsNaN") {
        m.isnan = u;
        isnan = &g.node(u);
      }
      if (g.node(u).op_type() == "Where") {
        m.where = u;
        where = &g.node(u);
      }
    }
    if (!isnan || !where || only_user(g, isnan->outputs[0], users) != m.where ||
        where->inputs[0] != isnan->outputs[0] || where->inputs[2] != p ||
        !is_zero_constant(g, where->inputs[1]) || g.value(where->outputs[0]).shape != x.shape)
      return fail(
          "the probabilities have consumers other than Where(IsNaN(P), 0, P) and the product with "
          "V");
    p = where->outputs[0];
  }
  for (NodeId c = only_user(g, p, users); c != kNoNode && m.casts.size() < kMaxChain;
       c = only_user(g, p, users)) {
    const Node& cn = g.node(c);
    const DType to = g.value(cn.outputs[0]).dtype;
    if (cn.op_type() != "Cast" || !(to == DType::Float16 || to == DType::BFloat16 ||
                                    to == DType::Float32 || to == DType::Float64))
      break;
    m.casts.push_back(c);
    p = cn.outputs[0];
  }
  const NodeId pv = only_user(g, p, users);
  if (pv == kNoNode || !is_matmul(g.node(pv)) || g.node(pv).inputs[0] != p)
    return fail("the probabilities are not the left operand of one MatMul");
  if (g.value(g.node(pv).inputs[1]).shape.size() < 2) return fail("P V is a matrix-vector product");
  m.pv = pv;
  return m;
}

bool near_attention(const graph::Graph& g, NodeId softmax,
                    const std::vector<std::vector<NodeId>>& users) {
  NodeId p = softmax;
  for (size_t depth = 0; depth <= kMaxChain; ++depth) {
    const Node& n = g.node(p);
    if (n.inputs.empty() || n.inputs[0] == graph::kNoValue) break;
    p = g.value(n.inputs[0]).producer;
    if (p == kNoNode) break;
    if (is_matmul(g.node(p))) return true;
  }
  std::vector<ValueId> outs = {g.node(softmax).outputs[0]};
  for (size_t depth = 0; depth < 3 && !outs.empty(); ++depth) {
    std::vector<ValueId> next;
    for (ValueId v : outs)
      for (NodeId u : users[v]) {
        if (is_matmul(g.node(u))) return true;
        for (ValueId o : g.node(u).outputs)
          if (o != graph::kNoValue) next.push_back(o);
      }
    outs = std::move(next);
  }
  return false;
}

std::optional<AttentionMatch> match_attention_in(const graph::Graph& g,
                                                 const std::vector<NodeId>& nodes,
                                                 const std::vector<std::vector<NodeId>>& users,
                                                 const Lowerings& lower, std::string* why_not) {
  std::optional<AttentionMatch> m;
  for (NodeId id : nodes)
    if (g.node(id).op_type() == "Softmax") {
      if (m) {
        *why_not = "two Softmax nodes in one attention group";
        return std::nullopt;
      }
      m = match_attention(g, id, users, lower, why_not);
      if (!m) return std::nullopt;
    }
  if (!m) {
    *why_not = "no Softmax in the attention group";
    return std::nullopt;
  }
  for (NodeId id : m->nodes())
    if (std::find(nodes.begin(), nodes.end(), id) == nodes.end()) {
      *why_not = fmt::format("{} of the attention is not in the group", g.node(id).describe());
      return std::nullopt;
    }
  return m;
}

}  // namespace braze::fusion
