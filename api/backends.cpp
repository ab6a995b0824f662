#include "api/backends.h"

#include <braze/error.h>

#include <optional>

#include "api/compile_script.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/emulator.h"
#include "runtime/reference_executor.h"

namespace braze::api {

namespace {

// Conformance's graph (imported, through the passes) compiled by the compile script.
Script compile_case(const graph::Graph& g, bool fuse, Through through,
                    std::optional<codegen::Target> target = std::nullopt) {
  ModelSource src;
  src.graph = &g;
  ScriptOptions so;
  so.compile.fuse = fuse;
  so.through = through;
  so.target = target;
  return compile_script(src, so);
}

runtime::BackendFn gpu_backend(bool fuse) {
  return [fuse](const graph::Graph& g, const std::vector<Tensor>& in) {
    if (!gpu::gpu_available()) throw gpu::DeviceError("no GPU: " + gpu::gpu_unavailable_reason());
    const Script s = compile_case(g, fuse, Through::Engine);
    gpu::Session session(s.engine);
    gpu::RunOptions ro;
    ro.poison = true;
    runtime::BackendRun r;
    r.outputs = session.run(in, ro);
    for (const gpu::Step& st : s.engine->steps())
      if (!st.kernel) r.fallbacks.push_back(st.fallback_reason);
    return r;
  };
}

runtime::BackendFn emulator_backend(bool fuse) {  // the GPU path's kernels, run on the CPU
  return [fuse](const graph::Graph& g, const std::vector<Tensor>& in) {
    runtime::BackendRun r;
    runtime::EmulatorOptions eo;
    eo.fallbacks = &r.fallbacks;
    const Script s = compile_case(g, fuse, Through::Codegen, runtime::emulator_target(eo));
    r.outputs = runtime::run_emulated_steps(s.graph, s.steps, in, eo);
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
