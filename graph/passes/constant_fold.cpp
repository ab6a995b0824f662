#include "graph/passes/constant_fold.h"

#include "graph/op_context.h"
#include "graph/passes/depthwise_weights.h"
#include "graph/passes/weights_k_major.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

bool foldable(const Graph& g, const std::vector<std::vector<NodeId>>& users, NodeId id) {
  const Node& n = g.node(id);
  if (n.op->may_be_random) return false;  // identity elimination handles Dropout's inference mode
  if (is_k_major_weight(g, users, id)) return false;    // a weight's layout (store_weights_k_major)
  if (is_depthwise_weight(g, users, id)) return false;  // store_depthwise_weights_channels_last
  uint64_t out_bytes = 0;
  for (ValueId o : n.outputs) {
    if (o == kNoValue) continue;
    const Value& v = g.value(o);
    if (!v.has_shape) return false;
    out_bytes += static_cast<uint64_t>(checked_numel(v.shape)) * dtype_size(v.dtype);
  }
  if (out_bytes > kMaxFoldBytes) return false;
  for (ValueId in : n.inputs) {
    if (in == kNoValue) continue;
    const Value& v = g.value(in);
    if (!v.constant && !(n.op->reads_shapes_only && v.has_shape)) return false;
  }
  return true;
}

}  // namespace

int fold_constants(Graph& g) {
  int folded = 0;
  // Folding only removes uses (a folded node's), which is_k_major_weight and
  // is_depthwise_weight skip.
  const std::vector<std::vector<NodeId>> users = g.users();
  for (NodeId id : g.topo_order()) {
    infer_node(g, id);  // an input may have become constant: its shapes may now be known
    const Node& n = g.node(id);
    if (!foldable(g, users, id)) continue;
    std::vector<Tensor> shape_only(n.inputs.size());
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == kNoValue) continue;
      const Value& v = g.value(n.inputs[i]);
      if (v.constant) {
        ins[i] = v.constant.get();
      } else {
        shape_only[i] = Tensor::metadata_only(v.dtype, v.shape);
        ins[i] = &shape_only[i];
      }
    }
    std::vector<Tensor> outs = evaluate_node(n, ins);
    std::vector<ValueId> outputs = n.outputs;
    g.kill_node(id);
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i] == kNoValue) continue;
      Value& v = g.value(outputs[i]);
      v.dtype = outs[i].dtype();
      v.shape = outs[i].shape();
      v.has_shape = true;
      v.constant = std::make_shared<const Tensor>(std::move(outs[i]));
    }
    ++folded;
  }
  return folded;
}

}  // namespace braze::graph::passes
