// The graph pass pipeline, in order, repeated until a round changes nothing:
//   1. fold_constants        — evaluates constant subgraphs, shapes first (so later passes
//                              see static shapes and constant shape arguments);
//   2. eliminate_identities  — drops Identity and inference Dropout;
//   3. fold_conv_affine      — inference BatchNormalization and per-channel Mul / Add by
//                              constants after a Conv folded into its weights and bias;
//   4. conv_as_matmul        — convolutions as products (Im2Col's windows times W;
//                              ungrouped 2-D / 3-D ones channels-last between Transposes);
//   5. sink_transposes       — those Transposes moved down through element-wise ops and
//                              cancelled against their inverses (channels-last plans);
//   6. split_to_slices       — each used output of a Split becomes a Slice (a layout op a
//                              consumer reads as a view);
//   7. fuse_gelu             — GELU written out (erf or tanh form) becomes one Gelu;
//   8. fuse_softmax          — softmax written out (exp(x - max) / sum) becomes one Softmax;
//   9. hoist_matmul_scales   — scalar factors of a product's operands move after it;
//  10. merge_sibling_matmuls — products of one activation with constant weights as one;
//  11. flatten_matmul_rows   — a batched MatMul against one matrix is one product of all rows;
//  12. store_weights_k_major — half-precision weights of products stored [n, k];
//  13. store_depthwise_weights_channels_last — a channels-last depthwise convolution's W
//                              stored [taps…, 1, C] behind a Transpose;
//  14. eliminate_common_subexpressions — merges equal constants and equal nodes;
//  15. eliminate_dead_code   — removes what the others left unused, and compacts.
// Folding first exposes identities, sizes and duplicates; the rewrites (3-13) need constant
// operands; DCE last cleans up after all of them. (pad_narrow_windows, graph/passes/
// narrow_windows.h, is not in the pipeline: measured slower, nothing runs it but its tests.)
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::graph::passes {

struct PipelineOptions {
  std::ostream* dump = nullptr;  // --dump=passes: the graph after each pass
  int max_rounds = 16;
};

struct PipelineReport {
  std::vector<std::string> log;  // "round 1: fold_constants changed 12 nodes" …
  int rounds = 0;
};

PipelineReport run_pipeline(Graph& g, const PipelineOptions& opts = {});

// Live nodes by op type, for reports ("what folded away").
std::map<std::string, int> op_counts(const Graph& g);

}  // namespace braze::graph::passes
