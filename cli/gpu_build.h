// Building GPU engines for commands: options, a summary of the build, and --dump=cuda,ptx.
#pragma once

#include <memory>

#include "cli/build_summary.h"
#include "cli/model_loading.h"
#include "runtime/gpu/engine.h"

namespace braze::cli {

struct BuiltEngine {
  std::shared_ptr<gpu::Engine> engine;
  gpu::BuildReport report;
};

// Plans, generates and compiles the graph (no GPU needed); prints the dumps asked for.
BuiltEngine build_engine(const graph::Graph& g, const BuildOptions& build, const ModelOptions& model);

// The build summary (cli/build_summary.h) of an internal engine.
void print_build_summary(const gpu::Engine& e, const gpu::BuildReport* report);
// A graph's inputs as the public API describes them (UserError for one without a static shape).
std::vector<TensorInfo> input_infos(const graph::Graph& g);

// Each group run on the CPU reference, with the reason (to stderr).
void print_fallbacks(const gpu::Engine& e);

}  // namespace braze::cli
