#include "cli/gpu_build.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "graph/passes/precision.h"
#include "runtime/gpu/cuda_driver.h"

namespace braze::cli {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}

BuiltEngine build_engine(const graph::Graph& g, const BuildOptions& build, const ModelOptions& model) {
  gpu::EngineOptions opts = gpu::default_engine_options(build.arch);
  opts.use_cache = !build.no_cache;
  opts.fuse = !build.no_fuse;
  opts.want_ptx = model.dumps("ptx");
  opts.tuning_cache = build.tuning_cache;
  opts.tune = build.tune;
  opts.target.tf32 = tf32_gemms(build.precision);
  if (opts.tune && !gpu::gpu_available()) {
    std::cerr << "note: --tune needs a GPU (" << gpu::gpu_unavailable_reason() << "): heuristics choose\n";
    opts.tune = false;
  }
  BuiltEngine out;
  if (graph::passes::precision_dtype(build.precision) != DType::Float32) {
    graph::Graph low = at_precision(g, build.precision);
    out.engine = gpu::Engine::build(low, codegen::plan_for(low, opts.fuse, opts.target), opts, &out.report);
  } else {
    out.engine = gpu::Engine::build(g, codegen::plan_for(g, opts.fuse, opts.target), opts, &out.report);
  }
  for (const gpu::Step& s : out.engine->steps()) {
    if (!s.kernel) continue;
    if (model.dumps("cuda")) {
      size_t p = s.kernel->source.find("// ---- generated ----");
      std::cout << "== cuda " << s.kernel->name << " ==\n"
                << (p == std::string::npos ? s.kernel->source : s.kernel->source.substr(p)) << "\n";
    }
    if (model.dumps("ptx")) std::cout << "== ptx " << s.kernel->name << " ==\n" << s.ptx << "\n";
  }
  return out;
}

void print_build_summary(const gpu::Engine& e, const gpu::BuildReport* r) {
  size_t kernels = 0, fallbacks = 0;
  for (const gpu::Step& s : e.steps()) (s.kernel ? kernels : fallbacks)++;
  std::cout << fmt::format("{} kernel{} for {} ({} group{} on the CPU reference)\n", kernels, kernels == 1 ? "" : "s",
                           e.arch().name(), fallbacks, fallbacks == 1 ? "" : "s");
  std::cout << fmt::format("memory: arena {} for {} of intermediates and inputs/outputs ({:.0f}% reused), weights {}\n",
                           human_bytes(static_cast<double>(e.arena_bytes())),
                           human_bytes(static_cast<double>(e.intermediate_bytes())),
                           // the arena can exceed the sum by alignment padding: 0%, not -0%
                           e.intermediate_bytes() ? std::max(0.0, 100.0 * (1.0 - static_cast<double>(e.arena_bytes()) /
                                                                                    static_cast<double>(e.intermediate_bytes())))
                                                  : 0.0,
                           human_bytes(static_cast<double>(e.weights_bytes())));
  if (r)
    std::cout << fmt::format("compile: {} distinct kernel{} ({} compiled, {} from the kernel cache), {:.2f} s\n",
                             r->distinct, r->distinct == 1 ? "" : "s", r->compiled, r->cache_hits, r->compile_seconds);
  if (r && (r->tuned || r->tuned_cached)) {
    std::cout << fmt::format("tuning: {} kernels timed, {} from the tuning cache\n", r->tuned, r->tuned_cached);
    for (const std::string& l : r->tuning) std::cout << "  " << l << "\n";
  }
}

void print_fallbacks(const gpu::Engine& e) {
  for (const gpu::Step& s : e.steps())
    if (!s.kernel) std::cerr << "note: runs on the CPU reference: " << s.fallback_reason << "\n";
}

}  // namespace braze::cli
