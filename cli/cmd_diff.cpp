// braze diff MODEL --a CONFIG --b CONFIG: runs two configurations (gpu, gpu-unfused,
// reference, emulator) on the same inputs and prints, per output, the max absolute and
// relative error and the mismatch count. Exit 1 when an output differs beyond tolerance.
// --per-kernel compares every value crossing a fused kernel's boundary instead.
#include <braze/error.h>

#include <iostream>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "api/backends.h"
#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/model_options.h"
#include "cli/run_inputs.h"
#include "runtime/compare.h"
#include "codegen/capabilities.h"
#include "runtime/emulator.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "graph/passes/precision.h"
#include "runtime/reference_executor.h"

namespace braze::cli {

namespace {

// A graph's inputs as the public API describes them (UserError for one without a static shape).
std::vector<TensorInfo> input_infos(const graph::Graph& g) {
  std::vector<TensorInfo> out;
  for (graph::ValueId id : g.inputs()) {
    const graph::Value& v = g.value(id);
    if (!v.has_shape) throw UserError(fmt::format("input '{}' has no static shape; give it with --shapes", v.name));
    out.push_back({v.name, v.dtype, v.shape});
  }
  return out;
}

struct DiffOptions {
  ModelOptions model;
  InputOptions in;
  std::string a = "gpu", b = "reference";
  double atol = -1, rtol = -1;
  bool per_kernel = false;
  std::string precision = "fp32";
};

// Float32 outputs computed at a lower --precision are held to that dtype's tolerance; at
// tf32 the mismatch count uses float16's (the same 10-bit mantissa), though the relative
// L2 error decides (below).
runtime::Tolerance tolerance_for(const DiffOptions& o, DType dt) {
  DType low = tf32_gemms(o.precision) ? DType::Float16 : graph::passes::precision_dtype(o.precision);
  runtime::Tolerance tol = runtime::default_tolerance(dt == DType::Float32 && low != DType::Float32 ? low : dt);
  if (o.atol >= 0) tol.atol = o.atol;
  if (o.rtol >= 0) tol.rtol = o.rtol;
  return tol;
}

// At --precision tf32 a float32 output agrees when its relative L2 error is within 1e-3 and
// NaN / Inf sit in the same places: the GEMMs' operands are rounded to a 10-bit mantissa, so
// an element's error grows with k and its operands' magnitudes and no element-wise tolerance
// fits every model (a product near zero after cancellation has a large relative error).
// Given --atol or --rtol, the element-wise test decides as at other precisions.
constexpr double kTf32RelL2 = 1e-3;
bool tf32_rule(const DiffOptions& o, DType dt) {
  return tf32_gemms(o.precision) && dt == DType::Float32 && o.atol < 0 && o.rtol < 0;
}
bool agrees(const DiffOptions& o, const runtime::Comparison& c, DType dt) {
  if (!tf32_rule(o, dt)) return c.ok;
  return c.problem.empty() && c.nan_mismatches == 0 && c.rel_l2 <= kTf32RelL2;
}

// --per-kernel: runs the fused plan (on the GPU, else the emulator) keeping every value,
// and compares each value a kernel writes with the reference executor's; names the first
// kernel whose outputs diverge beyond tolerance, with the ONNX nodes inside it.
int per_kernel_diff(const DiffOptions& o, const graph::Graph& g, const std::vector<Tensor>& inputs) {
  gpu::EngineOptions opts = gpu::default_engine_options();
  opts.target.tf32 = tf32_gemms(o.precision);
  runtime::EmulatorOptions eo_plan;
  eo_plan.tf32 = opts.target.tf32;
  fusion::Plan plan = codegen::plan_for(g, true, gpu::gpu_available() ? opts.target : runtime::emulator_target(eo_plan));
  std::vector<Tensor> ref_values;
  runtime::run_reference(g, inputs, &ref_values);
  std::vector<gpu::Step> steps;
  std::function<Tensor(graph::ValueId)> got;
  std::vector<Tensor> emu_values;
  std::shared_ptr<gpu::Engine> engine;
  std::unique_ptr<gpu::Session> session;
  if (gpu::gpu_available()) {
    engine = gpu::Engine::build(g, plan, opts);
    session = std::make_unique<gpu::Session>(engine);
    gpu::RunOptions ro;
    ro.poison = true;
    ro.capture = true;
    session->run(inputs, ro);
    steps = engine->steps();
    got = [&](graph::ValueId v) { return session->fetch(v); };
  } else {
    std::cerr << "note: no GPU (" << gpu::gpu_unavailable_reason() << "): comparing the emulator's kernels\n";
    runtime::EmulatorOptions eo;
    eo.values = &emu_values;
    eo.tf32 = tf32_gemms(o.precision);
    runtime::run_emulated(g, plan, inputs, eo);
    codegen::Target target;
    target.emulated = true;
    target.tf32 = eo.tf32;
    steps = gpu::generate_steps(g, plan, target);
    got = [&](graph::ValueId v) { return emu_values.at(v); };
  }
  std::cout << fmt::format("{}: each kernel's outputs vs the reference executor\n", o.model.model);
  int first_bad = -1;
  for (size_t i = 0; i < steps.size(); ++i) {
    const gpu::Step& s = steps[i];
    for (graph::ValueId v : s.group.outputs) {
      Tensor a = got(v);
      const Tensor& b = ref_values.at(v);
      if (!a.defined() || !b.defined()) continue;
      runtime::Comparison c = runtime::compare(a, b, tolerance_for(o, b.dtype()));
      const bool ok = agrees(o, c, b.dtype());
      std::cout << fmt::format("  #{:<3} {:<44} %{:<28} max abs {:<10.3g} {}\n", i,
                               s.kernel ? s.kernel->name : "(CPU reference)", g.value(v).name, c.max_abs,
                               ok ? "ok" : "DIFFERS: " + c.summary(a, b));
      if (!ok && first_bad < 0) first_bad = static_cast<int>(i);
    }
  }
  if (first_bad < 0) {
    std::cout << "every kernel's outputs agree within tolerance\n";
    return 0;
  }
  std::vector<std::string> nodes;
  for (graph::NodeId id : steps[first_bad].group.nodes)
    nodes.push_back(fmt::format("'{}' ({})", g.node(id).name, g.node(id).op_type()));
  std::cout << fmt::format("first kernel to diverge: #{} {} covering {}\n", first_bad,
                           steps[first_bad].kernel ? steps[first_bad].kernel->name : "(CPU reference)",
                           fmt::join(nodes, ", "));
  return 1;
}

int run_diff(const DiffOptions& o) {
  std::string a = o.a, b = o.b;
  for (std::string* c : {&a, &b})
    if (c->rfind("gpu", 0) == 0 && !gpu::gpu_available()) {
      std::cerr << fmt::format("note: no GPU ({}): running '{}' with the CPU emulator (the same kernels)\n",
                               gpu::gpu_unavailable_reason(), *c);
      *c = "emulator";
    }
  GivenInputs given;
  if (!o.in.inputs.empty()) given = read_given_inputs(o.in, model_input_names(o.model.model));
  LoadedModel m = load_model(o.model, given.shapes);
  const graph::Graph& g = m.imported.graph;
  std::vector<Tensor> inputs = inputs_for(input_infos(g), o.in, given);
  if (o.per_kernel && graph::passes::precision_dtype(o.precision) != DType::Float32)
    throw UserError("--per-kernel compares the values of the model as given: use it without --precision " +
                    o.precision);
  if (o.per_kernel) return per_kernel_diff(o, g, inputs);
  runtime::BackendRun ra = api::make_backend(a, o.precision)(g, inputs);
  runtime::BackendRun rb = api::make_backend(b, o.precision)(g, inputs);
  for (const std::string& f : ra.fallbacks) std::cerr << fmt::format("note: {} ran on the CPU reference: {}\n", a, f);
  for (const std::string& f : rb.fallbacks) std::cerr << fmt::format("note: {} ran on the CPU reference: {}\n", b, f);
  std::string prec = o.precision == "fp32" ? "" : " (at --precision " + o.precision + " where it runs kernels)";
  std::cout << fmt::format("{}: {} vs {}{}\n", o.model.model, a, b, prec);
  std::cout << fmt::format("  {:<28} {:>12} {:>12} {:>12} {:>18}  {}\n", "output", "max abs err", "max rel err",
                           "rel l2 err", "mismatches", "tolerance");
  bool ok = true;
  for (size_t i = 0; i < ra.outputs.size(); ++i) {
    runtime::Tolerance tol = tolerance_for(o, rb.outputs[i].dtype());
    runtime::Comparison c = runtime::compare(ra.outputs[i], rb.outputs[i], tol);
    const bool agree = agrees(o, c, rb.outputs[i].dtype());
    ok = ok && agree;
    std::string mism = c.problem.empty() ? fmt::format("{}/{}", c.mismatches, c.numel) : c.problem;
    std::string rule = tf32_rule(o, rb.outputs[i].dtype()) ? fmt::format("rel l2 {:g}", kTf32RelL2)
                                                           : fmt::format("atol {:g} rtol {:g}", tol.atol, tol.rtol);
    std::cout << fmt::format("  {:<28} {:>12.3g} {:>12.3g} {:>12.3g} {:>18}  {}{}\n", g.outputs()[i].name, c.max_abs,
                             c.max_rel, c.rel_l2, mism, rule, agree ? "" : "  DIFFERS");
  }
  std::cout << (ok ? "outputs agree within tolerance\n" : "outputs differ beyond tolerance\n");
  return ok ? 0 : 1;
}

}  // namespace

void add_diff(CLI::App& app, Runner& run) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand("diff", "run two configurations on the same inputs and compare their outputs");
  o->model.add_to(*cmd);
  o->in.add_to(*cmd);
  cmd->add_option("--a", o->a, "first configuration")->check(CLI::IsMember(backend_names()));
  cmd->add_option("--b", o->b, "second configuration (the expected side)")->check(CLI::IsMember(backend_names()));
  // Finite and not negative: NaN or a negative value used to fall back to the default
  // silently, and inf made every output agree.
  const CLI::Validator tolerance(
      [](std::string& s) {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        return end != s.c_str() && *end == '\0' && std::isfinite(v) && v >= 0
                   ? std::string()
                   : fmt::format("'{}' is not a tolerance (a finite number, 0 or more)", s);
      },
      "TOLERANCE");
  cmd->add_option("--atol", o->atol, "absolute tolerance (default by dtype: float32 1e-5)")->check(tolerance);
  cmd->add_option("--rtol", o->rtol, "relative tolerance (default by dtype: float32 1e-3)")->check(tolerance);
  add_precision_option(*cmd, o->precision);
  cmd->add_flag("--per-kernel", o->per_kernel,
                "compare every value a fused kernel writes with the reference executor's and name the first kernel "
                "whose outputs diverge");
  cmd->callback([o, &run] { run = [o] { return run_diff(*o); }; });
}

}  // namespace braze::cli
