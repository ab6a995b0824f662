// Building GPU engines for commands: options, a summary of the build, and --dump=cuda,ptx.
#pragma once

#include <memory>

#include "cli/model_options.h"
#include "runtime/gpu/engine.h"

namespace braze::cli {

struct BuiltEngine {
  std::shared_ptr<gpu::Engine> engine;
  gpu::BuildReport report;
};

// Plans, generates and compiles the graph (no GPU needed); prints the dumps asked for.
BuiltEngine build_engine(const graph::Graph& g, const BuildOptions& build, const ModelOptions& model);

// "23 kernels (2 on the CPU reference), arena 1.2 MiB for 3.4 MiB of intermediates …"
void print_build_summary(const gpu::Engine& e, const gpu::BuildReport* report);
// Each group run on the CPU reference, with the reason (to stderr).
void print_fallbacks(const gpu::Engine& e);

std::string human_bytes(double bytes);

}  // namespace braze::cli
