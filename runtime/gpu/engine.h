// Engine and Session, as TensorRT separates engine and execution context.
//
// An Engine is built from an optimised graph: a fusion plan, one generated kernel per
// group (or the CPU reference for a group no schedule covers, said aloud in the build
// report), the kernels compiled to CUBIN in parallel through the kernel cache, and a memory
// plan placing every non-constant value in one arena. Building needs no GPU. Once built it
// is immutable; load() puts modules and weights on the device once, so threads can share it.
// A Session holds what one thread needs to run it: the arena, a stream, error flags.
#pragma once

#include <cuda.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "fusion/plan.h"
#include "graph/ir.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/kernel_cache.h"
#include "runtime/gpu/nvrtc.h"

namespace braze::gpu {

struct EngineOptions {
  Arch arch;               // what NVRTC compiles for
  codegen::Target target;  // sizes grids
  bool fuse = false;       // fusion plan (issue #4) or one node per group
  bool use_cache = true;   // --no-cache turns it off
  std::filesystem::path cache_dir = default_cache_dir();
  bool want_ptx = false;                                       // keep PTX for --dump=ptx
  unsigned threads = 0;                                        // compile threads; 0 = all cores
  double compile_limit_seconds = kDefaultCompileLimitSeconds;  // per kernel (nvrtc_compile)
  bool tune = false;    // autotune on the GPU (runtime/gpu/autotune.h)
  bool compile = true;  // false: kernels generated, not compiled (the engine cannot run on a GPU)
  std::filesystem::path tuning_cache;  // empty: <cache dir>/tuning.json
  // Tests: every kernel with a search space uses its candidate number `candidate`
  // (the last one where it has fewer) instead of the heuristic default; -1: default.
  int candidate = -1;
};

// Prepares a loaded kernel for launch: the dynamic shared memory it asks for beyond 48 KB,
// and a shared-memory carveout that lets several of its blocks share an SM.
void configure_function(CUfunction fn, const codegen::Kernel& k);

// Options for a build on this machine: the device's arch and SM count when a GPU is
// present, else sm_90 / 132 SMs (an H100/H200), or `arch` when given.
EngineOptions default_engine_options(const std::string& arch = "");

struct Step {
  fusion::Group group;
  std::optional<codegen::Kernel> kernel;  // nullopt: the group runs on the CPU reference
  std::string fallback_reason;
  std::string split_note;  // set when codegen split a fused group into single nodes, and why
  std::string cubin;
  std::string ptx;
};

// Generates each group's kernel (no compilation): the steps an engine runs.
std::vector<Step> generate_steps(const graph::Graph& graph, fusion::Plan plan,
                                 const codegen::Target& target);

// Tests of the search space: each kernel that has candidates is generated again with its
// candidate number `candidate` (the last where it has fewer). Does nothing for -1.
void use_candidate(const graph::Graph& graph, std::vector<Step>& steps,
                   const codegen::Target& target, int candidate);

struct BuildReport {
  size_t tuned = 0;         // kernels searched on the GPU
  size_t tuned_cached = 0;  // kernels whose tunables came from the tuning cache
  std::vector<std::string>
      tuning;  // per searched kernel: the winner, then each candidate (indented)
  size_t kernels = 0;
  size_t fallbacks = 0;
  size_t distinct = 0;         // distinct kernel sources (identical kernels compile once)
  size_t compiled = 0;         // distinct kernels NVRTC compiled
  size_t cache_hits = 0;       // distinct kernels taken from the cache
  double compile_seconds = 0;  // NVRTC and the kernel cache
  double codegen_seconds = 0;  // generating the kernels' source
  double tune_seconds = 0;     // --tune on the GPU
};

// The autotuner over `steps` (runtime/gpu/autotune.h; needs a GPU) with the tuning cache
// `opts.tuning_cache` names; its counts and lines go to `report`.
void tune_steps(const graph::Graph& graph, std::vector<Step>& steps, const EngineOptions& opts,
                BuildReport* report);

// Adds the steps with a kernel to report.kernels, the others to report.fallbacks.
void count_steps(const std::vector<Step>& steps, BuildReport& report);

// Where a value lives during a run.
struct Slot {
  enum Where { None, Arena, Weights } where = None;
  size_t offset = 0;
  size_t bytes = 0;
};

class Engine {
 public:
  // The compile script's last steps from a given plan (tests; the whole script is
  // api/compile_script.h): generate_steps, use_candidate, tune_steps when opts.tune,
  // compile_steps when opts.compile, assemble.
  static std::shared_ptr<Engine> build(graph::Graph graph, fusion::Plan plan,
                                       const EngineOptions& opts, BuildReport* report = nullptr);
  // Rebuilds from stored steps (an engine file); kernels are not compiled again unless the
  // arch differs, which `recompile_for` requests.
  static std::shared_ptr<Engine> assemble(graph::Graph graph, std::vector<Step> steps,
                                          const Arch& arch);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const graph::Graph& graph() const { return graph_; }
  const std::vector<Step>& steps() const { return steps_; }
  const Arch& arch() const { return arch_; }
  const std::vector<Slot>& slots() const { return slots_; }
  size_t arena_bytes() const { return arena_bytes_; }
  size_t weights_bytes() const { return weights_bytes_; }
  size_t intermediate_bytes() const { return intermediate_bytes_; }  // sum without reuse

  // Device side (needs a GPU). Thread-safe; does the work once.
  void load() const;
  CUfunction function(size_t step) const { return functions_.at(step); }
  CUdeviceptr weights() const { return weights_.ptr(); }

