#include "graph/passes/sibling_matmuls.h"

#include <cstring>
#include <map>

#include <fmt/format.h>

#include "graph/column_pairs.h"
#include "graph/op_context.h"
#include "graph/passes/split_to_slices.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

struct Sibling {
  NodeId mm = kNoNode;
  NodeId add = kNoNode;       // its bias Add, or none
  ValueId result = kNoValue;  // what its consumers read: the Add's output, or the product's
  int64_t n = 0;
};

// A MatMul of A against a constant [k, n] weight: its width, else 0.
int64_t constant_weight_width(const Graph& g, const Node& n) {
  if (n.op->name != "MatMul" || !n.op->domain.empty() || n.inputs.size() != 2) return 0;
  const Value &a = g.value(n.inputs[0]), &w = g.value(n.inputs[1]), &y = g.value(n.outputs[0]);
  if (!a.has_shape || !w.constant || !y.has_shape || w.shape.size() != 2 || a.shape.empty())
    return 0;
  if (a.dtype != w.dtype || g.is_graph_output(n.outputs[0])) return 0;
  return w.shape[1];
}

// The constant of an Add of a product's output y.
ValueId bias_of(const Node& add, ValueId y) {
  return add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
}

// The product's only consumer when it is Add(y, b) with b a constant of shape [n].
NodeId bias_add(const Graph& g, const std::vector<std::vector<NodeId>>& users, const Node& mm,
                int64_t n) {
  const ValueId y = mm.outputs[0];
  if (users[y].size() != 1) return kNoNode;
  const Node& add = g.node(users[y][0]);
  if (add.op->name != "Add" || !add.op->domain.empty() || add.inputs.size() != 2) return kNoNode;
  const ValueId b = bias_of(add, y);
  const Value& bv = g.value(b);
  if (b == y || !bv.constant || bv.shape != Shape{n} || bv.dtype != g.value(y).dtype)
    return kNoNode;
  if (g.value(add.outputs[0]).shape != g.value(y).shape || g.is_graph_output(add.outputs[0]))
    return kNoNode;
  return users[y][0];
}

bool read_by_layout_ops_only(const Graph& g, const std::vector<std::vector<NodeId>>& users,
                             ValueId v) {
  if (users[v].empty()) return false;
  for (NodeId u : users[v])
    if (!g.node(u).op->layout || g.node(u).inputs[0] != v) return false;
  return true;
}

// Columns of the [rows, n_i] tensors side by side: [rows, n_1 + n_2 + …].
Tensor concat_columns(const std::vector<const Tensor*>& parts, int64_t rows) {
  int64_t total = 0;
  for (const Tensor* t : parts) total += t->numel() / rows;
  const DType dt = parts[0]->dtype();
  const size_t es = dtype_size(dt);
  Tensor out = Tensor::uninitialized(
      dt, rows == 1 ? Shape{total} : Shape{rows, total});  // every byte written below
  auto* dst = static_cast<char*>(out.raw());
  for (int64_t r = 0; r < rows; ++r)
    for (const Tensor* t : parts) {
      const int64_t n = t->numel() / rows;
      std::memcpy(dst, static_cast<const char*>(t->raw()) + static_cast<size_t>(r * n) * es,
                  static_cast<size_t>(n) * es);
      dst += static_cast<size_t>(n) * es;
    }
  return out;
}

void merge(Graph& g, const std::vector<Sibling>& sibs, bool with_bias) {
  const Node first = g.node(sibs[0].mm);
  const ValueId a = first.inputs[0];
  const Value av = g.value(a);
  const int64_t k = g.value(first.inputs[1]).shape[0];
  int64_t total = 0;
  std::vector<const Tensor*> ws, bs;
  for (const Sibling& s : sibs) {
    total += s.n;
    ws.push_back(g.value(g.node(s.mm).inputs[1]).constant.get());
    if (with_bias)
      bs.push_back(g.value(bias_of(g.node(s.add), g.node(s.mm).outputs[0])).constant.get());
  }
  const std::string base = first.name + "_siblings";
  const ValueId w = g.add_constant(g.unique_name(base + "_weight"), concat_columns(ws, k));
  Shape y_shape = g.value(first.outputs[0]).shape;
  y_shape.back() = total;
  ValueId y = g.add_value(g.unique_name(base), av.dtype, y_shape);
  infer_node(g, g.add_node(&op("MatMul"), base, {a, w}, {y}, {}, 13));
  if (with_bias) {
    const ValueId b = g.add_constant(g.unique_name(base + "_bias"), concat_columns(bs, 1));
    const ValueId yb = g.add_value(g.unique_name(base + "_biased"), av.dtype, y_shape);
    infer_node(g, g.add_node(&op("Add"), base + "_bias_add", {y, b}, {yb}, {}, 14));
    y = yb;
  }
  const int64_t axis = static_cast<int64_t>(y_shape.size()) - 1;
  int64_t at = 0;
  for (size_t i = 0; i < sibs.size(); ++i) {
    const Sibling& s = sibs[i];
    replace_with_slice(g, s.result, y, at, at + s.n, axis, base, i);
    if (s.add != kNoNode) g.kill_node(s.add);
    g.kill_node(s.mm);
    at += s.n;
  }
}

}  // namespace

int merge_sibling_matmuls(Graph& g) {
  const std::vector<std::vector<NodeId>> users = g.users();
  // Siblings: by activation, weight rows and type, in topological order.
  std::map<std::tuple<ValueId, int64_t, DType>, std::vector<NodeId>> by_input;
  std::vector<std::tuple<ValueId, int64_t, DType>> keys;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    // An interleaved gated product (merge_gated_matmuls) stays whole: its epilogue reads the
    // column pair.
    if (!constant_weight_width(g, n) || column_pair_of(g, n.outputs[0], users[n.outputs[0]]))
      continue;
    auto key =
        std::make_tuple(n.inputs[0], g.value(n.inputs[1]).shape[0], g.value(n.inputs[0]).dtype);
    if (!by_input.count(key)) keys.push_back(key);
    by_input[key].push_back(id);
  }
  int changed = 0;
  for (const auto& key : keys) {
    const std::vector<NodeId>& mms = by_input[key];
    if (mms.size() < 2) continue;
    std::vector<Sibling> sibs;
    bool all_bias = true, none_bias = true, layouts_only = true;
    for (NodeId id : mms) {
      const Node& n = g.node(id);
      Sibling s;
      s.mm = id;
      s.n = constant_weight_width(g, n);
      s.add = bias_add(g, users, n, s.n);
      if (s.add != kNoNode) {
        s.result = g.node(s.add).outputs[0];
        none_bias = false;
      } else {
        s.result = n.outputs[0];
        all_bias = false;
        layouts_only = layouts_only && read_by_layout_ops_only(g, users, s.result);
      }
      sibs.push_back(s);
    }
    if (!all_bias && !(none_bias && layouts_only)) continue;
    merge(g, sibs, all_bias);
    changed += static_cast<int>(sibs.size());
  }
  return changed;
}

}  // namespace braze::graph::passes
