// braze::kernel_values: every value a fused kernel writes, next to the reference executor's.
#include <braze/braze.h>

#include <functional>
#include <memory>

#include <fmt/format.h>

#include "api/engine_impl.h"
#include "api/pipeline.h"
#include "codegen/capabilities.h"
#include "runtime/emulator.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/reference_executor.h"

namespace braze {

std::vector<KernelValues> kernel_values(const Engine& engine, const std::vector<Tensor>& inputs) {
  const Engine::Impl& impl = EngineAccess::of(engine);
  const graph::Graph& g = impl.engine->graph();
  const bool tf32 = api::tf32_gemms(impl.info.precision);
  std::vector<Tensor> ref_values;
  runtime::run_reference(g, inputs, &ref_values);
  std::vector<gpu::Step> steps;
  std::function<Tensor(graph::ValueId)> got;
  std::vector<Tensor> emu_values;
  std::unique_ptr<gpu::Session> session;
  if (gpu::gpu_available() && impl.compiled) {
    std::shared_ptr<gpu::Engine> e = api::for_this_gpu(impl.engine, nullptr);
    session = std::make_unique<gpu::Session>(e);
    gpu::RunOptions ro;
    ro.poison = true;
    ro.capture = true;
    session->run(inputs, ro);
    steps = e->steps();
    got = [&](graph::ValueId v) { return session->fetch(v); };
  } else {
    runtime::EmulatorOptions eo;
    eo.values = &emu_values;
    eo.tf32 = tf32;
    const codegen::Target target = runtime::emulator_target(eo);
    const fusion::Plan plan = codegen::plan_for(g, impl.fuse, target);
    runtime::run_emulated(g, plan, inputs, eo);
    steps = gpu::generate_steps(g, plan, target);
    got = [&](graph::ValueId v) { return emu_values.at(v); };
  }
  std::vector<KernelValues> out;
  for (const gpu::Step& s : steps) {
    KernelValues k;
    k.kernel = s.kernel ? s.kernel->name : "(CPU reference)";
    for (graph::NodeId id : s.group.nodes)
      k.nodes.push_back(fmt::format("'{}' ({})", g.node(id).name, g.node(id).op_type()));
    for (graph::ValueId v : s.group.outputs) {
      Tensor a = got(v);
      const Tensor& b = ref_values.at(v);
      if (a.defined() && b.defined()) k.outputs.push_back({g.value(v).name, std::move(a), b});
    }
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace braze
