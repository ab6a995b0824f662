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

// "23 kernels for sm_90 (2 groups on the CPU reference)", memory, compile and tuning lines;
// the compile line only for a report of a compile (`compiled` false: from a file).
void print_build_summary(const CompileReport& r, const std::string& arch, bool compiled = true);
void print_build_summary(const gpu::Engine& e, const gpu::BuildReport* report);
// Each group run on the CPU reference, with the reason (to stderr).
void print_fallbacks(const gpu::Engine& e);

std::string human_bytes(double bytes);

}  // namespace braze::cli
