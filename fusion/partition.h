// The fusion partitioner: groups a graph's nodes into kernels (see partition.cpp for the
// algorithm and its pictures). Analysis only — it returns a Plan; codegen builds kernels.
#pragma once

#include "fusion/capabilities.h"
#include "fusion/lowerings.h"
#include "fusion/plan.h"
#include "graph/ir.h"

namespace braze::fusion {

struct PartitionOptions {
  size_t max_pointwise_nodes = 48;  // what one pointwise kernel's registers comfortably hold
  size_t max_reduction_nodes = 48;
  size_t max_reductions = 6;  // passes over a row one reduction kernel makes
  size_t max_gemm_epilogue = 16;
  size_t max_gemm_prologue = 8;  // layout ops read through in front of an operand
};

// `lower`: what codegen generates per node (codegen::kernel_lowerings()); `caps`: what the
// schedules take (codegen::ScheduleCapabilities for the build's target); without them any
// layout chain or Cast in front of a product is fused.
Plan plan_fused(const graph::Graph& g, const Lowerings& lower, const PartitionOptions& opts = {},
                const Capabilities* caps = nullptr);

// plan_fused, or plan_unfused (one node per group) for --no-fuse.
inline Plan make_plan(const graph::Graph& g, bool fuse, const Lowerings& lower,
                      const Capabilities* caps = nullptr) {
  return fuse ? plan_fused(g, lower, {}, caps) : plan_unfused(g);
}

// Throws InternalError if the groups of `plan` form a cycle or miss or repeat a node.
void check_plan(const graph::Graph& g, const Plan& plan);

}  // namespace braze::fusion
