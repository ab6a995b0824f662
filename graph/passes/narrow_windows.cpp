#include "graph/passes/narrow_windows.h"

#include <cstring>
#include <optional>
#include <vector>

#include "graph/op_context.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

constexpr int64_t kPadded = 8;  // channels of 16 bytes in a half type

bool is_op(const Node& n, const char* domain, const char* name) {
  return !n.dead && n.op->domain == domain && n.op->name == name;
}

// The one live reader of v, if it has exactly one and v is no graph output.
std::optional<NodeId> sole_reader(const Graph& g, const Users& users, ValueId v) {
  if (g.is_graph_output(v) || users[static_cast<size_t>(v)].size() != 1) return std::nullopt;
  return users[static_cast<size_t>(v)][0];
}

// What the rewrite of one Im2Col changes.
struct Narrow {
  NodeId im2col, reshape, product;
  NodeId k_major = kNoNode;  // B's Transpose, where B is stored k-major
  int64_t channels, taps;
};

// Im2Col `id` as a narrow window read by one product, or nullopt.
std::optional<Narrow> narrow_window(const Graph& g, const Users& users, NodeId id) {
  const Node& n = g.node(id);
  if (!is_op(n, "braze", "Im2Col") || n.attr_int("channels_last") != 1) return std::nullopt;
  const Value& x = g.value(n.inputs[0]);
  if (!x.has_shape || !is_half(x.dtype) || x.shape.empty()) return std::nullopt;
  const int64_t c = x.shape.back();
  if (c < 1 || c >= kPadded) return std::nullopt;
  const std::optional<NodeId> r = sole_reader(g, users, n.outputs[0]);
  if (!r || !is_op(g.node(*r), "", "Reshape") || g.node(*r).inputs[0] != n.outputs[0])
    return std::nullopt;
  const ValueId rows = g.node(*r).outputs[0];
  const std::optional<NodeId> mm = sole_reader(g, users, rows);
  if (!mm || !is_op(g.node(*mm), "", "MatMul") || g.node(*mm).inputs[0] != rows ||
      g.node(*mm).inputs[1] == rows || g.value(rows).shape.size() != 2)
    return std::nullopt;
  Narrow w{id, *r, *mm, kNoNode, c, checked_numel(n.attr_ints("kernel_shape"))};
  const ValueId b = g.node(*mm).inputs[1];
  const Value& bv = g.value(b);
  if (!bv.constant) {  // k-major: Transpose (1, 0) of a constant, read by this product alone
    if (bv.producer == kNoNode || !is_op(g.node(bv.producer), "", "Transpose") ||
        !g.value(g.node(bv.producer).inputs[0]).constant || !sole_reader(g, users, b))
      return std::nullopt;
    w.k_major = bv.producer;
  }
  // The weight 2-D with the rows' width along K: [J, M], or k-major [M, J].
  const int64_t j = g.value(rows).shape[1];
  const Shape& ws = w.k_major != kNoNode ? g.value(g.node(w.k_major).inputs[0]).shape : bv.shape;
  if (ws.size() != 2 || ws[w.k_major != kNoNode ? 1 : 0] != j || j < w.taps * c)
    return std::nullopt;
  return w;
}

// Rows (or, k-major, columns) of the weight: element (t·C + c) of the K axis moves to
// (t·8 + c), the padding channels' zero; K past the taps' (the old column padding) dropped.
Tensor padded_weight(const Tensor& w, const Narrow& nw, bool k_major) {
  const Shape& s = w.shape();
  const int64_t outer = k_major ? s[0] : s[1];  // M
  const int64_t k = k_major ? s[1] : s[0];
  Tensor out(w.dtype(),
             k_major ? Shape{outer, nw.taps * kPadded} : Shape{nw.taps * kPadded, outer});
  const size_t es = dtype_size(w.dtype());
  const auto* src = static_cast<const unsigned char*>(w.raw());
  auto* dst = static_cast<unsigned char*>(out.raw());
  const int64_t k2 = nw.taps * kPadded;
  for (int64_t t = 0; t < nw.taps; ++t)
    for (int64_t c = 0; c < nw.channels; ++c)
      for (int64_t m = 0; m < outer; ++m) {
        const int64_t from =
            k_major ? m * k + t * nw.channels + c : (t * nw.channels + c) * outer + m;
        const int64_t to = k_major ? m * k2 + t * kPadded + c : (t * kPadded + c) * outer + m;
        std::memcpy(dst + to * es, src + from * es, es);
      }
  return out;
}

void rewrite(Graph& g, const Narrow& nw) {
  const Node ic = g.node(nw.im2col);  // copies: adding values and nodes may move the graph
  const ValueId x = ic.inputs[0];
  const Value xv = g.value(x);
  const size_t rank = xv.shape.size();
  std::vector<int64_t> pads(2 * rank, 0);
  pads[2 * rank - 1] = kPadded - nw.channels;
  const ValueId pads_v =
      g.add_constant(g.unique_name(ic.name + "_channel_pads"),
                     Tensor::from_int64s(pads, {static_cast<int64_t>(2 * rank)}));
  const ValueId xp = g.add_value(g.unique_name(xv.name + "_padded"), xv.dtype, {});
  infer_node(g, g.add_node(&op("Pad"), g.unique_name(ic.name + "_pad"), {x, pads_v}, {xp}, {}, 18));
  Node& n = g.node(nw.im2col);
  n.inputs[0] = xp;
  n.attrs.erase("columns");
  infer_node(g, nw.im2col);
  const Shape rows = g.value(g.node(nw.reshape).outputs[0]).shape;
  const ValueId shape_v = g.add_constant(g.unique_name(ic.name + "_rows_shape"),
                                         Tensor::from_int64s({rows[0], nw.taps * kPadded}, {2}));
  g.node(nw.reshape).inputs[1] = shape_v;
  infer_node(g, nw.reshape);
  if (nw.k_major != kNoNode) {
    const ValueId bt = g.node(nw.k_major).inputs[0];
    const ValueId c = g.add_constant(g.unique_name(g.value(bt).name + "_padded"),
                                     padded_weight(*g.value(bt).constant, nw, true));
    g.node(nw.k_major).inputs[0] = c;
    infer_node(g, nw.k_major);
  } else {
    const ValueId b = g.node(nw.product).inputs[1];
    const ValueId c = g.add_constant(g.unique_name(g.value(b).name + "_padded"),
                                     padded_weight(*g.value(b).constant, nw, false));
    g.node(nw.product).inputs[1] = c;
  }
  infer_node(g, nw.product);
}

}  // namespace

int pad_narrow_windows(Graph& g) {
  const Users users = g.users();
  std::vector<Narrow> found;
  for (NodeId id : g.topo_order())
    if (std::optional<Narrow> w = narrow_window(g, users, id)) found.push_back(*w);
  for (const Narrow& w : found) rewrite(g, w);
  return static_cast<int>(found.size());
}

}  // namespace braze::graph::passes
