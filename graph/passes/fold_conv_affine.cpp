#include "graph/passes/fold_conv_affine.h"

#include <cmath>
#include <optional>
#include <vector>

#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

// out[c] = in[c] · s[c] + t[c] per output channel c.
struct ChannelAffine {
  std::vector<double> s, t;
};

bool float_constant(const Graph& g, ValueId v) {
  return v != kNoValue && g.value(v).constant && is_float(g.value(v).dtype);
}

// A constant's per-channel values for C channels of an output of rank `rank` (channel dim 1):
// a scalar, or a shape whose dims are 1 but the channel's, right-aligned against the output.
std::optional<std::vector<double>> per_channel(const Graph& g, ValueId v, int64_t channels,
                                               size_t rank) {
  if (!float_constant(g, v)) return std::nullopt;
  const Tensor& t = *g.value(v).constant;
  const Shape& s = t.shape();
  if (s.size() > rank) return std::nullopt;
  const size_t lead = rank - s.size();  // dims of the output the constant does not have
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1 && !(lead + d == 1 && s[d] == channels)) return std::nullopt;
  std::vector<double> r(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) r[c] = t.get_f64(t.numel() == 1 ? 0 : c);
  return r;
}

// Inference BatchNormalization with constant parameters, as an affine map per channel.
std::optional<ChannelAffine> batch_norm_affine(const Graph& g, const Node& bn, int64_t channels) {
  if (bn.inputs.size() != 5 || bn.attr_int("training_mode") != 0) return std::nullopt;
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (bn.outputs[i] != kNoValue) return std::nullopt;
  std::vector<std::vector<double>> p;
  for (size_t i = 1; i < 5; ++i) {
    if (!float_constant(g, bn.inputs[i]) || g.value(bn.inputs[i]).shape != Shape{channels})
      return std::nullopt;
    p.push_back(per_channel(g, bn.inputs[i], channels, 2).value());
  }
  const double eps = bn.attr_float("epsilon");
  ChannelAffine a;
  for (int64_t c = 0; c < channels; ++c) {
    const double s = p[0][c] / std::sqrt(p[3][c] + eps);
    a.s.push_back(s);
    a.t.push_back(p[1][c] - p[2][c] * s);
  }
  return a;
}

// The op reading the Conv's output `y` (rank `rank`, C channels) as a per-channel affine map
// of it, the op's output keeping y's shape.
std::optional<ChannelAffine> affine_of(const Graph& g, const Node& n, ValueId y, int64_t channels) {
  if (!n.op->domain.empty() || n.outputs.empty() || n.outputs[0] == kNoValue) return std::nullopt;
  if (g.value(n.outputs[0]).shape != g.value(y).shape) return std::nullopt;
  const size_t rank = g.value(y).shape.size();
  if (n.op->name == "BatchNormalization")
    return n.inputs[0] == y ? batch_norm_affine(g, n, channels) : std::nullopt;
  const bool mul = n.op->name == "Mul", add = n.op->name == "Add";
  if ((!mul && !add) || n.inputs.size() != 2) return std::nullopt;
  const ValueId other = n.inputs[0] == y ? n.inputs[1] : n.inputs[0];
  if (other == y || g.value(other).dtype != g.value(y).dtype) return std::nullopt;
  std::optional<std::vector<double>> k = per_channel(g, other, channels, rank);
  if (!k) return std::nullopt;
  ChannelAffine a;
  a.s = mul ? *k : std::vector<double>(k->size(), 1.0);
  a.t = mul ? std::vector<double>(k->size(), 0.0) : *k;
  return a;
}

// W' = W · s per output channel (W's dim 0), b' = b · s + t.
void fold_into(Graph& g, NodeId conv_id, const ChannelAffine& a) {
  const Node conv = g.node(conv_id);  // a copy: adding values may move nodes
  const Tensor& w = *g.value(conv.inputs[1]).constant;
  const int64_t channels = w.shape()[0], per = w.numel() / std::max<int64_t>(channels, 1);
  Tensor w2(w.dtype(), w.shape());
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < per; ++i) w2.set_f64(c * per + i, w.get_f64(c * per + i) * a.s[c]);
  Tensor b2(w.dtype(), {channels});
  const bool has_b = conv.has_input(2);
  for (int64_t c = 0; c < channels; ++c) {
    const double b = has_b ? g.value(conv.inputs[2]).constant->get_f64(c) : 0.0;
    b2.set_f64(c, b * a.s[c] + a.t[c]);
  }
  const ValueId wv =
      g.add_constant(g.unique_name(g.value(conv.inputs[1]).name + "_folded"), std::move(w2));
  const ValueId bv = g.add_constant(g.unique_name(conv.name + "_bias_folded"), std::move(b2));
  Node& n = g.node(conv_id);
  n.inputs.resize(3, kNoValue);
  n.inputs[1] = wv;
  n.inputs[2] = bv;
}

// The affine op folding into Conv `id` next, if any: the sole reader of its output.
std::optional<std::pair<NodeId, ChannelAffine>> next_affine(const Graph& g, const Users& users,
                                                            NodeId id) {
  const Node& conv = g.node(id);
  if (conv.dead || !conv.op->domain.empty() || conv.op->name != "Conv") return std::nullopt;
  if (conv.inputs.size() < 2 || !float_constant(g, conv.inputs[1])) return std::nullopt;
  if (conv.has_input(2) && !float_constant(g, conv.inputs[2])) return std::nullopt;
  const ValueId y = conv.outputs[0];
  const Shape& ys = g.value(y).shape;
  if (!g.value(y).has_shape || ys.size() < 2 || g.is_graph_output(y)) return std::nullopt;
  if (users[y].size() != 1 || g.value(conv.inputs[1]).dtype != g.value(y).dtype)
    return std::nullopt;
  const int64_t channels = g.value(conv.inputs[1]).shape[0];
  if (ys[1] != channels) return std::nullopt;
  std::optional<ChannelAffine> a = affine_of(g, g.node(users[y][0]), y, channels);
  if (!a) return std::nullopt;
  return std::pair{users[y][0], *a};
}

}  // namespace

bool folds_affine_next(const Graph& g, const Users& users, NodeId conv) {
  return next_affine(g, users, conv).has_value();
}

int fold_conv_affine(Graph& g) {
  int changed = 0;
  Users users = g.users();
  for (NodeId id : g.topo_order()) {
    // A chain (BatchNormalization, then Mul, then Add …) folds one op after another.
    while (auto next = next_affine(g, users, id)) {
      fold_into(g, id, next->second);
      // The Conv writes what the folded op wrote; its own output goes unused.
      const ValueId y = g.node(id).outputs[0], out = g.node(next->first).outputs[0];
      g.kill_node(next->first);
      g.node(id).outputs[0] = out;
      g.value(out).producer = id;
      g.value(y).producer = kNoNode;
      ++changed;
      users = g.users();
    }
  }
  return changed;
}

}  // namespace braze::graph::passes
