#include "cli/build_summary.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

namespace braze::cli {

void print_build_summary(const CompileReport& r, const std::string& arch, bool compiled) {
  std::cout << fmt::format("{} kernel{} for {} ({} group{} on the CPU reference)\n", r.kernels,
                           r.kernels == 1 ? "" : "s", arch, r.cpu_groups,
                           r.cpu_groups == 1 ? "" : "s");
  const double arena = static_cast<double>(r.arena_bytes),
               all = static_cast<double>(r.intermediate_bytes);
  std::cout << fmt::format(
      "memory: arena {} for {} of intermediates and inputs/outputs ({:.0f}% reused), weights {}\n",
      human_bytes(arena), human_bytes(all),
      // the arena can exceed the sum by alignment padding: 0%, not -0%
      all > 0 ? std::max(0.0, 100.0 * (1.0 - arena / all)) : 0.0,
      human_bytes(static_cast<double>(r.weights_bytes)));
  if (compiled)
    std::cout << fmt::format(
        "compile: {} distinct kernel{} ({} compiled, {} from the kernel cache), {:.2f} s\n",
        r.distinct, r.distinct == 1 ? "" : "s", r.compiled, r.cache_hits, r.compile_seconds);
  if (r.tuned || r.tuned_cached) {
    std::cout << fmt::format("tuning: {} kernels timed, {} from the tuning cache\n", r.tuned,
                             r.tuned_cached);
    for (const std::string& l : r.tuning) std::cout << "  " << l << "\n";
  }
}

}  // namespace braze::cli
