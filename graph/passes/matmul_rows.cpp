#include "graph/passes/matmul_rows.h"

#include <fmt/format.h>

#include "graph/op_context.h"
#include "graph/passes/pass.h"
#include "graph/registry.h"

namespace braze::graph::passes {

int flatten_matmul_rows(Graph& g) {
  int changed = 0;
  const OpDef& reshape = op("Reshape");
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (n.op->name != "MatMul" || !n.op->domain.empty() || n.inputs.size() != 2) continue;
    const ValueId a = n.inputs[0], b = n.inputs[1], y = n.outputs[0];
    const Value &av = g.value(a), &bv = g.value(b), &yv = g.value(y);
    if (!av.has_shape || !bv.has_shape || !yv.has_shape || av.shape.size() < 3 ||
        bv.shape.size() != 2)
      continue;
    if (av.producer != kNoNode && g.node(av.producer).op->layout) continue;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < av.shape.size(); ++d) rows *= av.shape[d];
    if (rows == av.shape[av.shape.size() - 2] || rows == 0) continue;  // one batch
    // What the rewrite needs of the values, copied: adding values and nodes moves them.
    const std::string base = n.name, a_name = av.name, y_name = yv.name;
    const Shape y_shape = yv.shape;
    const DType dt = yv.dtype, a_dtype = av.dtype;
    const Shape a2 = {rows, av.shape.back()}, y2 = {rows, bv.shape[1]};
    auto shape_const = [&](const Shape& s, const char* what) {
      return shape_constant(g, fmt::format("{}_{}", base, what), s);
    };
    const ValueId a_flat = g.add_value(g.unique_name(a_name + "_rows"), a_dtype, a2);
    NodeId r1 =
        g.add_node(&reshape, base + "_rows", {a, shape_const(a2, "rows_shape")}, {a_flat}, {}, 14);
    infer_node(g, r1);
    const ValueId y_flat = g.add_value(g.unique_name(y_name + "_rows"), dt, y2);
    // The MatMul writes the flat product; a Reshape writes the old value, which its users read.
    g.node(id).inputs[0] = a_flat;
    g.node(id).outputs[0] = y_flat;
    g.value(y_flat).producer = id;
    g.value(y).producer = kNoNode;
    NodeId r2 = g.add_node(&reshape, base + "_unrows", {y_flat, shape_const(y_shape, "shape")}, {y},
                           {}, 14);
    infer_node(g, r2);
    ++changed;
  }
  return changed;
}

}  // namespace braze::graph::passes
