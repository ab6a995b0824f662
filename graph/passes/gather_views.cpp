#include "graph/passes/gather_views.h"

#include <braze/error.h>

#include <fmt/format.h>

#include "graph/op_context.h"
#include "graph/passes/pass.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

// Data no larger than this is numbered and gathered at compile time (a mask's [B, S] is 10^3
// to 10^5 elements).
constexpr int64_t kMaxNumbered = int64_t{1} << 22;

// Whether node n gathers its input 0 whole and in order: its other inputs constants, its
// output input 0's dtype and element count, and its reference, run on the numbers 0 … N − 1,
// giving them back in order.
bool gathers_in_order(const Graph& g, const Node& n) {
  if (n.op->kind != FusionKind::Injective || n.op->layout || n.op->index_map || !n.op->reference ||
      n.op->may_be_random || n.inputs.size() < 2 || n.outputs.size() != 1 ||
      n.outputs[0] == kNoValue || n.inputs[0] == kNoValue)
    return false;
  const Value &data = g.value(n.inputs[0]), &out = g.value(n.outputs[0]);
  if (!data.has_shape || !out.has_shape || data.constant || out.dtype != data.dtype) return false;
  const int64_t count = checked_numel(data.shape);
  if (count == 0 || count > kMaxNumbered || checked_numel(out.shape) != count) return false;
  std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (n.inputs[i] == kNoValue) continue;
    if (!g.value(n.inputs[i]).constant) return false;
    ins[i] = g.value(n.inputs[i]).constant.get();
  }
  Tensor numbers(DType::Int64, data.shape);
  for (int64_t i = 0; i < count; ++i) numbers.set_i64(i, i);
  ins[0] = &numbers;
  Tensor got;
  try {
    got = std::move(evaluate_node(n, ins).at(0));
  } catch (const Error&) {  // indices out of range and the like: the kernel reports them
    return false;
  }
  if (got.dtype() != DType::Int64 || got.numel() != count) return false;
  for (int64_t i = 0; i < count; ++i)
    if (got.get_i64(i) != i) return false;
  return true;
}

// Whether binary element-wise node n, a logical op with constant operand `c` (And with all
// true, Or or Xor with all false), gives its other operand back unchanged: run on that operand
// all false and all true (every pair of values an element can meet), it returns the same.
bool leaves_operand(const Graph& g, const Node& n, size_t c) {
  const ValueId x = n.inputs[1 - c];
  const Value &xv = g.value(x), &out = g.value(n.outputs[0]);
  if (xv.dtype != DType::Bool || out.dtype != DType::Bool || !xv.has_shape || !out.has_shape ||
      xv.constant || checked_numel(out.shape) > kMaxNumbered)
    return false;
  for (int64_t bit = 0; bit <= 1; ++bit) {
    Tensor probe(DType::Bool, xv.shape);
    for (int64_t i = 0; i < probe.numel(); ++i) probe.set_i64(i, bit);
    std::vector<const Tensor*> ins(2, nullptr);
    ins[c] = g.value(n.inputs[c]).constant.get();
    ins[1 - c] = &probe;
    const Tensor got = evaluate_node(n, ins).at(0);
    for (int64_t i = 0; i < got.numel(); ++i)
      if (got.get_i64(i) != bit) return false;
  }
  return true;
}

// The operand (0 or 1) that binary element-wise node n passes through unchanged, or -1.
int passed_operand(const Graph& g, const Node& n) {
  if (!is_elementwise(n) || n.inputs.size() != 2 || n.outputs.empty() || n.outputs[0] == kNoValue)
    return -1;
  for (size_t c = 0; c < 2; ++c) {
    const ValueId cv = n.inputs[c], xv = n.inputs[1 - c];
    if (cv == kNoValue || xv == kNoValue || !g.value(cv).constant) continue;
    if (leaves_operand(g, n, c)) return static_cast<int>(1 - c);
  }
  return -1;
}

}  // namespace

int drop_neutral_operands(Graph& g) {
  int changed = 0;
  const OpDef& expand = op("Expand");
  for (NodeId id : g.topo_order()) {
    const int keep = passed_operand(g, g.node(id));
    if (keep < 0) continue;
    const Node& n = g.node(id);
    const std::string name = n.name;
    const ValueId x = n.inputs[static_cast<size_t>(keep)], out = n.outputs[0];
    const Shape shape = g.value(out).shape;
    g.kill_node(id);
    g.value(out).producer = kNoNode;
    if (g.value(x).shape == shape) {
      g.replace_all_uses(out, x);
    } else {  // the constant broadcast x: its output is x expanded
      const ValueId dims = shape_constant(g, name + "_shape", shape);
      infer_node(g, g.add_node(&expand, name + "_expanded", {x, dims}, {out}, {}, 13));
    }
    ++changed;
  }
  return changed;
}

int gathers_as_reshapes(Graph& g) {
  int changed = 0;
  const OpDef& reshape = op("Reshape");
  for (NodeId id : g.topo_order()) {
    if (!gathers_in_order(g, g.node(id))) continue;
    const Node& n = g.node(id);
    const std::string name = n.name;
    const ValueId data = n.inputs[0], out = n.outputs[0];
    const Shape shape = g.value(out).shape;
    const ValueId dims = shape_constant(g, name + "_shape", shape);
    g.kill_node(id);
    g.value(out).producer = kNoNode;
    const NodeId r = g.add_node(&reshape, name + "_in_order", {data, dims}, {out}, {}, 14);
    infer_node(g, r);
    ++changed;
  }
  return changed;
}

}  // namespace braze::graph::passes
