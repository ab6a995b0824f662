#include "codegen/capabilities.h"

#include <algorithm>

#include "codegen/attention.h"
#include "codegen/gemm.h"
#include "codegen/lowering.h"

namespace braze::codegen {

namespace {

// The product's dims when it runs on a tensor-core schedule for `target`, else nullopt.
std::optional<GemmDims> tensor_core_dims(const graph::Graph& g,
                                         const std::vector<graph::NodeId>& nodes, graph::NodeId mm,
                                         const Target& target) {
  fusion::Group group;
  group.kind = fusion::GroupKind::Gemm;
  group.nodes = nodes;
  std::sort(group.nodes.begin(), group.nodes.end());
  std::string why;
  std::optional<GemmDims> d = gemm_dims(g, group, &why);
  if (!d || d->node != &g.node(mm) || !gemm_tensor_core_types(g, *d, target) || d->a_vec ||
      d->b_vec)
    return std::nullopt;
  return d;
}

// What keeps operand i of d's product off each tensor-core schedule: mma.sync's 16-byte
// copies, then (on sm_90a) wgmma's TMA; empty where none.
struct OperandProblems {
  std::string mma, wgmma;
  bool none() const { return mma.empty() && wgmma.empty(); }
};
OperandProblems operand_problems(const graph::Graph& g, const GemmDims& d, int i,
                                 const Target& target) {
  OperandProblems p;
  // A's windows (an implicit-GEMM convolution) are read by wgmma alone, with TMA's im2col
  // mode; where it takes the product (B and the types included), no tensor-core schedule is
  // kept off.
  if (i == 0 && !d.view[0] && d.window) {
    p.mma = gemm_wgmma_unsupported(g, fusion::Group{}, d, target);
    return p;
  }
  p.mma = gemm_tc_operand_problem(g, d, i);
  if (p.mma.empty() && target.sm90a && !target.emulated) p.wgmma = gemm_wgmma_operand_problem(d, i);
  return p;
}

}  // namespace

std::string ScheduleCapabilities::gemm_operand(const graph::Graph& g,
                                               const std::vector<graph::NodeId>& nodes,
                                               graph::NodeId mm, int operand) const {
  std::optional<GemmDims> d = tensor_core_dims(g, nodes, mm, target_);
  if (!d) return "";  // the SIMT schedule reads any operand chain
  const OperandProblems chain = operand_problems(g, *d, operand, target_);
  if (chain.none()) return "";
  // Refused only where the operand written out by a kernel of its own would do better: a
  // product that its sizes keep off tensor cores anyway (k not a multiple of 8: ViT's 197
  // tokens) reads the chain on the SIMT schedule, and a copy would only add a kernel.
  std::optional<GemmDims> alone = tensor_core_dims(g, {mm}, mm, target_);
  if (!alone) return "";
  const OperandProblems written = operand_problems(g, *alone, operand, target_);
  const std::string& why = !chain.mma.empty() ? (written.mma.empty() ? chain.mma : "")
                                              : (written.none() ? chain.wgmma : "");
  return why.empty() ? "" : "the tensor-core GEMM would not read it in place: " + why;
}

bool ScheduleCapabilities::gemm_reads_view(const graph::Graph& g,
                                           const std::vector<graph::NodeId>& nodes,
                                           graph::NodeId mm, int operand) const {
  std::optional<GemmDims> d = tensor_core_dims(g, nodes, mm, target_);
  // The view reaches a tensor-core schedule, and the other operand as it stands keeps the
  // product on one (were that operand to need SIMT, the view would be read there).
  return d && operand_problems(g, *d, operand, target_).none() &&
         gemm_tc_operand_problem(g, *d, 1 - operand).empty();
}

std::string ScheduleCapabilities::attention(const graph::Graph& g,
                                            const std::vector<graph::NodeId>& nodes) const {
  fusion::Group group;
  group.kind = fusion::GroupKind::Attention;
  group.nodes = nodes;
  std::sort(group.nodes.begin(), group.nodes.end());
  fusion::compute_boundary(g, group, *g.shared_users());
  if (group.outputs.size() != 1) return "the attention's nodes leave more than its output";
  return attention_unsupported(g, group, target_);
}

std::optional<GemmShape> gemm_shape(const graph::Graph& g, const fusion::Group& group) {
  if (group.kind != fusion::GroupKind::Gemm) return std::nullopt;
  std::string why;
  std::optional<GemmDims> d = gemm_dims(g, group, &why);
  if (!d) return std::nullopt;
  return GemmShape{d->batches, d->m, d->nn, d->k, g.value(d->node->inputs[0]).dtype};
}

std::optional<AttentionShape> attention_shape(const graph::Graph& g, const fusion::Group& group) {
  if (group.kind != fusion::GroupKind::Attention) return std::nullopt;
  std::string why;
  std::optional<AttentionDims> a = attention_dims(g, group, Target{}, &why);
  if (!a) return std::nullopt;
  return AttentionShape{a->batches, a->sq, a->sk, a->d, a->dtype, attention_mask_kind(g, *a)};
}

std::string schedule_name(const Kernel& k) {
  auto on = [&](const char* key) { return k.tunables.count(key) && k.tunables.at(key) != 0; };
  if (k.kind == fusion::GroupKind::Attention) return on("wg") ? "flash-wgmma" : "flash";
  if (k.kind != fusion::GroupKind::Gemm) return std::string(fusion::group_kind_name(k.kind));
  return on("wg") ? "wgmma" : on("tc") ? "mma" : "simt";
}

std::string schedule_name(const graph::Graph& g, const Kernel& k) {
  if (!k.schedule.empty()) return k.schedule;
  if (k.kind == fusion::GroupKind::Gemm || k.kind == fusion::GroupKind::Attention)
    return schedule_name(k);
  for (graph::NodeId id : k.nodes)
    if (const char* s = lowering(g.node(id)).schedule) return s;
  return schedule_name(k);
}

}  // namespace braze::codegen
