#include "graph/passes/gated_matmuls.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "graph/column_pairs.h"
#include "graph/op_context.h"
#include "graph/parallel.h"
#include "graph/passes/split_to_slices.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

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
      const bool joins = is_elementwise(n) && n.outputs.size() == 1 &&
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

// Columns of one weight row: n of them from column `col0` of a row `row` elements long.
struct Columns {
  const Tensor* w;
  int64_t col0 = 0;
};

// [k, 2n]: column 2c is `even`'s column c, 2c + 1 `odd`'s; rows in parallel, element by
// element in a type of their size (Llama's 2048 x 5632 pairs are 23 M elements a layer).
Tensor interleave_columns(Columns even, Columns odd, int64_t n) {
  const int64_t k = even.w->shape()[0];
  const size_t es = dtype_size(even.w->dtype());
  Tensor out = Tensor::uninitialized(even.w->dtype(), Shape{k, 2 * n});  // every byte written below
  auto* dst = static_cast<char*>(out.raw());
  auto row_of = [&](Columns c, size_t r) {
    const size_t row = static_cast<size_t>(c.w->shape()[1]);
    return static_cast<const char*>(c.w->raw()) + (r * row + static_cast<size_t>(c.col0)) * es;
  };
  parallel_for(static_cast<size_t>(k), [&](size_t r) {
    const char *e = row_of(even, r), *o = row_of(odd, r);
    char* at = dst + r * 2 * static_cast<size_t>(n) * es;
    switch (es) {
      case 1:
        interleave_row(reinterpret_cast<const uint8_t*>(e), reinterpret_cast<const uint8_t*>(o),
                       reinterpret_cast<uint8_t*>(at), n);
        break;
      case 2:
        interleave_row(reinterpret_cast<const uint16_t*>(e), reinterpret_cast<const uint16_t*>(o),
                       reinterpret_cast<uint16_t*>(at), n);
        break;
      case 4:
        interleave_row(reinterpret_cast<const uint32_t*>(e), reinterpret_cast<const uint32_t*>(o),
                       reinterpret_cast<uint32_t*>(at), n);
        break;
      default:
        for (size_t c = 0; c < static_cast<size_t>(n); ++c) {
          std::memcpy(at + 2 * c * es, e + c * es, es);
          std::memcpy(at + (2 * c + 1) * es, o + c * es, es);
        }
    }
  });
  return out;
}

// One product of A against the interleaved weights (n columns a half), its even columns
// replacing every use of `even_out`, its odd ones `odd_out`.
void add_gated_product(Graph& g, ValueId a, Tensor weights, ValueId even_out, ValueId odd_out,
                       const std::string& name) {
  const ValueId w = g.add_constant(g.unique_name(name + "_gated_weight"), std::move(weights));
  Shape y_shape = g.value(even_out).shape;
  const int64_t n = y_shape.back();
  y_shape.back() = 2 * n;
  const std::string base = name + "_gated";
  const ValueId y = g.add_value(g.unique_name(base), g.value(even_out).dtype, y_shape);
  infer_node(g, g.add_node(&op("MatMul"), base, {a, w}, {y}, {}, 13));
  const int64_t axis = static_cast<int64_t>(y_shape.size()) - 1;
  replace_with_slice(g, even_out, y, 0, 2 * n, axis, base, 0, 2);
  replace_with_slice(g, odd_out, y, 1, 2 * n, axis, base, 1, 2);
}

void merge(Graph& g, NodeId first, NodeId second) {
  const Node p = g.node(first), q = g.node(second);
  const int64_t n = g.value(p.inputs[1]).shape[1];
  add_gated_product(g, p.inputs[0],
                    interleave_columns({g.value(p.inputs[1]).constant.get()},
                                       {g.value(q.inputs[1]).constant.get()}, n),
                    p.outputs[0], q.outputs[0], p.name);
  g.kill_node(first);
  g.kill_node(second);
}

// A product against a constant [k, 2n] weight read only by two step-1 Slices of its columns
// [0, n) and [n, 2n) (torch.chunk(2) of a fused gate and up, as Phi-3's and ChatGLM's MLPs
// write them) whose outputs meet in one value: {product, low Slice, high Slice}.
struct Halves {
  NodeId mm = kNoNode, lo = kNoNode, hi = kNoNode;
};
std::optional<Halves> chunked_halves(const Graph& g, const Users& users, NodeId id) {
  const Node& n = g.node(id);
  const ValueId y = n.outputs[0];
  if (!constant_weight_product(g, n) || users[y].size() != 2) return std::nullopt;
  const int64_t cols = g.value(y).shape.back();
  if (cols % 2 != 0 || cols == 0) return std::nullopt;
  Halves h{id};
  for (NodeId u : users[y]) {
    const std::optional<AxisRange> r = last_axis_slice(g, g.node(u));
    if (!r || g.node(u).inputs[0] != y || r->step != 1 || r->size != cols / 2) return std::nullopt;
    if (r->start != 0 && r->start != cols / 2) return std::nullopt;
    (r->start == 0 ? h.lo : h.hi) = u;
  }
  if (h.lo == kNoNode || h.hi == kNoNode ||
      !meet_in_one_value(g, users, g.node(h.lo).outputs[0], g.node(h.hi).outputs[0]))
    return std::nullopt;
  return h;
}

void interleave_halves(Graph& g, const Halves& h) {
  const Node mm = g.node(h.mm);
  const Tensor& w = *g.value(mm.inputs[1]).constant;
  const int64_t n = w.shape()[1] / 2;
  add_gated_product(g, mm.inputs[0], interleave_columns({&w, 0}, {&w, n}, n),
                    g.node(h.lo).outputs[0], g.node(h.hi).outputs[0], mm.name);
  g.kill_node(h.lo);
  g.kill_node(h.hi);
  g.kill_node(h.mm);
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
  std::vector<Halves> halves;
  for (NodeId id : g.topo_order())
    if (std::optional<Halves> h = chunked_halves(g, users, id)) halves.push_back(*h);
  for (const auto& [x, y] : pairs) merge(g, x, y);
  for (const Halves& h : halves) interleave_halves(g, h);
  return 2 * static_cast<int>(pairs.size()) + static_cast<int>(halves.size());
}

}  // namespace braze::graph::passes
