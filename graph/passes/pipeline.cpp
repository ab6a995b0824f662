#include "graph/passes/pipeline.h"

#include <ostream>

#include <fmt/format.h>

#include "graph/passes/constant_fold.h"
#include "graph/passes/conv_as_matmul.h"
#include "graph/passes/cse.h"
#include "graph/passes/dce.h"
#include "graph/passes/fold_conv_affine.h"
#include "graph/passes/gated_matmuls.h"
#include "graph/passes/gather_views.h"
#include "graph/passes/gelu_fusion.h"
#include "graph/passes/identity_elim.h"
#include "graph/passes/matmul_rows.h"
#include "graph/passes/matmul_scale.h"
#include "graph/passes/rotary_projection.h"
#include "graph/passes/sibling_matmuls.h"
#include "graph/passes/sink_expands.h"
#include "graph/passes/sink_transposes.h"
#include "graph/passes/softmax_fusion.h"
#include "graph/passes/split_to_slices.h"
#include "graph/passes/weights_k_major.h"
#include "graph/passes/depthwise_weights.h"
#include "graph/passes/pass.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {
constexpr Pass kPasses[] = {
    {"fold_constants", fold_constants},
    {"eliminate_identities", eliminate_identities},
    {"gathers_as_reshapes", gathers_as_reshapes},
    {"drop_neutral_operands", drop_neutral_operands},
    {"sink_expands", sink_expands},
    {"fold_conv_affine", fold_conv_affine},
    {"conv_as_matmul", conv_as_matmul},
    {"sink_transposes", sink_transposes},
    {"split_to_slices", split_to_slices},
    {"fuse_gelu", fuse_gelu},
    {"fuse_softmax", fuse_softmax},
    {"hoist_matmul_scales", hoist_matmul_scales},
    {"merge_gated_matmuls", merge_gated_matmuls},
    {"merge_sibling_matmuls", merge_sibling_matmuls},
    {"rotary_projections", rotary_projections},
    {"flatten_matmul_rows", flatten_matmul_rows},
    {"store_weights_k_major", store_weights_k_major},
    {"store_depthwise_weights_channels_last", store_depthwise_weights_channels_last},
    {"eliminate_common_subexpressions", eliminate_common_subexpressions},
    {"eliminate_dead_code", eliminate_dead_code},
};
}  // namespace

PipelineReport run_pipeline(Graph& g, const PipelineOptions& opts) {
  PipelineReport rep;
  for (int round = 1; round <= opts.max_rounds; ++round) {
    int total = 0;
    for (const Pass& p : kPasses) {
      int changed = p.run(g);
      total += changed;
      if (changed)
        rep.log.push_back(fmt::format("round {}: {} changed {} node{}", round, p.name, changed,
                                      changed == 1 ? "" : "s"));
      verify(g);
      if (opts.dump) {
        *opts.dump << fmt::format("== after {} (round {}) ==\n", p.name, round);
        if (changed)
          *opts.dump << g;
        else
          *opts.dump << "(unchanged)\n";
      }
    }
    rep.rounds = round;
    if (total == 0) break;
  }
  return rep;
}

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> counts;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(static_cast<NodeId>(i));
    if (!n.dead) ++counts[n.op_type()];
  }
  return counts;
}

}  // namespace braze::graph::passes
