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
};

Session::Session(const Engine& engine, Backend backend) : impl_(std::make_unique<Impl>()) {
  impl_->engine = engine.impl_;
  if (backend == Backend::Auto) backend = gpu::gpu_available() ? Backend::Gpu : Backend::Reference;
  impl_->backend = backend;
  if (backend != Backend::Gpu) return;
  if (!gpu::gpu_available())
    throw DeviceError(fmt::format("Backend::Gpu: no GPU ({})", gpu::gpu_unavailable_reason()));
  impl_->gpu = std::make_unique<gpu::Session>(api::for_this_gpu(impl_->engine->engine, nullptr));
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Backend Session::backend() const { return impl_->backend; }

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  if (impl_->gpu) return impl_->gpu->run(inputs);
  return runtime::run_reference(impl_->engine->engine->graph(), inputs);
}

}  // namespace braze
