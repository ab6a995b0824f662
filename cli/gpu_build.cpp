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
  if (model.dumps("cuda") || model.dumps("ptx"))
    api::write_kernel_dumps(*out.engine, model.dumps("cuda"), model.dumps("ptx"), std::cout);
  return out;
}

void print_build_summary(const CompileReport& r, const std::string& arch, bool compiled) {
  std::cout << fmt::format("{} kernel{} for {} ({} group{} on the CPU reference)\n", r.kernels, r.kernels == 1 ? "" : "s",
                           arch, r.cpu_groups, r.cpu_groups == 1 ? "" : "s");
  const double arena = static_cast<double>(r.arena_bytes), all = static_cast<double>(r.intermediate_bytes);
  std::cout << fmt::format("memory: arena {} for {} of intermediates and inputs/outputs ({:.0f}% reused), weights {}\n",
                           human_bytes(arena), human_bytes(all),
                           // the arena can exceed the sum by alignment padding: 0%, not -0%
                           all > 0 ? std::max(0.0, 100.0 * (1.0 - arena / all)) : 0.0,
                           human_bytes(static_cast<double>(r.weights_bytes)));
  if (compiled)
    std::cout << fmt::format("compile: {} distinct kernel{} ({} compiled, {} from the kernel cache), {:.2f} s\n",
                             r.distinct, r.distinct == 1 ? "" : "s", r.compiled, r.cache_hits, r.compile_seconds);
  if (r.tuned || r.tuned_cached) {
    std::cout << fmt::format("tuning: {} kernels timed, {} from the tuning cache\n", r.tuned, r.tuned_cached);
    for (const std::string& l : r.tuning) std::cout << "  " << l << "\n";
  }
}

void print_build_summary(const gpu::Engine& e, const gpu::BuildReport* r) {
  print_build_summary(api::report_of(e, r), e.arch().name(), r != nullptr);
}

void print_fallbacks(const gpu::Engine& e) {
  for (const gpu::Step& s : e.steps())
    if (!s.kernel) std::cerr << "note: runs on the CPU reference: " << s.fallback_reason << "\n";
}

}  // namespace braze::cli
