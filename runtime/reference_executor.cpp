#include "runtime/reference_executor.h"

#include <braze/error.h>

#include <fmt/format.h>

#include "graph/op_context.h"

namespace braze::runtime {

using graph::kNoValue;
using graph::NodeId;
using graph::ValueId;

void check_inputs(const graph::Graph& g, const std::vector<Tensor>& inputs) {
  if (inputs.size() != g.inputs().size())
    throw UserError(fmt::format("the model takes {} input{}, {} given", g.inputs().size(),
                                g.inputs().size() == 1 ? "" : "s", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    const Tensor& t = inputs[i];
    if (!t.defined()) throw UserError(fmt::format("input '{}' is not given", v.name));
    if (t.dtype() != v.dtype || (v.has_shape && t.shape() != v.shape))
      throw UserError(fmt::format("input '{}' is {}{}, but the model expects {}", v.name,
                                  dtype_name(t.dtype()), shape_str(t.shape()),
                                  graph::value_type_str(v)));
  }
}

std::vector<Tensor> run_reference(const graph::Graph& g, const std::vector<Tensor>& inputs,
                                  std::vector<Tensor>* keep) {
  check_inputs(g, inputs);
  std::vector<NodeId> order = g.topo_order();
  std::vector<Tensor> vals(g.num_values());
  for (size_t i = 0; i < g.num_values(); ++i)
    if (g.value(static_cast<ValueId>(i)).constant)
      vals[i] = *g.value(static_cast<ValueId>(i)).constant;
  for (size_t i = 0; i < inputs.size(); ++i) vals[g.inputs()[i]] = inputs[i];

  // Last use of each value (position in `order`), to free intermediates early.
  std::vector<int64_t> last_use(g.num_values(), -1);
  for (size_t k = 0; k < order.size(); ++k)
    for (ValueId v : g.node(order[k]).inputs)
      if (v != kNoValue) last_use[v] = static_cast<int64_t>(k);
  for (const auto& o : g.outputs()) last_use[o.value] = static_cast<int64_t>(order.size());

  for (size_t k = 0; k < order.size(); ++k) {
    const graph::Node& n = g.node(order[k]);
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue) {
        BRAZE_CHECK(vals[n.inputs[i]].defined(), n.describe() + " reads a value not computed");
        ins[i] = &vals[n.inputs[i]];
      }
    std::vector<Tensor> outs = graph::evaluate_node(n, ins);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] != kNoValue) vals[n.outputs[i]] = std::move(outs[i]);
    if (!keep)
      for (ValueId v : n.inputs)
        if (v != kNoValue && last_use[v] == static_cast<int64_t>(k) && !g.value(v).constant)
          vals[v] = Tensor();
  }
  std::vector<Tensor> result;
  for (const auto& o : g.outputs()) result.push_back(vals[o.value]);
  if (keep) *keep = std::move(vals);
  return result;
}

}  // namespace braze::runtime
