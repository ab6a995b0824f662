#include "fusion/plan.h"

#include <algorithm>
#include <ostream>
#include <set>

#include <fmt/format.h>

#include "graph/registry.h"

namespace braze::fusion {

using graph::FusionKind;

std::string_view group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::Pointwise:
      return "pointwise";
    case GroupKind::Reduction:
      return "reduction";
    case GroupKind::Gemm:
      return "gemm";
    case GroupKind::Opaque:
      return "opaque";
    case GroupKind::Attention:
      return "attention";
  }
  return "?";
}

GroupKind kind_of(const graph::Node& n) {
  switch (n.op->kind) {
    case FusionKind::ElemWise:
    case FusionKind::Broadcast:
    case FusionKind::Injective:
      return GroupKind::Pointwise;
    case FusionKind::Reduce:
      return GroupKind::Reduction;
    case FusionKind::OutEWiseFusable:
      return GroupKind::Gemm;
    case FusionKind::Opaque:
      return GroupKind::Opaque;
  }
  return GroupKind::Opaque;
}

void compute_boundary(const graph::Graph& g, Group& group,
                      const std::vector<std::vector<graph::NodeId>>& users) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  std::set<graph::ValueId> produced;
  group.inputs.clear();
  group.outputs.clear();
  for (graph::NodeId id : group.nodes)
    for (graph::ValueId v : g.node(id).outputs)
      if (v != graph::kNoValue) produced.insert(v);
  for (graph::NodeId id : group.nodes) {
    for (graph::ValueId v : g.node(id).inputs)
      if (v != graph::kNoValue && !produced.count(v) &&
          std::find(group.inputs.begin(), group.inputs.end(), v) == group.inputs.end())
        group.inputs.push_back(v);
    for (graph::ValueId v : g.node(id).outputs) {
      if (v == graph::kNoValue) continue;
      bool outside =
          g.is_graph_output(v) || std::any_of(users[v].begin(), users[v].end(),
                                              [&](graph::NodeId u) { return !members.count(u); });
      if (outside) group.outputs.push_back(v);
    }
  }
}

Plan plan_unfused(const graph::Graph& g) {
  Plan p;
  auto users = g.users();
  for (graph::NodeId id : g.topo_order()) {
    Group grp;
    grp.kind = kind_of(g.node(id));
    grp.nodes = {id};
    compute_boundary(g, grp, users);
    p.groups.push_back(std::move(grp));
  }
  return p;
}

namespace {

std::string value_list(const graph::Graph& g, const std::vector<graph::ValueId>& values) {
  std::string out;
  for (graph::ValueId v : values) {
    const graph::Value& val = g.value(v);
    if (val.constant) continue;  // weights and folded constants: many, and not what a plan moves
    out += (out.empty() ? "%" : ", %") + val.name;
  }
  return out.empty() ? "-" : out;
}

}  // namespace

void write_plan(std::ostream& os, const graph::Graph& g, const Plan& plan) {
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const Group& grp = plan.groups[i];
    os << fmt::format("group {} {} ({} node{})\n", i, group_kind_name(grp.kind), grp.nodes.size(),
                      grp.nodes.size() == 1 ? "" : "s");
    for (graph::NodeId id : grp.nodes)
      os << fmt::format("  '{}' ({})\n", g.node(id).name, g.node(id).op_type());
    os << "  reads " << value_list(g, grp.inputs) << "\n";
    os << "  writes " << value_list(g, grp.outputs) << "\n";
  }
  for (const RefusedMerge& r : plan.refused)
    os << fmt::format("refused '{}' ({}) -> '{}' ({}): {}\n", g.node(r.producer).name,
                      g.node(r.producer).op_type(), g.node(r.consumer).name,
                      g.node(r.consumer).op_type(), r.reason);
}

}  // namespace braze::fusion
