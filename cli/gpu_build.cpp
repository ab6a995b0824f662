#include "cli/gpu_build.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>


namespace braze::cli {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}

BuiltEngine build_engine(const graph::Graph& g, const BuildOptions& build, const ModelOptions& model) {
  api::BuildRequest r;
  r.arch = build.arch;
  r.precision = build.precision;
  r.fuse = !build.no_fuse;
  r.use_cache = !build.no_cache;
  r.tune = build.tune;
  r.tuning_cache = build.tuning_cache;
  r.want_ptx = model.dumps("ptx");
  api::Built built = api::build(g, r);
  for (const std::string& n : built.notes) std::cerr << "note: " << n << "\n";
  BuiltEngine out{std::move(built.engine), std::move(built.report)};
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
