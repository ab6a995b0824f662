// Code generation: one kernel per fusion group, by a schedule per group kind (pointwise.cpp;
// reduction.cpp's search space and reduction_kernel.cpp; gemm.cpp choosing gemm_simt.cpp,
// gemm_tc.cpp or gemm_wgmma.cpp; attention.cpp and attention_wgmma.cpp), each op's part from
// its lowering (lowering.h, codegen/lower/). settle_plan splits a fused group no schedule
// takes; a group no schedule covers runs on the CPU reference executor instead, with the
// reason kept so inspect and run can say it.
#pragma once

#include <optional>
#include <string>

#include "codegen/kernel.h"
#include "fusion/plan.h"
#include "graph/ir.h"

namespace braze::codegen {

struct GroupCode {
  std::optional<Kernel> kernel;
  std::string fallback_reason;  // why there is no kernel
};

// The group's kernel by its schedule's heuristic defaults, or with `tune` (one of
// candidates()).
GroupCode generate(const graph::Graph& g, const fusion::Group& group, const Target& target,
                   const Tunables* tune = nullptr);
// One group of the plan as codegen settles it: its kernel or why there is none, and, for a
// group split out of a fused one no schedule could take, why it was split.
struct SettledGroup {
  fusion::Group group;
  GroupCode code;
  std::string split_note;
};
// Generates every group of `plan` by its schedule's defaults. A fused group no schedule takes
// becomes one group per node, each generated alone and noted with the reason — a decision of
// the compile, made here once, so the runtime only runs what it is given.
std::vector<SettledGroup> settle_plan(const graph::Graph& g, fusion::Plan plan,
                                      const Target& target);

// The schedule's search space for this group on `target`, heuristic default first; empty
// when the schedule has nothing to tune.
std::vector<Tunables> candidates(const graph::Graph& g, const fusion::Group& group,
                                 const Target& target = Target{});

// Device helper files a kernel includes besides the prelude and ops (a bit set).
enum DeviceHelpers : unsigned {
  kNoHelpers = 0,
  kReduceHelpers = 1,      // device/reduce.cuh: warp and block reductions
  kMmaHelpers = 2,         // device/mma.cuh: tensor-core GEMM main loop
  kSimtGemmHelpers = 4,    // device/simt_gemm.cuh: SIMT GEMM main loop
  kWgmmaHelpers = 8,       // device/wgmma.cuh: TMA, mbarriers, wgmma (sm_90a; after kMmaHelpers)
  kAttentionHelpers = 16,  // device/attention.cuh: flash attention (after kMmaHelpers)
  kAttentionWgmmaHelpers =
      32,                  // device/attention_wgmma.cuh: flash attention on wgmma (after all three)
  kSimtAsyncHelpers = 64,  // device/simt_async.cuh: SIMT stages by cp.async (after mma, simt)
};

// The whole translation unit: device helpers, then "// ---- generated ----", a comment
// naming the ONNX nodes, and `code` (which must define `extern "C" __global__ NAME`).
// Fills kernel.name (braze_<kind>_<ops>_<hash of code>) and kernel.source; `code` spells
// the kernel's name as the placeholder KERNEL_NAME. Every kernel gets the two progress
// parameters last (codegen::Kernel) and notes its step first (braze_note_step).
void finish_kernel(const graph::Graph& g, Kernel& kernel, const std::string& code,
                   unsigned helpers);

// Schedules.
// Each schedule takes its tunables (nullptr: its heuristic default) and lists its search
// space, heuristic default first.
std::optional<Kernel> pointwise_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const Target& target, std::string* why_not,
                                       const Tunables* tune = nullptr);
std::vector<Tunables> pointwise_candidates(const graph::Graph& g, const fusion::Group& group);
std::optional<Kernel> gemm_kernel(const graph::Graph& g, const fusion::Group& group,
                                  const Target& target, std::string* why_not,
                                  const Tunables* tune = nullptr);
// Tensor-core candidates first when that schedule applies on `target` (gemm_tc.cpp).
std::vector<Tunables> gemm_candidates(const graph::Graph& g, const fusion::Group& group,
                                      const Target& target = Target{});
std::optional<Kernel> reduction_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const Target& target, std::string* why_not,
                                       const Tunables* tune = nullptr);
// Candidates for rows of `len` elements; for a group (empty when it is element-wise).
// Candidates for rows of `len` elements read `vec` at a time, `staged_bytes` of group
// inputs per row (shared-memory staging), `rows` rows (0: unknown).
std::vector<Tunables> reduction_candidates_for(int64_t len, int vec, int64_t staged_bytes = 0,
                                               int64_t rows = 0);
std::vector<graph::ValueId> staged_inputs(const graph::Graph& g, const fusion::Group& group,
                                          const Shape& xshape);
std::vector<Tunables> reduction_candidates(const graph::Graph& g, const fusion::Group& group);

}  // namespace braze::codegen
