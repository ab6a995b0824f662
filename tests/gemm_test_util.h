// What the GEMM schedules' tests share: the single GEMM group of a graph, its output on the
// CPU emulator with a given candidate, and (GPU tests) an engine whose GEMM kernel is built
// with given tunables.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/emulator.h"
#include "runtime/gpu/engine.h"
#include "tests/test_util.h"

namespace braze::test {

struct GemmGroup {
  graph::Graph g;
  fusion::Group group;
};

// The graph's single GEMM group, fused.
inline GemmGroup gemm_group_of(const std::string& text) {
  GemmGroup r{graph_from_text(text), {}};
  graph::passes::run_pipeline(r.g);
  int found = 0;
  for (const fusion::Group& grp : fusion::plan_fused(r.g).groups)
    if (grp.kind == fusion::GroupKind::Gemm) {
      r.group = grp;
      ++found;
    }
  EXPECT_EQ(found, 1);
  return r;
}

// The single output of `g` on the CPU emulator (outputs poisoned) with every kernel built
// from candidate `candidate` of its schedule (-1: the defaults); expects every group to have
// a kernel.
inline Tensor emulate_with(const graph::Graph& g, const fusion::Plan& plan,
                           const std::vector<Tensor>& in, int candidate, const std::string& what) {
  runtime::EmulatorOptions eo;
  eo.candidate = candidate;
  std::vector<std::string> fallbacks;
  eo.fallbacks = &fallbacks;
  std::vector<Tensor> got = runtime::run_emulated(g, plan, in, eo);
  EXPECT_TRUE(fallbacks.empty()) << what << ": " << (fallbacks.empty() ? "" : fallbacks[0]);
  EXPECT_EQ(got.size(), 1u) << what;
  return got.empty() ? Tensor() : got[0];
}

// An engine for `base` (the graph's steps) with step `gemm`'s kernel generated with `tune`;
// null (and the reason in *why) when the schedule refuses it.
inline std::shared_ptr<const gpu::Engine> engine_with(const graph::Graph& g,
                                                      const std::vector<gpu::Step>& base,
                                                      size_t gemm, const codegen::Tunables& tune,
                                                      const gpu::EngineOptions& o,
                                                      std::string* why) {
  std::vector<gpu::Step> steps = base;
  codegen::GroupCode gc = codegen::generate(g, steps[gemm].group, o.target, &tune);
  if (!gc.kernel) {
    *why = gc.fallback_reason;
    return nullptr;
  }
  steps[gemm].kernel = std::move(gc.kernel);
  gpu::Engine::compile_steps(steps, o.arch, o, nullptr);
  return gpu::Engine::assemble(g, std::move(steps), o.arch);
}

}  // namespace braze::test
