#include <braze/error.h>

#include <fmt/format.h>

#include "graph/ir.h"
#include "graph/registry.h"

namespace braze::graph {

namespace {
[[noreturn]] void broken(const std::string& msg) { throw InternalError("graph verifier: " + msg); }
}  // namespace

void verify(const Graph& g) {
  std::vector<bool> defined(g.num_values(), false);
  for (ValueId v : g.inputs()) {
    if (v < 0 || static_cast<size_t>(v) >= g.num_values()) broken("graph input id out of range");
    if (g.value(v).producer != kNoNode)
      broken("graph input %" + g.value(v).name + " has a producer");
    defined[v] = true;
  }
  for (size_t i = 0; i < g.num_values(); ++i)
    if (g.value(static_cast<ValueId>(i)).constant) defined[i] = true;

  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (!n.op) broken(n.describe() + " has no op");
    const OpDef& op = *n.op;
    int nin = static_cast<int>(n.inputs.size());
    if (nin < op.min_inputs || (op.max_inputs >= 0 && nin > op.max_inputs))
      broken(fmt::format("{} has {} inputs", n.describe(), nin));
    int nout = static_cast<int>(n.outputs.size());
    if (nout < op.min_outputs || nout > op.max_outputs)
      broken(fmt::format("{} has {} outputs", n.describe(), nout));
    for (ValueId v : n.inputs) {
      if (v == kNoValue) continue;
      if (v < 0 || static_cast<size_t>(v) >= g.num_values())
        broken(n.describe() + ": input id out of range");
      if (!defined[v])
        broken(fmt::format("{} reads %{} before it is defined", n.describe(), g.value(v).name));
    }
    for (ValueId v : n.outputs) {
      if (v == kNoValue) continue;
      if (defined[v]) broken(fmt::format("%{} is defined twice", g.value(v).name));
      if (g.value(v).producer != id)
        broken(fmt::format("%{} has a stale producer", g.value(v).name));
      defined[v] = true;
    }
  }
  for (const auto& o : g.outputs()) {
    if (o.value < 0 || static_cast<size_t>(o.value) >= g.num_values())
      broken("graph output id out of range");
    if (!defined[o.value]) broken("graph output " + o.name + " is never defined");
  }
}

}  // namespace braze::graph
