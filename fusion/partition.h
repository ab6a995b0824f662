// The fusion partitioner: groups a graph's nodes into kernels (see partition.cpp for the
// algorithm and its pictures). Analysis only — it returns a Plan; codegen builds kernels.
#pragma once

#include "fusion/plan.h"
#include "graph/ir.h"

namespace braze::fusion {

struct PartitionOptions {
  size_t max_pointwise_nodes = 48;   // what one pointwise kernel's registers comfortably hold
  size_t max_reduction_nodes = 48;
  size_t max_reductions = 6;         // passes over a row one reduction kernel makes
  size_t max_gemm_epilogue = 16;
};

Plan plan_fused(const graph::Graph& g, const PartitionOptions& opts = {});

// plan_fused, or plan_unfused (one node per group) for --no-fuse.
inline Plan make_plan(const graph::Graph& g, bool fuse) { return fuse ? plan_fused(g) : plan_unfused(g); }

// Throws InternalError if the groups of `plan` form a cycle or miss or repeat a node.
void check_plan(const graph::Graph& g, const Plan& plan);

}  // namespace braze::fusion
