// braze::Session: the engine's kernels on the GPU (runtime/gpu/session) or its graph on the
// CPU reference executor.
#include <fmt/format.h>

#include "api/engine_impl.h"
#include "api/pipeline.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/reference_executor.h"

namespace braze {

struct Session::Impl {
  std::shared_ptr<const Engine::Impl> engine;
  Backend backend = Backend::Reference;
  std::unique_ptr<gpu::Session> gpu;  // Backend::Gpu
  std::vector<TensorInfo> inputs, outputs;  // run_device checks against these
};

Session::Session(const Engine& engine, Backend backend) : impl_(std::make_unique<Impl>()) {
  impl_->engine = engine.impl_;
  if (backend == Backend::Auto) backend = gpu::gpu_available() ? Backend::Gpu : Backend::Reference;
  impl_->backend = backend;
  if (backend != Backend::Gpu) return;
  if (!gpu::gpu_available())
    throw DeviceError(fmt::format("Backend::Gpu: no GPU ({})", gpu::gpu_unavailable_reason()));
  impl_->gpu = std::make_unique<gpu::Session>(api::for_this_gpu(impl_->engine->engine, nullptr));
  impl_->inputs = engine.inputs();
  impl_->outputs = engine.outputs();
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Backend Session::backend() const { return impl_->backend; }

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  if (impl_->gpu) return impl_->gpu->run(inputs);
  return runtime::run_reference(impl_->engine->engine->graph(), inputs);
}

namespace {

std::vector<CUdeviceptr> device_addresses(const std::vector<DeviceTensor>& given,
                                          const std::vector<TensorInfo>& expected, const char* what) {
  if (given.size() != expected.size())
    throw UserError(fmt::format("run_device: {} {}s given, the engine has {}", given.size(), what, expected.size()));
  std::vector<CUdeviceptr> ptrs;
  for (size_t i = 0; i < given.size(); ++i) {
    const DeviceTensor& t = given[i];
    const TensorInfo& e = expected[i];
    if (t.dtype != e.dtype || t.shape != e.shape)
      throw UserError(fmt::format("run_device: {} '{}' is {}{}, the engine takes {}{}", what, e.name,
                                  dtype_name(t.dtype), shape_str(t.shape), dtype_name(e.dtype), shape_str(e.shape)));
    if (!t.data && checked_numel(t.shape) > 0)
      throw UserError(fmt::format("run_device: {} '{}' has no device address", what, e.name));
    ptrs.push_back(reinterpret_cast<CUdeviceptr>(t.data));
  }
  return ptrs;
}

}  // namespace

void Session::run_device(const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs,
                         void* stream) {
  if (!impl_->gpu) throw UserError("run_device: the session runs on the CPU reference (Backend::Gpu needed)");
  std::vector<CUdeviceptr> in = device_addresses(inputs, impl_->inputs, "input");
  std::vector<CUdeviceptr> out = device_addresses(outputs, impl_->outputs, "output");
  impl_->gpu->enqueue_device(in, out, static_cast<CUstream>(stream));
}

void Session::synchronize(void* stream) {
  if (impl_->gpu) impl_->gpu->check_flags(static_cast<CUstream>(stream));
}

}  // namespace braze
