// The CPU emulator: runs a graph the way the GPU engine does — the same plan and the same
// generated kernels — but compiles each kernel with the host C++ compiler (against
// runtime/emulator_shim.h) and runs it on the CPU. Groups without a kernel run on the
// reference executor, as the GPU engine's fallback does. It lets tests and CI check
// generated code on machines without a GPU ("--backend emulator"); it is slow.
#pragma once

#include <braze/tensor.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "fusion/plan.h"
#include "graph/ir.h"
#include "runtime/gpu/engine.h"

namespace braze::runtime {

struct EmulatorOptions {
  std::filesystem::path cache_dir;  // compiled kernels (.so); default: the kernel cache's folder
  bool poison = true;               // outputs start as 0xFF bytes, so unwritten ones show
  std::vector<std::string>* fallbacks = nullptr;  // receives the groups run on the reference
  std::vector<Tensor>* values = nullptr;          // receives every value computed (by ValueId)
  // For tests of the search space: build each kernel with candidate `candidate` of its
  // schedule (clamped to the last one) instead of the heuristic default; -1: the default.
  int candidate = -1;
  // Float32 GEMMs on the tensor-core schedule with tf32 operands (--precision tf32;
  // codegen::Target::tf32).
  bool tf32 = false;
};

// The target the emulator generates kernels for (sm_90 without clusters, tf32 as asked).
codegen::Target emulator_target(const EmulatorOptions& opts);

std::vector<Tensor> run_emulated(const graph::Graph& g, const fusion::Plan& plan,
                                 const std::vector<Tensor>& inputs,
                                 const EmulatorOptions& opts = {});

// The same for steps already generated for emulator_target(opts) (the compile script's
// codegen step); opts.candidate is not applied again.
std::vector<Tensor> run_emulated_steps(const graph::Graph& g, const std::vector<gpu::Step>& steps,
                                       const std::vector<Tensor>& inputs,
                                       const EmulatorOptions& opts = {});

// The launch contract on its own, for the emulator's tests: compiles `kernel_source` (CUDA in
// the dialect runtime/emulator_shim.h supports, defining `__global__ void name(float* out)`)
// with the host compiler and runs it on grid × block threads, `out` a host buffer.
void run_emulated_kernel(const std::string& kernel_source, const std::string& name, float* out,
                         const std::array<unsigned, 3>& grid, const std::array<unsigned, 3>& block,
                         const std::filesystem::path& cache_dir = {});

}  // namespace braze::runtime
