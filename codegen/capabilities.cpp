#include "codegen/capabilities.h"

#include <algorithm>

#include "codegen/gemm.h"

namespace braze::codegen {

std::string ScheduleCapabilities::gemm_operand(const graph::Graph& g,
                                               const std::vector<graph::NodeId>& nodes,
                                               graph::NodeId mm, int operand) const {
  fusion::Group group;
  group.kind = fusion::GroupKind::Gemm;
  group.nodes = nodes;
  std::sort(group.nodes.begin(), group.nodes.end());
  std::string why;
  std::optional<GemmDims> d = gemm_dims(g, group, &why);
  if (!d || d->node != &g.node(mm) || !gemm_tensor_core_types(g, *d, target_) || d->a_vec || d->b_vec)
    return "";  // the SIMT schedule reads any operand chain
  why = gemm_tc_operand_problem(g, *d, operand);
  if (why.empty() && target_.sm90a && !target_.emulated) why = gemm_wgmma_operand_problem(*d, operand);
  if (!why.empty()) return "the tensor-core GEMM would not read it in place: " + why;
  return "";
}

std::optional<GemmShape> gemm_shape(const graph::Graph& g, const fusion::Group& group) {
  if (group.kind != fusion::GroupKind::Gemm) return std::nullopt;
  std::string why;
  std::optional<GemmDims> d = gemm_dims(g, group, &why);
  if (!d) return std::nullopt;
  return GemmShape{d->batches, d->m, d->nn, d->k, g.value(d->node->inputs[0]).dtype};
}

std::string schedule_name(const Kernel& k) {
  auto on = [&](const char* key) { return k.tunables.count(key) && k.tunables.at(key) != 0; };
  if (k.kind != fusion::GroupKind::Gemm) return std::string(fusion::group_kind_name(k.kind));
  return on("wg") ? "wgmma" : on("tc") ? "mma" : "simt";
}

}  // namespace braze::codegen
