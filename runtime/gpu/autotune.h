// The autotuner. A kernel's tunables (vector width, threads, unroll; threads per row, rows
// per block, register caching …) form its schedule's search space. On the GPU every
// candidate is compiled, run once and checked against the first candidate's output, then
// timed in rounds that run every candidate once each (so that all of them share the GPU's
// clock and power states): warm-up rounds, CUDA events, the L2 flushed before each run, the
// median of repeats; a
// candidate that fails to compile or launch, or disagrees, scores as infinite. The winner
// is stored in a persistent tuning cache — JSON, keyed by the kernel's signature (its
// default source's name: ops, shapes, dtypes and the device helpers hashed in), the device name, the NVRTC
// version and, at --precision tf32, "tf32" — and a cache hit never re-times. Without a
// GPU, heuristics choose.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "runtime/gpu/engine.h"

namespace braze::gpu {

class TuningCache {
 public:
  explicit TuningCache(std::filesystem::path path);
  static std::filesystem::path default_path();  // <cache dir>/tuning.json
  // The tunables stored for `key`, if they are one of `space` (the kernel's candidates now):
  // an entry written by another version of braze, or edited by hand, is not used.
  std::optional<codegen::Tunables> find(const std::string& key,
                                        const std::vector<codegen::Tunables>& space) const;
  void put(const std::string& key, const codegen::Tunables& t, double median_us, size_t candidates);
  void save() const;  // temporary file, then rename
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::map<std::string, std::pair<codegen::Tunables, std::string>> entries_;  // key -> (tunables, note)
};

struct TuneReport {
  size_t kernels = 0;    // kernels with a search space
  size_t timed = 0;      // searched now
  size_t cached = 0;     // taken from the tuning cache
  double seconds = 0;
  std::vector<std::string> lines;  // per searched kernel: winner and speed-up, then each candidate's time
};

// Replaces each step's kernel by its best candidate (needs a GPU). The steps' kernels must
// not be compiled yet; compile_steps runs afterwards.
void autotune(const graph::Graph& g, std::vector<Step>& steps, const EngineOptions& opts, TuningCache& cache,
              TuneReport* report);

}  // namespace braze::gpu
