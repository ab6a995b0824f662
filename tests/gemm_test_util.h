// What the GEMM schedules' tests share: the single GEMM group of a graph, its output on the
// CPU emulator with a given candidate, and (GPU tests) an engine whose GEMM kernel is built
// with given tunables, and a printout of each candidate's throughput.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "codegen/lowering.h"
#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/emulator.h"
#include "runtime/gpu/bench.h"
#include "runtime/gpu/engine.h"
#include "runtime/gpu/nvrtc.h"
#include "runtime/inputs.h"
#include "tests/test_util.h"

namespace braze::test {

// An H200 as codegen sees it: sm_90a (wgmma, TMA) with 132 SMs, no GPU needed.
inline codegen::Target h200a() {
  codegen::Target t{90, 132};
  t.sm90a = true;
  return t;
}

struct GemmGroup {
  graph::Graph g;
  fusion::Group group;
};

// The graph's single GEMM group, fused.
inline GemmGroup gemm_group_of(const std::string& text) {
  GemmGroup r{graph_from_text(text), {}};
  graph::passes::run_pipeline(r.g);
  int found = 0;
  for (const fusion::Group& grp : fusion::plan_fused(r.g, codegen::kernel_lowerings()).groups)
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

// The index of the last GEMM step of `steps`, or steps.size() when there is none.
inline size_t gemm_step(const std::vector<gpu::Step>& steps) {
  size_t gemm = steps.size();
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].group.kind == fusion::GroupKind::Gemm) gemm = i;
  return gemm;
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

// The single output of a run of `engine` on `in`, the arena poisoned first.
inline Tensor run_poisoned(std::shared_ptr<const gpu::Engine> engine,
                           const std::vector<Tensor>& in) {
  gpu::Session session(std::move(engine));
  gpu::RunOptions ro;
  ro.poison = true;
  std::vector<Tensor> got = session.run(in, ro);
  EXPECT_EQ(got.size(), 1u);
  return got.empty() ? Tensor() : got[0];
}

// The group's kernel with candidate `t` (nullptr: the default) on sm_90a: wgmma, compiled by
// NVRTC without local memory. Returns its source (empty where it failed).
inline std::string expect_wgmma_compiles(const GemmGroup& gg, const codegen::Tunables* t,
                                         const std::string& what) {
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, h200a(), t);
  EXPECT_TRUE(gc.kernel.has_value()) << what << ": " << gc.fallback_reason;
  if (!gc.kernel) return "";
  EXPECT_EQ(codegen::schedule_name(*gc.kernel), "wgmma") << what;
  gpu::Compiled comp =
      gpu::nvrtc_compile(gc.kernel->source, gc.kernel->name, gpu::Arch::parse("sm_90a"), true);
  EXPECT_FALSE(comp.cubin.empty()) << what;
  EXPECT_NE(comp.ptx.find("wgmma.mma_async"), std::string::npos) << what;
  EXPECT_EQ(comp.ptx.find("ld.local"), std::string::npos) << what;
  EXPECT_EQ(comp.ptx.find("st.local"), std::string::npos) << what;
  return gc.kernel->source;
}

// Step `gi` of `base` built with every candidate of its group's search space on the GPU (those
// the schedule refuses skipped), each run with the arena poisoned and compared with `want`.
inline void expect_every_candidate_matches(const graph::Graph& g,
                                           const std::vector<gpu::Step>& base, size_t gi,
                                           const gpu::EngineOptions& o,
                                           const std::vector<Tensor>& in, const Tensor& want,
                                           const std::string& what) {
  for (const codegen::Tunables& t : codegen::candidates(g, base[gi].group, o.target)) {
    std::string why, tun;
    for (const auto& [k, v] : t) tun += fmt::format("{}={} ", k, v);
    auto engine = engine_with(g, base, gi, t, o, &why);
    if (!engine) continue;  // a candidate this product's shape refuses
    const Tensor got = run_poisoned(engine, in);
    EXPECT_TRUE(tensors_close(got, want)) << what << ": " << tun;
  }
}

// The plan on the emulator with its default candidates and with the last one of the largest
// search space (every group clamps it to its own), each compared with `want`.
inline void expect_emulated_matches(const graph::Graph& g, const fusion::Plan& plan,
                                    const codegen::Target& target, const std::vector<Tensor>& in,
                                    const Tensor& want, const std::string& what) {
  size_t most = 0;
  for (const fusion::Group& grp : plan.groups)
    most = std::max(most, codegen::candidates(g, grp, target).size());
  for (int cand : {-1, static_cast<int>(most) - 1}) {
    const std::string at = fmt::format("{} candidate {}", what, cand);
    const Tensor got = emulate_with(g, plan, in, cand, at);
    ASSERT_TRUE(got.defined());
    EXPECT_TRUE(tensors_close(got, want)) << at;
  }
}

// Not a check (the DISABLED_ throughput tests): builds the single-GEMM graph `text` with each
// of its first `most` candidates and prints the median time and TFLOP/s of `iters` runs,
// the default marked.
inline void print_candidate_throughput(const std::string& text, const gpu::EngineOptions& o,
                                       size_t most, int iters) {
  graph::Graph g = graph_from_text(text);
  graph::passes::run_pipeline(g);
  const std::vector<Tensor> in = random_inputs(g, 7);
  const std::vector<gpu::Step> base =
      gpu::generate_steps(g, fusion::plan_fused(g, codegen::kernel_lowerings()), o.target);
  ASSERT_EQ(base.size(), 1u);
  std::vector<codegen::Tunables> cands = codegen::candidates(g, base[0].group, o.target);
  std::string shape;
  for (int64_t d : g.value(g.outputs()[0].value).shape)
    shape += (shape.empty() ? "" : "x") + std::to_string(d);
  for (size_t ci = 0; ci < cands.size() && ci < most; ++ci) {
    std::string why;
    auto engine = engine_with(g, base, 0, cands[ci], o, &why);
    ASSERT_TRUE(engine) << why;
    gpu::Session session(engine);
    gpu::BenchOptions bo;
    bo.warmup = 3;
    bo.iters = iters;
    gpu::BenchResult r = gpu::benchmark(session, in, bo);
    const double flops = gpu::step_flops(g, engine->steps()[0]);
    std::string tun;
    for (const auto& [key, v] : cands[ci]) tun += fmt::format("{}={} ", key, v);
    std::printf("%s %s %s%-48s %9.1f us  %6.1f TFLOP/s\n", g.value(g.inputs()[0]).name.c_str(),
                shape.c_str(), ci == 0 ? "(default) " : "", tun.c_str(), r.latency_us.median,
                flops / r.latency_us.median * 1e-6);
  }
}

}  // namespace braze::test
