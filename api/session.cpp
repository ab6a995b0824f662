// braze::Session: the engine's kernels on the GPU (runtime/gpu/session), or its graph on the
// CPU reference executor or in kernels generated for the CPU emulator.
#include <optional>

#include <fmt/format.h>

#include "api/engine_impl.h"
#include "api/pipeline.h"
#include "codegen/capabilities.h"
#include "runtime/emulator.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/reference_executor.h"

namespace braze {

struct Session::Impl {
  std::shared_ptr<const Engine::Impl> engine;
  Backend backend = Backend::Reference;
  SessionOptions options;
  std::unique_ptr<gpu::Session> gpu;          // Backend::Gpu
  std::optional<fusion::Plan> emulator_plan;  // Backend::Emulator
  std::vector<std::string> notes, run_notes;
  std::vector<TensorInfo> inputs, outputs;  // run_device checks against these
};

namespace {

std::string fallback_note(const std::string& reason) {
  return "runs on the CPU reference: " + reason;
}

}  // namespace

Session::Session(const Engine& engine, Backend backend, const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->engine = engine.impl_;
  impl_->options = options;
  const bool compiled = impl_->engine->compiled;
  if (backend == Backend::Auto)
    backend = gpu::gpu_available() && compiled ? Backend::Gpu : Backend::Reference;
  if (backend == Backend::Gpu && !compiled)
    throw UserError(
        "Backend::Gpu: the engine was compiled without kernels (CompileOptions::kernels false); "
        "it runs on Backend::Reference or Backend::Emulator");
  impl_->backend = backend;
  if (backend == Backend::Emulator) {  // kernels generated for the emulator's own target
    const graph::Graph& g = impl_->engine->engine->graph();
    runtime::EmulatorOptions eo;
    eo.tf32 = api::tf32_gemms(impl_->engine->info.precision);
    impl_->emulator_plan = codegen::plan_for(g, impl_->engine->fuse, runtime::emulator_target(eo));
  }
  if (backend != Backend::Gpu) return;
  if (!gpu::gpu_available())
    throw DeviceError(fmt::format("Backend::Gpu: no GPU ({})", gpu::gpu_unavailable_reason()));
  std::string note;
  std::shared_ptr<gpu::Engine> e = api::for_this_gpu(impl_->engine->engine, &note);
  if (!note.empty()) impl_->notes.push_back(note);
  for (const gpu::Step& s : e->steps())
    if (!s.kernel) impl_->notes.push_back(fallback_note(s.fallback_reason));
  impl_->gpu = std::make_unique<gpu::Session>(std::move(e));
  impl_->inputs = engine.inputs();
  impl_->outputs = engine.outputs();
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Backend Session::backend() const { return impl_->backend; }

const std::vector<std::string>& Session::notes() const {
  return impl_->backend == Backend::Emulator ? impl_->run_notes : impl_->notes;
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  if (impl_->gpu) {
    gpu::RunOptions ro;
    ro.poison = impl_->options.poison;
    ro.sync_each_kernel = impl_->options.sync_each_kernel;
    return impl_->gpu->run(inputs, ro);
  }
  const graph::Graph& g = impl_->engine->engine->graph();
  if (impl_->emulator_plan) {
    runtime::EmulatorOptions eo;
    eo.tf32 = api::tf32_gemms(impl_->engine->info.precision);
    std::vector<std::string> fallbacks;
    eo.fallbacks = &fallbacks;
    std::vector<Tensor> out = runtime::run_emulated(g, *impl_->emulator_plan, inputs, eo);
    impl_->run_notes.clear();
    for (const std::string& f : fallbacks) impl_->run_notes.push_back(fallback_note(f));
    return out;
  }
  return runtime::run_reference(g, inputs);
}

namespace {

std::vector<CUdeviceptr> device_addresses(const std::vector<DeviceTensor>& given,
                                          const std::vector<TensorInfo>& expected,
                                          const char* what) {
  if (given.size() != expected.size())
    throw UserError(fmt::format("run_device: {} {}s given, the engine has {}", given.size(), what,
                                expected.size()));
  std::vector<CUdeviceptr> ptrs;
  for (size_t i = 0; i < given.size(); ++i) {
    const DeviceTensor& t = given[i];
    const TensorInfo& e = expected[i];
    if (t.dtype != e.dtype || t.shape != e.shape)
      throw UserError(fmt::format("run_device: {} '{}' is {}{}, the engine takes {}{}", what,
                                  e.name, dtype_name(t.dtype), shape_str(t.shape),
                                  dtype_name(e.dtype), shape_str(e.shape)));
    if (!t.data && checked_numel(t.shape) > 0)
      throw UserError(fmt::format("run_device: {} '{}' has no device address", what, e.name));
    ptrs.push_back(reinterpret_cast<CUdeviceptr>(t.data));
  }
  return ptrs;
}

}  // namespace

void Session::run_device(const std::vector<DeviceTensor>& inputs,
                         const std::vector<DeviceTensor>& outputs, void* stream) {
  if (!impl_->gpu)
    throw UserError(fmt::format("run_device: the session runs on the CPU {} (Backend::Gpu needed)",
                                impl_->backend == Backend::Emulator ? "emulator" : "reference"));
  std::vector<CUdeviceptr> in = device_addresses(inputs, impl_->inputs, "input");
  std::vector<CUdeviceptr> out = device_addresses(outputs, impl_->outputs, "output");
  impl_->gpu->enqueue_device(in, out, static_cast<CUstream>(stream));
}

void Session::synchronize(void* stream) {
  if (impl_->gpu) impl_->gpu->check_flags(static_cast<CUstream>(stream));
}

}  // namespace braze
