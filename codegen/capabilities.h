// What the schedules take, for the partitioner (fusion/capabilities.h) on one target: a
// product whose operand types run on tensor cores reads an operand through layout ops only
// when their chain is a strided view the tensor-core schedules' copies (mma.sync's 16-byte
// cp.async, wgmma's TMA on sm_90a) can walk, and never through a computed op (a Cast stays in
// its producer's kernel). Any other product runs on the SIMT schedule, which reads any chain.
#pragma once

#include "codegen/kernel.h"
#include "codegen/lowering.h"
#include "fusion/capabilities.h"
#include "fusion/partition.h"

namespace braze::codegen {

class ScheduleCapabilities : public fusion::Capabilities {
 public:
  explicit ScheduleCapabilities(const Target& target) : target_(target) {}
  std::string gemm_operand(const graph::Graph& g, const std::vector<graph::NodeId>& nodes,
                           graph::NodeId mm, int operand) const override;
  bool gemm_reads_view(const graph::Graph& g, const std::vector<graph::NodeId>& nodes,
                       graph::NodeId mm, int operand) const override;
  std::string attention(const graph::Graph& g,
                        const std::vector<graph::NodeId>& nodes) const override;

 private:
  Target target_;
};

// The plan the build for `target` runs: fused with these capabilities, or one node per group.
inline fusion::Plan plan_for(const graph::Graph& g, bool fuse, const Target& target) {
  ScheduleCapabilities caps(target);
  return fusion::make_plan(g, fuse, kernel_lowerings(), &caps);
}

// A GEMM group's product: batch count, m, n, k and the operands' type (bench reports, and
// bench/models.py times torch.matmul on the same product); nullopt for other groups.
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  DType dtype = DType::Float32;
};
std::optional<GemmShape> gemm_shape(const graph::Graph& g, const fusion::Group& group);

// An attention group's shape: `batch` (batch x heads) independent softmax(Q Kᵀ …) V of sq
// queries, sk keys, head dim d; `mask` none, causal (a constant causal mask) or additive
// (any other chain input); nullopt for other groups.
struct AttentionShape {
  int64_t batch = 1, sq = 0, sk = 0, d = 0;
  DType dtype = DType::Float16;
  std::string mask;
};
std::optional<AttentionShape> attention_shape(const graph::Graph& g, const fusion::Group& group);

// The schedule a kernel was generated with: for a GEMM wgmma, mma (mma.sync) or simt; for
// attention flash; for the other kinds their kind's name.
std::string schedule_name(const Kernel& k);
// The same, where the kernel record names its schedule (Kernel::schedule: "depthwise" or
// "pool" for a loop op computed a vector of channels at a time) that name, else where a node
// of the kernel is a loop op whose lowering names its schedule (Lowering::schedule: "direct"
// for convolution and pooling as a loop per output element) that name instead of the kind's.
std::string schedule_name(const graph::Graph& g, const Kernel& k);

}  // namespace braze::codegen
