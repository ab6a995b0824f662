#include "codegen/capabilities.h"

#include <algorithm>

#include "codegen/gemm.h"

namespace braze::codegen {

namespace {

// The product's dims when it runs on a tensor-core schedule for `target`, else nullopt.
std::optional<GemmDims> tensor_core_dims(const graph::Graph& g, const std::vector<graph::NodeId>& nodes,
                                         graph::NodeId mm, const Target& target) {
  fusion::Group group;
  group.kind = fusion::GroupKind::Gemm;
  group.nodes = nodes;
  std::sort(group.nodes.begin(), group.nodes.end());
  std::string why;
  std::optional<GemmDims> d = gemm_dims(g, group, &why);
  if (!d || d->node != &g.node(mm) || !gemm_tensor_core_types(g, *d, target) || d->a_vec || d->b_vec)
    return std::nullopt;
  return d;
}

}  // namespace

std::string ScheduleCapabilities::gemm_operand(const graph::Graph& g,
                                               const std::vector<graph::NodeId>& nodes,
                                               graph::NodeId mm, int operand) const {
  std::optional<GemmDims> d = tensor_core_dims(g, nodes, mm, target_);
  if (!d) return "";  // the SIMT schedule reads any operand chain
  std::string why = gemm_tc_operand_problem(g, *d, operand);
  if (why.empty() && target_.sm90a && !target_.emulated) why = gemm_wgmma_operand_problem(*d, operand);
  if (!why.empty()) return "the tensor-core GEMM would not read it in place: " + why;
  return "";
}

bool ScheduleCapabilities::gemm_reads_view(const graph::Graph& g, const std::vector<graph::NodeId>& nodes,
                                           graph::NodeId mm, int operand) const {
  return tensor_core_dims(g, nodes, mm, target_) && gemm_operand(g, nodes, mm, operand).empty();
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
