#include "api/backends.h"

#include <braze/error.h>

#include <fmt/format.h>

#include "api/pipeline.h"
#include "codegen/capabilities.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/emulator.h"
#include "runtime/reference_executor.h"

namespace braze::api {

namespace {

runtime::BackendFn gpu_backend(bool fuse, const std::string& precision) {
  return [fuse, precision](const graph::Graph& model, const std::vector<Tensor>& in) {
    if (!gpu::gpu_available()) throw gpu::DeviceError("no GPU: " + gpu::gpu_unavailable_reason());
    gpu::EngineOptions opts = gpu::default_engine_options();
    opts.fuse = fuse;
    opts.target.tf32 = tf32_gemms(precision);
    graph::Graph g = at_precision(model, precision);
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

}  // namespace

runtime::BackendFn make_backend(const std::string& name, const std::string& precision) {
  if (name == "reference")
    return [](const graph::Graph& g, const std::vector<Tensor>& in) {
      return runtime::BackendRun{runtime::run_reference(g, in), {}};
    };
  if (name == "emulator" || name == "emulator-unfused") {  // the GPU path's kernels, run on the CPU
    bool fuse = name == "emulator";
    return [fuse, precision](const graph::Graph& model, const std::vector<Tensor>& in) {
      runtime::BackendRun r;
      runtime::EmulatorOptions eo;
      eo.fallbacks = &r.fallbacks;
      eo.tf32 = tf32_gemms(precision);
      graph::Graph g = at_precision(model, precision);
      r.outputs = runtime::run_emulated(g, codegen::plan_for(g, fuse, runtime::emulator_target(eo)), in, eo);
      return r;
    };
  }
  if (name == "gpu") return gpu_backend(true, precision);
  if (name == "gpu-unfused") return gpu_backend(false, precision);
  throw UserError(fmt::format("unknown backend '{}' (choose from: reference, gpu, gpu-unfused, emulator, emulator-unfused)",
                              name));
}

}  // namespace braze::api
