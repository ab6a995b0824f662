// The pointwise schedule: one thread per output element, a grid-stride loop per group
// output. Each element's value is computed by the emitter, which inlines the group's
// element-wise ops and turns its injective ops into index arithmetic on the loads.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "graph/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

namespace {
constexpr unsigned kThreads = 256;
}

std::optional<Kernel> pointwise_kernel(const graph::Graph& g, const fusion::Group& group, const Target& target,
                                       std::string* why_not) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  for (graph::NodeId id : group.nodes) {
    const graph::Node& n = g.node(id);
    if (!n.op->cuda_expr && !n.op->cuda_index) {
      *why_not = fmt::format("{} has no CUDA expression or index map", n.describe());
      return std::nullopt;
    }
  }
  Emitter e(g, [&](graph::NodeId n) { return members.count(n) != 0; });
  // Outputs of one shape share a loop, so what they have in common is computed once.
  std::vector<std::vector<graph::ValueId>> loops;
  for (graph::ValueId o : group.outputs) {
    auto it = std::find_if(loops.begin(), loops.end(),
                           [&](const auto& l) { return g.value(l[0]).shape == g.value(o).shape; });
    if (it == loops.end()) loops.push_back({o});
    else it->push_back(o);
  }
  int64_t max_n = 0;
  for (const auto& loop : loops) {
    const Shape& shape = g.value(loop[0]).shape;
    int64_t n = checked_numel(shape);
    if (n == 0) continue;
    max_n = std::max(max_n, n);
    e.open(fmt::format("for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < {}LL; "
                       "i += (long long)gridDim.x * blockDim.x) {{",
                       n));
    std::vector<std::string> coords = e.unravel("i", shape);
    for (graph::ValueId o : loop) {
      const graph::Value& v = g.value(o);
      std::string val;
      try {
        val = e.value_at(o, coords);
      } catch (const graph::CudaUnsupported& u) {
        *why_not = u.why;
        return std::nullopt;
      }
      e.line(fmt::format("braze_store({}, i, ({}){});", e.output_param(o), graph::cuda_compute_type(v.dtype), val));
    }
    e.close();
    e.clear_memo();
  }
  Kernel k;
  k.kind = fusion::GroupKind::Pointwise;
  k.nodes = group.nodes;
  // Outputs of zero size still get a parameter so the argument list stays regular.
  for (graph::ValueId o : group.outputs) e.output_param(o);
  k.params = e.params();
  k.error_messages = e.errors();
  k.has_error_flag = !k.error_messages.empty();
  k.block = {kThreads, 1, 1};
  int64_t blocks = std::min<int64_t>((max_n + kThreads - 1) / kThreads, int64_t{target.num_sms} * 16);
  k.grid = {static_cast<unsigned>(std::max<int64_t>(blocks, 1)), 1, 1};
  k.empty_launch = max_n == 0;
  std::string code = fmt::format("extern \"C\" __global__ void __launch_bounds__({}) KERNEL_NAME({}) {{\n{}}}\n",
                                 kThreads, e.signature(), e.body());
  finish_kernel(g, k, code, false);
  return k;
}

}  // namespace braze::codegen
