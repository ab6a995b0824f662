// The autotuner. A kernel's tunables (vector width, threads, unroll; threads per row, rows
// per block, register caching …) form its schedule's search space. On the GPU every
// candidate is compiled, run once and checked against the first candidate's output, then
// timed in rounds that run every candidate once each (so that all of them share the GPU's
// clock and power states): warm-up rounds, CUDA events, the L2 flushed before each run, the
// median of repeats; a
// candidate that fails to compile or launch, or disagrees, scores as infinite. The winner
// is stored in the persistent tuning cache (tuning_cache.h). Without a GPU, heuristics choose.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "runtime/gpu/engine.h"
#include "runtime/gpu/tuning_cache.h"

namespace braze::gpu {

struct TuneReport {
  size_t kernels = 0;  // kernels with a search space
  size_t timed = 0;    // searched now
  size_t cached = 0;   // taken from the tuning cache
  double seconds = 0;
  std::vector<std::string>
      lines;  // per searched kernel: winner and speed-up, then each candidate's time
};

// Replaces each step's kernel by its best candidate (needs a GPU). The steps' kernels must
// not be compiled yet; compile_steps runs afterwards.
void autotune(const graph::Graph& g, std::vector<Step>& steps, const EngineOptions& opts,
              TuningCache& cache, TuneReport* report);

}  // namespace braze::gpu
