// fusion::Plan — the partition of a graph's live nodes into groups, each of which becomes
// one kernel. Analysis only: the plan names nodes and the values crossing group
// boundaries; codegen builds kernels from it and the runtime launches them.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "graph/ir.h"

namespace braze::fusion {

enum class GroupKind { Pointwise, Reduction, Gemm, Opaque, Attention };
// "pointwise", "reduction", "gemm", "opaque", "attention" (softmax(Q Kᵀ …) V: fusion/attention.h)
std::string_view group_kind_name(GroupKind k);

struct Group {
  GroupKind kind = GroupKind::Opaque;
  std::vector<graph::NodeId> nodes;     // in topological order
  std::vector<graph::ValueId> inputs;   // values read from outside the group (incl. constants)
  std::vector<graph::ValueId> outputs;  // values used outside the group or graph outputs
};

// A merge the partitioner considered and refused, with the reason (shown by inspect).
struct RefusedMerge {
  graph::NodeId producer;
  graph::NodeId consumer;
  std::string reason;
};

struct Plan {
  std::vector<Group> groups;  // in a valid execution order
  std::vector<RefusedMerge> refused;
};

// The group kind a single node forms, from its op's fusion kind.
GroupKind kind_of(const graph::Node& n);

// One node per group (--no-fuse), in topological order.
Plan plan_unfused(const graph::Graph& g);

// The plan as text (--dump=plan): each group's kind, nodes, inputs and outputs, then the
// merges refused and why.
void write_plan(std::ostream& os, const graph::Graph& g, const Plan& plan);

// Fills a group's inputs and outputs from its nodes.
void compute_boundary(const graph::Graph& g, Group& group,
                      const std::vector<std::vector<graph::NodeId>>& users);

}  // namespace braze::fusion