  // Compiles (or takes from the cache) every kernel of `steps` for `arch`.
  static void compile_steps(std::vector<Step>& steps, const Arch& arch, const EngineOptions& opts,
                            BuildReport* report);

 private:
  Engine() = default;
  void place_values();

  graph::Graph graph_;
  Arch arch_;
  std::vector<Step> steps_;
  std::vector<Slot> slots_;  // by ValueId
  size_t arena_bytes_ = 0, weights_bytes_ = 0, intermediate_bytes_ = 0;

  mutable std::once_flag loaded_;
  mutable std::vector<CUmodule> modules_;
  mutable std::vector<CUfunction> functions_;
  mutable DeviceBuffer weights_;
};

struct RunOptions {
  bool poison = false;  // fill the arena with 0xFF bytes (NaN) first: unwritten outputs show
  // Copy every value a step writes to the host right after the step, before the arena
  // reuses its bytes (for diff --per-kernel); fetch() then returns them. Slow.
  bool capture = false;
  // Wait for each kernel before launching the next, and name the one that failed (a fault,
  // a trap, the pipeline watchdog). Otherwise a fault surfaces at the next synchronisation and
  // is traced through the progress word to the kernel the session started last.
  bool sync_each_kernel = false;
};

class Session {
 public:
  explicit Session(std::shared_ptr<const Engine> engine);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Inputs in graph-input order; returns the graph outputs. Throws UserError for bad inputs
  // or a failed run-time check (an out-of-range index), DeviceError for driver errors.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& opts = {});
  // A value's contents after the last run: graph outputs and inputs, constants, and with
  // RunOptions::capture every value a step wrote (the arena reuses intermediates' bytes).
  Tensor fetch(graph::ValueId v) const;

  // For benchmarks: put inputs on the device once, then enqueue the whole plan (as one
  // CUDA graph when `graph` and graphable()) or one step, on the session's stream.
  void upload(const std::vector<Tensor>& inputs);
  void enqueue(bool graph);
  void enqueue_step(size_t step);
  // No step runs on the CPU, and there are two launches or more: a CUDA graph of a single
  // launch only adds the graph's own launch latency (about 1 us a run on an H200).
  bool graphable() const;
  // Throws UserError for the first failed run-time check since the flags were last zeroed
  // (at the start of each run(), and after a failure is reported; a timed enqueue carries
  // no reset of its own).
  void check_flags();
  void check_flags(CUstream stream);  // after the work enqueued on `stream` has finished

  // The device path (braze::Session::run_device): reads the graph inputs from, and writes the
  // graph outputs to, caller-owned device memory (addresses in graph-input / graph-output
  // order, sizes checked by the caller), enqueued on the caller's `stream` without waiting.
  // A value is bound in place — its kernels take the caller's address — when the address is
  // 256-byte aligned and the value has a device slot of its own; otherwise it goes through its
  // arena slot by device-to-device copies. The CUDA graph is captured again, and the executable
  // graph updated, only when the addresses change. Run-time checks accumulate on the device
  // until check_flags(stream); runs on one Session must be ordered (one stream, or the caller
  // orders them), as they share its arena.
  void enqueue_device(const std::vector<CUdeviceptr>& inputs,
                      const std::vector<CUdeviceptr>& outputs, CUstream stream);
  CUstream stream() const { return stream_; }
  const Engine& engine() const { return *engine_; }

 private:
  void run_fallback(const Step& step);
  CUdeviceptr value_address(graph::ValueId v) const;  // the caller's address where bound
  bool all_kernels() const;                           // no step runs on the CPU
  void enqueue_step(size_t step, CUstream stream);
  void copy_output(size_t i, const std::vector<CUdeviceptr>& inputs, CUdeviceptr dst,
                   CUstream stream);
  void bind(const std::vector<CUdeviceptr>& inputs, const std::vector<CUdeviceptr>& outputs);
  void launch_graph(CUstream stream);  // captured (again) when the binding changed
  void wait_for_step(size_t step);     // RunOptions::sync_each_kernel
  // Called in a handler of CudaError: a kernel fault is thrown again as a DeviceError naming
  // the step this session's kernels last noted (progress_); any other error as it was.
  [[noreturn]] void rethrow_naming_fault(const CudaError& e) const;
  std::shared_ptr<const Engine> engine_;
  DeviceBuffer arena_;
  // The progress word every kernel of this session writes its step number into first
  // (codegen::Kernel); readable after a fault. Not passed (null) when BRAZE_STEP_NOTES=0.
  MappedHostBuffer progress_;
  CUdeviceptr progress_arg_ = 0;
  DeviceBuffer flags_;  // one int per kernel step with run-time checks
  std::vector<size_t> flag_index_;
  // Per step, the TMA descriptors its kernel takes (encoded once: the arena stays put).
  std::vector<std::vector<CUtensorMap>> tensor_maps_;
  std::vector<std::vector<CUdeviceptr>> tensor_map_ptrs_;  // the addresses they were encoded for
  // Per value, the caller's address it is bound to (0: its own slot); what graph_exec_ was
  // captured with.
  std::vector<CUdeviceptr> bound_, graph_bound_;
  CUstream stream_ = nullptr;
  CUgraphExec graph_exec_ = nullptr;
  // Values a CPU fallback produced that have no device slot (data-dependent shapes).
  std::map<graph::ValueId, Tensor> host_values_;
};

}  // namespace braze::gpu
