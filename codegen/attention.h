// The attention schedule (attention.cpp): one flash-attention kernel for an `attention`
// group (fusion/attention.h). Internal to codegen/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/gemm.h"
#include "codegen/kernel.h"
#include "fusion/attention.h"
#include "fusion/plan.h"

namespace braze::codegen {

// A group's attention as the kernel reads it: the two products' dims and operand views (Q
// and K of `qk`, V of `pv`), and the output's epilogue after P V.
struct AttentionDims {
  fusion::AttentionMatch match;
  GemmDims qk, pv;
  fusion::Group epi_group;  // P V and the layout ops after it
  GemmEpilogue epi;
  DType dtype = DType::Float16;
  int64_t d = 0, sq = 0, sk = 0, batches = 0;
  double dead = 0;  // a fully masked row's output: 0 (Where(IsNaN(P), 0, P)) or NaN
};
std::optional<AttentionDims> attention_dims(const graph::Graph& g, const fusion::Group& group,
                                            const Target& target, std::string* why_not);

// How the scores' chain masks them: "none" (nothing but scalars besides the scores),
// "causal" (a constant causal mask) or "additive" (any other input).
std::string attention_mask_kind(const graph::Graph& g, const AttentionDims& a);

// Empty when the schedule runs the group on `target`, else why not.
std::string attention_unsupported(const graph::Graph& g, const fusion::Group& group,
                                  const Target& target);
// Its search space ("flash" = 1, "bm", "bn": query rows and keys a tile; on sm_90a also the
// wgmma schedule's, "wg" = 1), heuristic default first.
std::vector<Tunables> attention_candidates(const graph::Graph& g, const fusion::Group& group,
                                           const Target& target);
std::optional<Kernel> attention_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const Target& target, std::string* why_not,
                                       const Tunables* tune = nullptr);

}  // namespace braze::codegen
