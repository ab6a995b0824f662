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
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace braze {

struct CompileOptions {
  // Shapes of inputs with symbolic dims, by input name (dims not given default to 1).
  std::map<std::string, std::vector<int64_t>> shapes;
  // fp32 (exact), tf32 (float32 products on tensor cores), fp16 or bf16 (a float32 model
  // computed in half precision; its inputs and outputs stay float32).
  std::string precision = "fp32";
  bool fuse = true;   // false: one kernel per node
  std::string arch;   // "sm_90a" …; empty: this machine's GPU, else sm_90
  bool tune = false;  // time each kernel's candidates on the GPU (heuristics without one)
  bool use_cache = true;  // the kernel cache (~/.cache/braze)
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
  std::string arch() const;       // what its kernels were compiled for
  std::string precision() const;  // CompileOptions::precision at compile
  size_t kernels() const;         // GPU kernels (groups on the CPU reference not counted)
  // Things the user should know from the compile (dims defaulted, groups on the CPU
  // reference, --tune without a GPU …), one line each.
  const std::vector<std::string>& notes() const;

  struct Impl;

 private:
  explicit Engine(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
  friend class Session;
};

enum class Backend {
  Auto,       // the GPU when there is one, else the CPU reference
  Gpu,        // the engine's kernels (recompiled once for this GPU's arch if it differs)
  Reference,  // the engine's graph on the CPU reference executor (slow; exact)
};

class Session {
 public:
  // DeviceError for Backend::Gpu without a GPU.
  explicit Session(const Engine& engine, Backend backend = Backend::Auto);
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Host tensors in Engine::input_names() order; outputs in output_names() order. UserError
  // names the input whose count, dtype or shape is wrong.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  Backend backend() const;  // Auto resolved

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A tensor from a .pb (TensorProto) or .npy file.
Tensor read_tensor(const std::string& path);
void write_npy(const std::string& path, const Tensor& tensor);

bool gpu_available();
std::string version();

}  // namespace braze
