#include "graph/passes/gated_matmuls.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <set>

#include "graph/op_context.h"
#include "graph/parallel.h"
#include "graph/passes/split_to_slices.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

bool elementwise(const Node& n) {
  return n.op->kind == FusionKind::ElemWise || n.op->kind == FusionKind::Broadcast;
}

// A MatMul of A against a constant [k, n] weight of A's type, its output no graph output.
bool constant_weight_product(const Graph& g, const Node& n) {
  if (n.op->name != "MatMul" || !n.op->domain.empty() || n.inputs.size() != 2) return false;
  const Value &a = g.value(n.inputs[0]), &w = g.value(n.inputs[1]), &y = g.value(n.outputs[0]);
  return a.has_shape && !a.shape.empty() && w.constant && w.shape.size() == 2 && y.has_shape &&
         a.dtype == w.dtype && !g.is_graph_output(n.outputs[0]);
}

// Whether the element-wise ops over a's shape reachable from a and b (every consumer of a and
// b one of them) leave exactly one value to other nodes or the graph's outputs.
bool meet_in_one_value(const Graph& g, const Users& users, ValueId a, ValueId b) {
  const Shape& space = g.value(a).shape;
  std::vector<ValueId> todo = {a, b};
  std::set<ValueId> values = {a, b};
  int exits = 0;
  for (size_t at = 0; at < todo.size(); ++at) {
    const ValueId v = todo[at];
    bool leaves = g.is_graph_output(v);
    for (NodeId u : users[v]) {
      const Node& n = g.node(u);
      const bool joins = elementwise(n) && n.outputs.size() == 1 &&
                         g.value(n.outputs[0]).has_shape && g.value(n.outputs[0]).shape == space;
      if (!joins) {
        if (v == a || v == b) return false;  // the siblings feed element-wise ops only
        leaves = true;
        continue;
      }
      if (values.insert(n.outputs[0]).second) todo.push_back(n.outputs[0]);
    }
    if (leaves && ++exits > 1) return false;
  }
  return exits == 1;
}

// Row r of the interleaved weights: column 2c of `even`'s row, 2c + 1 of `odd`'s.
template <class E>
void interleave_row(const E* even, const E* odd, E* out, int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    out[2 * c] = even[c];
    out[2 * c + 1] = odd[c];
  }
}

// The [k, n] weights' columns interleaved: [k, 2n], column 2c of `even`, 2c + 1 of `odd`;
// rows in parallel, element by element in a type of their size (Llama's 2048 x 5632 pairs
// are 23 M elements a layer).
Tensor interleave_columns(const Tensor& even, const Tensor& odd) {
  const int64_t k = even.shape()[0], n = even.shape()[1];
  const size_t es = dtype_size(even.dtype());
  Tensor out = Tensor::uninitialized(even.dtype(), Shape{k, 2 * n});  // every byte written below
  auto* dst = static_cast<char*>(out.raw());
  const auto* e = static_cast<const char*>(even.raw());
  const auto* o = static_cast<const char*>(odd.raw());
  parallel_for(static_cast<size_t>(k), [&](size_t r) {
    const size_t in = r * static_cast<size_t>(n) * es, at = 2 * in;
    switch (es) {
      case 1:
        interleave_row(reinterpret_cast<const uint8_t*>(e + in),
                       reinterpret_cast<const uint8_t*>(o + in),
                       reinterpret_cast<uint8_t*>(dst + at), n);
        break;
      case 2:
        interleave_row(reinterpret_cast<const uint16_t*>(e + in),
                       reinterpret_cast<const uint16_t*>(o + in),
                       reinterpret_cast<uint16_t*>(dst + at), n);
        break;
      case 4:
        interleave_row(reinterpret_cast<const uint32_t*>(e + in),
                       reinterpret_cast<const uint32_t*>(o + in),
                       reinterpret_cast<uint32_t*>(dst + at), n);
        break;
      default:
        for (int64_t c = 0; c < n; ++c) {
          std::memcpy(dst + at + 2 * static_cast<size_t>(c) * es,
                      e + in + static_cast<size_t>(c) * es, es);
          std::memcpy(dst + at + (2 * static_cast<size_t>(c) + 1) * es,
                      o + in + static_cast<size_t>(c) * es, es);
        }
    }
  });
  return out;
}

void merge(Graph& g, NodeId first, NodeId second) {
  const Node p = g.node(first), q = g.node(second);
  const ValueId w = g.add_constant(
      g.unique_name(p.name + "_gated_weight"),
      interleave_columns(*g.value(p.inputs[1]).constant, *g.value(q.inputs[1]).constant));
  Shape y_shape = g.value(p.outputs[0]).shape;
  const int64_t n = y_shape.back();
  y_shape.back() = 2 * n;
  const std::string base = p.name + "_gated";
  const ValueId y = g.add_value(g.unique_name(base), g.value(p.outputs[0]).dtype, y_shape);
  infer_node(g, g.add_node(&op("MatMul"), base, {p.inputs[0], w}, {y}, {}, 13));
  const int64_t axis = static_cast<int64_t>(y_shape.size()) - 1;
  replace_with_slice(g, p.outputs[0], y, 0, 2 * n, axis, base, 0, 2);
  replace_with_slice(g, q.outputs[0], y, 1, 2 * n, axis, base, 1, 2);
  g.kill_node(first);
  g.kill_node(second);
}

}  // namespace

int merge_gated_matmuls(Graph& g) {
  const Users users = g.users();
  // Candidates by activation, weight shape and type, in topological order.
  std::map<std::tuple<ValueId, Shape, DType>, std::vector<NodeId>> by_input;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (constant_weight_product(g, n))
      by_input[{n.inputs[0], g.value(n.inputs[1]).shape, g.value(n.inputs[0]).dtype}].push_back(id);
  }
  // Pairs first (each product in one), then the rewrite, which adds values `users` lacks.
  std::vector<std::pair<NodeId, NodeId>> pairs;
  for (auto& [key, mms] : by_input) {
    std::set<NodeId> taken;
    for (size_t x = 0; x < mms.size(); ++x)
      for (size_t y = x + 1; y < mms.size() && !taken.count(mms[x]); ++y)
        if (!taken.count(mms[y]) &&
            meet_in_one_value(g, users, g.node(mms[x]).outputs[0], g.node(mms[y]).outputs[0])) {
          taken.insert({mms[x], mms[y]});
          pairs.emplace_back(mms[x], mms[y]);
        }
  }
  for (const auto& [x, y] : pairs) merge(g, x, y);
  const int changed = 2 * static_cast<int>(pairs.size());
  return changed;
}

}  // namespace braze::graph::passes
