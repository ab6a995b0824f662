// Timing on the GPU with an honest protocol: warm-up first, device events around the timed
// region, many repeats, the median (and min, p90) reported. Used by `braze bench`, `braze
// doctor` and the autotuner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/gpu/engine.h"

namespace braze::gpu {

// Device-to-device copy bandwidth (bytes read + written per second), measured with a
// vectorised copy kernel over `bytes` (median of `iters` after warm-up).
struct CopyBandwidth {
  double gbs = 0;
  double median_ms = 0;
  bool correct = false;
};
// `kernel`: the copy kernel already compiled for this GPU (compile_copy_kernel), else compiled
// here.
CopyBandwidth measure_copy_bandwidth(size_t bytes = size_t{1} << 30, int iters = 20,
                                     const Compiled* kernel = nullptr);
// The copy kernel compiled for `arch` (NVRTC; no GPU needed): `braze doctor`'s NVRTC check.
Compiled compile_copy_kernel(const Arch& arch);

// Peak arithmetic rates of the device's architecture (datasheet figures, TFLOP/s), for the
// roofline: SIMT float32, tensor-core float16/bfloat16, and tensor-core tf32 (0 where the
// architecture has none).
struct PeakRates {
  double fp32 = 0;
  double fp16_tensor = 0;
  double tf32_tensor = 0;
};
PeakRates peak_rates(const Arch& arch);

struct Stats {
  double min = 0, median = 0, p90 = 0;
};
Stats stats_of(std::vector<double> samples);

struct BenchOptions {
  int warmup = 20;
  int iters = 200;
  bool cuda_graph = true;
  bool flush_l2 = true;  // cold-cache timings: the L2 overwritten before each timed run
};

struct KernelTiming {
  size_t step;
  Stats us;
  uint64_t bytes = 0;  // distinct buffers read and written, once each
  double flops = 0;
};

struct BenchResult {
  Stats latency_us;  // the whole plan, end to end on the device
  bool used_graph = false;
  std::vector<KernelTiming> kernels;
};

// Bytes a step's kernel moves at least (each distinct buffer once; of an input read only by
// element-wise ops and index maps, no more than their outputs' elements: a Gather's rows) and
// FLOPs it does (matrix products; element-wise work is counted as memory-bound).
uint64_t step_bytes(const graph::Graph& g, const Step& s);
double step_flops(const graph::Graph& g, const Step& s);

// Uploads `inputs` once, then times the plan (and each kernel alone).
BenchResult benchmark(Session& session, const std::vector<Tensor>& inputs,
                      const BenchOptions& opts);

// One run with an event before and after each kernel, as a Chrome trace (chrome://tracing,
// Perfetto) written to `path`.
void write_profile(Session& session, const std::string& path);

}  // namespace braze::gpu
