// Attention as the exporters write it, found in a graph (analysis only): the partitioner
// makes one `attention` group of a match, and codegen's flash schedule reads the same match
// back from the group's nodes.
//
//   Q ─┐                                          ┌─ IsNaN ─┐
//      MatMul ─ (element-wise chain) ─ Softmax ───┤         Where(·, 0, ·) ─┐
//   Kᵀ ┘        scale, Div, mask Add …   axis -1  └─────────┘               MatMul ─▶ O
//                                                                  V ───────┘
//
// The chain between the product and the Softmax is any run of single-consumer element-wise
// ops over the scores' shape whose other inputs are read by broadcast (a scalar scale, an
// additive or causal mask, a position bias); the Where over IsNaN that sdpa's export puts
// after the Softmax (fully masked rows give 0, not NaN) is taken when its fill is 0, and
// Casts of P between float types (a softmax computed in float32 and cast back) before P V:
// the kernel's P is float32 and rounded to the products' type for the mma either way.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fusion/lowerings.h"
#include "graph/ir.h"

namespace braze::fusion {

struct AttentionMatch {
  graph::NodeId qk = graph::kNoNode;  // scores = Q · Kᵀ (MatMul)
  std::vector<graph::NodeId> chain;   // element-wise ops from the scores to the Softmax, in order
  graph::NodeId softmax = graph::kNoNode;
  graph::NodeId isnan = graph::kNoNode;  // with `where`: fully masked rows give 0
  graph::NodeId where = graph::kNoNode;
  std::vector<graph::NodeId>
      casts;  // float Casts of P before the product (an upcast softmax's way back)
  graph::NodeId pv = graph::kNoNode;  // O = P · V (MatMul)
  // Every node above, in topological order.
  std::vector<graph::NodeId> nodes() const;
};

// The attention around `softmax`, or nullopt and why not. `users`: Graph::users(); `lower`
// says which ops of the chain before the softmax codegen computes per score.
std::optional<AttentionMatch> match_attention(const graph::Graph& g, graph::NodeId softmax,
                                              const std::vector<std::vector<graph::NodeId>>& users,
                                              const Lowerings& lower, std::string* why_not);

// True when `softmax` looks like part of an attention (a MatMul within a few ops before it,
// or consuming its result), so that a failed match is worth reporting.
bool near_attention(const graph::Graph& g, graph::NodeId softmax,
                    const std::vector<std::vector<graph::NodeId>>& users);

// The match inside a group's nodes (its Softmax's), or nullopt and why not.
std::optional<AttentionMatch> match_attention_in(
    const graph::Graph& g, const std::vector<graph::NodeId>& nodes,
    const std::vector<std::vector<graph::NodeId>>& users, const Lowerings& lower,
    std::string* why_not);

}  // namespace braze::fusion
