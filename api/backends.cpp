#include "api/backends.h"

#include <braze/error.h>

#include "codegen/capabilities.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/emulator.h"
#include "runtime/reference_executor.h"

namespace braze::api {

namespace {

runtime::BackendFn gpu_backend(bool fuse) {
  return [fuse](const graph::Graph& g, const std::vector<Tensor>& in) {
    if (!gpu::gpu_available()) throw gpu::DeviceError("no GPU: " + gpu::gpu_unavailable_reason());
    gpu::EngineOptions opts = gpu::default_engine_options();
    opts.fuse = fuse;
    auto engine = gpu::Engine::build(g, codegen::plan_for(g, fuse, opts.target), opts);
    gpu::Session session(engine);
    gpu::RunOptions ro;
    ro.poison = true;
    runtime::BackendRun r;
    r.outputs = session.run(in, ro);
    for (const gpu::Step& s : engine->steps())
      if (!s.kernel) r.fallbacks.push_back(s.fallback_reason);
    return r;
  };
}

runtime::BackendFn emulator_backend(bool fuse) {  // the GPU path's kernels, run on the CPU
  return [fuse](const graph::Graph& g, const std::vector<Tensor>& in) {
    runtime::BackendRun r;
    runtime::EmulatorOptions eo;
    eo.fallbacks = &r.fallbacks;
    r.outputs =
        runtime::run_emulated(g, codegen::plan_for(g, fuse, runtime::emulator_target(eo)), in, eo);
    return r;
  };
}

}  // namespace

runtime::BackendFn make_backend(Backend backend, bool fuse) {
  switch (backend) {
    case Backend::Gpu:
      return gpu_backend(fuse);
    case Backend::Emulator:
      return emulator_backend(fuse);
    case Backend::Reference:
      return [](const graph::Graph& g, const std::vector<Tensor>& in) {
        return runtime::BackendRun{runtime::run_reference(g, in), {}};
      };
    case Backend::Auto:
      break;
  }
  throw InternalError("make_backend: Backend::Auto is resolved by the caller");
}

}  // namespace braze::api
