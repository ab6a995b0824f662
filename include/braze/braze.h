// braze's public C++ API: compile an ONNX model into an Engine (import, graph passes,
// precision, fusion plan, kernels generated and compiled by NVRTC — no GPU needed), save and
// load engine files, and run an engine in a Session on the GPU or on the CPU reference.
//
//   braze::CompileOptions o;
//   o.precision = "fp16";
//   braze::Engine e = braze::Engine::compile("model.onnx", o);
//   braze::Session s(e);                        // the GPU when there is one
//   std::vector<braze::Tensor> out = s.run({braze::read_tensor("input_0.pb")});
//
// Engines are immutable and cheap to copy (copies share one engine); any number of threads
// may each run their own Session on one Engine. Errors are exceptions derived from
// braze::Error (braze/error.h): UserError (the model, an input or an option is at fault),
// DeviceError (the driver or NVRTC), InternalError (a bug in braze).
#pragma once

#include <braze/dtype.h>
#include <braze/error.h>
#include <braze/tensor.h>

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace braze {

struct CompileOptions {
  // Shapes of inputs with symbolic dims, by input name (dims not given default to 1).
  std::map<std::string, std::vector<int64_t>> shapes;
  // fp32 (exact), tf32 (float32 products on tensor cores), fp16 or bf16 (a float32 model
  // computed in half precision; its inputs and outputs stay float32).
  std::string precision = "fp32";
  bool fuse = true;       // false: one kernel per node
  std::string arch;       // "sm_90a" …; empty: this machine's GPU, else sm_90
  bool tune = false;      // time each kernel's candidates on the GPU (heuristics without one)
  bool use_cache = true;  // the kernel cache (~/.cache/braze)
  // false: the graph and its plan only, no kernel compiled (no NVRTC): the engine runs on
  // Backend::Reference and Backend::Emulator (Auto picks the reference) and cannot be saved.
  bool kernels = true;
  std::string tuning_cache;  // tune's cache file; empty: tuning.json in the kernel cache's folder
  // A kernel whose NVRTC compile runs longer is cancelled and the compile fails (UserError).
  double compile_limit_seconds = 600;
  // Intermediate forms written to `dump_to` after the compile script's steps: "graph" (as
  // imported), "passes" (after each graph pass), "precision" (the graph converted to fp16 /
  // bf16), "plan" (the fusion plan), "cuda" (each kernel's source), "tune" (each timed
  // kernel's candidates), "ptx" (each kernel's PTX), "memory" (each value's place in the
  // arena); "log" writes each step's line (CompileStep) as it ends.
  std::vector<std::string> dump;
  std::ostream* dump_to = nullptr;
};

// One step of the compile script (import, passes, precision, plan, codegen, tune, compile,
// assemble): what it took and what it made.
struct CompileStep {
  std::string name;
  double seconds = 0;
  std::string summary;  // "232 nodes, opset 18, from pytorch 2.11" …
};

// The names CompileOptions::dump takes, in the order of the steps that write them.
std::vector<std::string> compile_dump_names();

// What a compile made and what it took (Engine::report()).
struct CompileReport {
  std::vector<CompileStep> steps;      // the compile script's steps, in order
  size_t kernels = 0;                  // GPU kernels
  size_t cpu_groups = 0;               // groups run on the CPU reference (Engine::notes() says why)
  size_t distinct = 0;                 // distinct kernel sources (identical kernels compile once)
  size_t compiled = 0;                 // of those, compiled by NVRTC now
  size_t cache_hits = 0;               // of those, taken from the kernel cache
  size_t tuned = 0, tuned_cached = 0;  // kernels timed on the GPU; tunables from the tuning cache
  std::vector<std::string> tuning;     // per timed kernel: the winner, then each candidate
  uint64_t arena_bytes = 0;            // device memory for intermediates, inputs and outputs
  uint64_t intermediate_bytes = 0;     // their sum without reuse
  uint64_t weights_bytes = 0;
  double import_seconds = 0;  // import and graph passes
  double build_seconds = 0;   // precision, plan, codegen, NVRTC, tuning
  double codegen_seconds = 0, compile_seconds = 0, tune_seconds = 0;  // parts of build_seconds
  std::string model_hash;  // of the model file (xxh64, hex)
};

struct TensorInfo {
  std::string name;
  DType dtype;
  Shape shape;
};

class Engine {
 public:
  // UserError for a model braze cannot read or compile (what and where in the message).
  static Engine compile(const std::string& onnx_path, const CompileOptions& options = {});
  // A serialized ModelProto (external data, if any, read relative to `model_dir`).
  static Engine compile_bytes(const std::string& onnx_bytes, const CompileOptions& options = {},
                              const std::string& model_dir = "");
  // An engine file written by save() or `braze compile`.
  static Engine load(const std::string& engine_path);
  void save(const std::string& engine_path) const;

  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  std::string model_name() const;  // the ONNX model's file name ("" for bytes)
  std::string arch() const;        // what its kernels were compiled for
  std::string precision() const;   // CompileOptions::precision at compile
  size_t kernels() const;          // GPU kernels (groups on the CPU reference not counted)
  // Things the user should know from the compile (dims defaulted, groups on the CPU
  // reference, --tune without a GPU …), one line each.
  const std::vector<std::string>& notes() const;
  // An engine loaded from a file reports its sizes and kernel count only.
  const CompileReport& report() const;

  struct Impl;

 private:
  explicit Engine(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
  friend class Session;
  friend struct EngineAccess;  // the library's own functions (api/engine_impl.h)
};

enum class Backend {
  Auto,       // the GPU when there is one, else the CPU reference
  Gpu,        // the engine's kernels (recompiled once for this GPU's arch if it differs)
  Reference,  // the engine's graph on the CPU reference executor (slow; exact)
  Emulator,   // the engine's graph in kernels generated for the CPU emulator (slow; no GPU
              // needed): the GPU path's codegen and fusion, checked without a GPU
};

struct SessionOptions {
  bool poison =
      false;  // Gpu: device memory filled with NaN bytes before each run (unwritten outputs show)
  // Gpu: wait for each kernel before launching the next (slower), so that a failure is surely
  // the kernel named. Without it a kernel that faults is named too: every kernel notes its step
  // in host memory first, and the error names the one this session started last.
  bool sync_each_kernel = false;
};

// A tensor in caller-owned CUDA device memory (dense, row-major): for Session::run_device.
struct DeviceTensor {
  void* data = nullptr;  // a CUdeviceptr (cudaMalloc, PyTorch, CuPy …) in braze's CUDA context
  DType dtype = DType::Float32;
  Shape shape;
};

class Session {
 public:
  // DeviceError for Backend::Gpu without a GPU.
  explicit Session(const Engine& engine, Backend backend = Backend::Auto,
                   const SessionOptions& options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Host tensors in Engine::input_names() order; outputs in output_names() order. UserError
  // names the input whose count, dtype or shape is wrong.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  // The device path (Backend::Gpu only): reads the inputs from, and writes the outputs to,
  // caller-owned device memory (Engine::inputs() / outputs() order, dtypes and shapes as
  // those give them; UserError names the first that differs), enqueued on `stream` (a
  // CUstream / cudaStream_t; nullptr: the legacy default stream) without a host copy or a
  // wait: the kernels take 256-byte-aligned addresses in place (others are copied on the
  // device) and run as one CUDA graph, captured again only when the addresses change.
  // Returns before the work is done: synchronize(stream) waits, and reports a failed
  // run-time check (an out-of-range index) of any device run since the last one. Runs on
  // one Session share its memory: issue them on one stream, or order them yourself.
  void run_device(const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs,
                  void* stream = nullptr);
  void synchronize(void* stream = nullptr);
  Backend backend() const;  // Auto resolved
  // What to know about where it runs: kernels recompiled for this GPU's arch, groups run on
  // the CPU reference (Emulator: known after a run), one line each.
  const std::vector<std::string>& notes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A tensor from a .pb (TensorProto) or .npy file.
Tensor read_tensor(const std::string& path);
void write_npy(const std::string& path, const Tensor& tensor);
// Writes `contents` to `path` (created or truncated); UserError with the path and the reason
// when it cannot be written whole (a full disk, /dev/full).
void write_file(const std::string& path, const std::string& contents);

// Tensors from files (.pb / .npy) or folders of them (`prefix`N.pb, or *.npy), ordered to
// match `names`: by name where every file carries one the list knows, else by position.
// UserError on a count or name mismatch.
std::vector<Tensor> read_inputs(const std::vector<std::string>& paths,
                                const std::vector<std::string>& names,
                                const std::string& prefix = "input_");
// "input_ids:1x128,attention_mask:1x128" as {name: shape}; UserError naming what is malformed.
std::map<std::string, Shape> parse_shapes(const std::string& spec);
// The input names of an ONNX model (its graph inputs less its initializers).
std::vector<std::string> model_input_names(const std::string& onnx_path);

struct RandomOptions {
  int64_t int_min = 0, int_max = 9;        // integers from [int_min, int_max]
  double float_lo = -1.0, float_hi = 1.0;  // floats from [float_lo, float_hi)
};
// Seeded random values, never all zeros (bool: a fair coin). UserError for a range the
// dtype cannot hold, or an empty one.
Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed,
                     const RandomOptions& options = {});

// Whether `path` is an engine file (by its first bytes), not an ONNX model.
bool is_engine_file(const std::string& path);
// What `braze inspect` shows of a model, no kernel compiled: the graph after the passes (op
// counts, what folded away, every node with its values' dtypes and shapes) and the fusion
// plan at the options' precision, fuse and arch (kernels, values crossing them with their
// bytes, merges refused and why) — as text, JSON, Graphviz DOT and a standalone HTML page.
// CompileOptions::dump "graph" and "passes" are written to dump_to as the import goes.
struct InspectReport {
  std::vector<std::string> notes;  // from the import: dims defaulted …
  std::string text, json, dot, html;
  // The compile script's steps inspect runs (import to codegen), with their seconds (also
  // at the end of `text`, and "steps" in `json`).
  std::vector<CompileStep> steps;
};
InspectReport inspect(const std::string& onnx_path, const CompileOptions& options = {});

// "1.50 MiB": a byte count for people.
std::string format_bytes(double bytes);

// For `braze diff --per-kernel`: the engine's fused plan run on `inputs` keeping every value
// a kernel writes (on the GPU when there is one and the engine has kernels, else in kernels
// generated for the CPU emulator), each next to the reference executor's value, step by step.
struct KernelValue {
  std::string value;  // its name in the graph
  Tensor fused, reference;
};
struct KernelValues {
  std::string kernel;              // "(CPU reference)" for a group run on the CPU
  std::vector<std::string> nodes;  // "'name' (Op)" of the ONNX nodes inside it
  std::vector<KernelValue> outputs;
};
std::vector<KernelValues> kernel_values(const Engine& engine, const std::vector<Tensor>& inputs);

// Timing an engine on the GPU with an honest protocol (`braze bench`): warm-up runs, device
// events around each timed run, the median; each kernel timed alone too.
struct BenchOptions {
  int warmup = 20, iters = 200;
  bool cuda_graph = true;  // the whole plan as one CUDA graph (else launch by launch)
  bool flush_l2 = true;    // the L2 overwritten before each timed run (cold-cache timings)
  std::string profile;     // a Chrome-trace JSON of one run written here, when not empty
};
struct KernelBench {
  size_t step = 0;
  std::string name, kind,
      schedule;  // kind: gemm, attention, reduction …; schedule: wgmma, mma, simt, flash …
  std::vector<std::string> nodes;  // the ONNX nodes it computes
  double median_us = 0, min_us = 0;
  uint64_t bytes = 0;  // distinct buffers read and written, once each
  double flops = 0;    // of its matrix products
  double gbs = 0, tflops = 0;
  double roofline_pct =
      0;  // the floor (bytes at the measured copy bandwidth, or FLOPs at the peak) ÷ its time
  std::map<std::string, int> tunables;
  struct Gemm {
    int64_t batch = 1, m = 0, n = 0, k = 0;
    DType dtype = DType::Float32;
  };
  struct Attention {
    int64_t batch = 1, sq = 0, sk = 0, d = 0;
    DType dtype = DType::Float16;
    std::string mask;
  };
  std::optional<Gemm> gemm;            // a GEMM's product
  std::optional<Attention> attention;  // an attention's shape (mask: none, causal or additive)
};
struct BenchReport {
  std::string device, arch;
  int sms = 0;
  double copy_gbs = 0;  // device-to-device copy bandwidth measured in the same run
  bool cuda_graph = false;
  double min_us = 0, median_us = 0, p90_us = 0;  // end to end
  std::vector<KernelBench> kernels;
};
// UserError where there is no GPU. Inputs in Engine::input_names() order.
BenchReport benchmark(const Engine& engine, const std::vector<Tensor>& inputs,
                      const BenchOptions& options = {});
// What each step moves and computes, no GPU needed (name "(CPU reference)" for a group on the CPU).
struct KernelCost {
  std::string name;
  uint64_t bytes = 0;
  double flops = 0;
};
std::vector<KernelCost> kernel_costs(const Engine& engine);

// ONNX backend-test cases (folders holding model.onnx and test_data_set_N/): those in each of
// `roots` (a case, or a folder of cases searched one level down), sorted by name per root.
std::vector<std::string> find_conformance_cases(const std::vector<std::string>& roots);
struct ConformanceResult {
  std::string name;
  std::string status;                  // PASS, FAIL or SKIP
  std::string detail;                  // why it failed or was skipped; notes for a pass
  std::vector<std::string> fallbacks;  // groups run on the CPU reference instead of the backend
  double seconds = 0;
};
// One case on `backend` (Auto: the GPU when there is one, else the reference), its kernels
// fused unless `fuse` is false, against its expected outputs.
ConformanceResult run_conformance_case(const std::string& case_dir, Backend backend,
                                       bool fuse = true);

// What `braze doctor` reports: braze and NVRTC, the kernel cache, an NVRTC compile (no GPU
// needed), and with a GPU the device and its device-to-device copy bandwidth.
struct SystemReport {
  std::string version, nvrtc_version;
  std::string kernel_cache;  // the folder of compiled kernels
  size_t cached_kernels = 0;
  uint64_t cached_bytes = 0;
  std::string compiled_for;  // the arch NVRTC compiled the copy kernel for (sm_90 without a GPU)
  double compile_ms = 0;
  size_t cubin_bytes = 0;
  bool gpu = false;
  std::string gpu_unavailable_reason;  // without a GPU
  std::string gpu_name, gpu_arch;
  int driver_version = 0;  // 13000 for 13.0
  int sms = 0;
  uint64_t memory_bytes = 0, l2_bytes = 0;
  uint64_t copy_bytes = 0;  // the buffer copied (read and written once each a run)
  int copy_runs = 0;
  double copy_median_ms = 0, copy_gbs = 0;  // bytes read + written per second
  bool copy_correct = false;
};
SystemReport check_system(size_t copy_bytes = size_t{1} << 30, int copy_runs = 20);

bool gpu_available();
std::string gpu_name();                // "NVIDIA H200"; empty without a GPU
std::string gpu_unavailable_reason();  // why gpu_available() is false; empty when it is true
std::string version();

}  // namespace braze
