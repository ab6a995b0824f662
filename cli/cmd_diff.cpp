// braze diff MODEL --a CONFIG --b CONFIG: runs two configurations (gpu, gpu-unfused,
// reference, emulator) on the same inputs and prints, per output, the max absolute and
// relative error and the mismatch count. Exit 1 when an output differs beyond tolerance.
// --per-kernel compares every value crossing a fused kernel's boundary instead.
#include <braze/braze.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/run_inputs.h"
#include "runtime/compare.h"

namespace braze::cli {

namespace {

struct DiffOptions {
  ModelOptions model;
  InputOptions in;
  std::string a = "gpu", b = "reference";
  double atol = -1, rtol = -1;
  bool per_kernel = false;
  std::string precision = "fp32";
};

DType precision_dtype(const std::string& precision) {
  return precision == "fp16"   ? DType::Float16
         : precision == "bf16" ? DType::BFloat16
                               : DType::Float32;
}

// Float32 outputs computed at a lower --precision are held to that dtype's tolerance; at
// tf32 the mismatch count uses float16's (the same 10-bit mantissa), though the relative
// L2 error decides (below).
runtime::Tolerance tolerance_for(const DiffOptions& o, DType dt) {
  DType low = o.precision == "tf32" ? DType::Float16 : precision_dtype(o.precision);
  runtime::Tolerance tol =
      runtime::default_tolerance(dt == DType::Float32 && low != DType::Float32 ? low : dt);
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
  return o.precision == "tf32" && dt == DType::Float32 && o.atol < 0 && o.rtol < 0;
}
bool agrees(const DiffOptions& o, const runtime::Comparison& c, DType dt) {
  if (!tf32_rule(o, dt)) return c.ok;
  return c.problem.empty() && c.nan_mismatches == 0 && c.rel_l2 <= kTf32RelL2;
}

// The model compiled for configuration `config` (reference: as given, no kernels; emulator:
// at --precision, no GPU kernels compiled; gpu: at --precision, compiled).
Engine engine_for(const DiffOptions& o, const std::string& config, const GivenInputs& given) {
  const BackendChoice choice = backend_choice(config);
  BuildOptions b;
  b.precision = choice.backend == Backend::Reference ? "fp32" : o.precision;
  b.no_fuse = !choice.fuse;
  CompileOptions co = compile_options(o.model, b, given.shapes);
  co.kernels = choice.backend == Backend::Gpu;
  co.dump.clear();
  return Engine::compile(o.model.model, co);
}

// --per-kernel: runs the fused plan (on the GPU, else the emulator) keeping every value,
// and compares each value a kernel writes with the reference executor's; names the first
// kernel whose outputs diverge beyond tolerance, with the ONNX nodes inside it.
int per_kernel_diff(const DiffOptions& o, const Engine& engine, const std::vector<Tensor>& inputs) {
  if (!gpu_available())
    std::cerr << "note: no GPU (" << gpu_unavailable_reason()
              << "): comparing the emulator's kernels\n";
  const std::vector<KernelValues> steps = kernel_values(engine, inputs);
  std::cout << fmt::format("{}: each kernel's outputs vs the reference executor\n", o.model.model);
  int first_bad = -1;
  for (size_t i = 0; i < steps.size(); ++i)
    for (const KernelValue& v : steps[i].outputs) {
      runtime::Comparison c =
          runtime::compare(v.fused, v.reference, tolerance_for(o, v.reference.dtype()));
      const bool ok = agrees(o, c, v.reference.dtype());
      std::cout << fmt::format("  #{:<3} {:<44} %{:<28} max abs {:<10.3g} {}\n", i, steps[i].kernel,
                               v.value, c.max_abs,
                               ok ? "ok" : "DIFFERS: " + c.summary(v.fused, v.reference));
      if (!ok && first_bad < 0) first_bad = static_cast<int>(i);
    }
  if (first_bad < 0) {
    std::cout << "every kernel's outputs agree within tolerance\n";
    return 0;
  }
  std::cout << fmt::format("first kernel to diverge: #{} {} covering {}\n", first_bad,
                           steps[first_bad].kernel, fmt::join(steps[first_bad].nodes, ", "));
  return 1;
}

std::vector<Tensor> run_config(const std::string& config, const Engine& engine,
                               const std::vector<Tensor>& inputs) {
  SessionOptions so;
  so.poison = true;
  Session s(engine, backend_choice(config).backend, so);
  std::vector<Tensor> out = s.run(inputs);
  for (const std::string& n : s.notes())
    if (n.rfind("runs on the CPU reference: ", 0) == 0)
      std::cerr << fmt::format("note: {} ran on the CPU reference: {}\n", config, n.substr(27));
  return out;
}

int run_diff(const DiffOptions& o) {
  std::string a = o.a, b = o.b;
  for (std::string* c : {&a, &b})
    if (backend_choice(*c).backend == Backend::Gpu && !gpu_available()) {
      std::cerr << fmt::format(
          "note: no GPU ({}): running '{}' with the CPU emulator (the same kernels)\n",
          gpu_unavailable_reason(), *c);
      *c = "emulator";
    }
  refuse_engine_file(o.model);
  if (o.per_kernel && precision_dtype(o.precision) != DType::Float32)
    throw UserError(
        "--per-kernel compares the values of the model as given: use it without --precision " +
        o.precision);
  GivenInputs given;
  if (!o.in.inputs.empty()) given = read_given_inputs(o.in, model_input_names(o.model.model));
  const Engine ea = engine_for(o, o.per_kernel ? (gpu_available() ? "gpu" : "emulator") : a, given);
  for (const std::string& n : ea.notes())
    if (n.rfind("runs on the CPU reference", 0) != 0) std::cerr << "note: " << n << "\n";
  const std::vector<Tensor> inputs = inputs_for(ea.inputs(), o.in, given);
  if (o.per_kernel) return per_kernel_diff(o, ea, inputs);
  const Engine eb = engine_for(o, b, given);
  const std::vector<Tensor> ra = run_config(a, ea, inputs), rb = run_config(b, eb, inputs);
  std::string prec =
      o.precision == "fp32" ? "" : " (at --precision " + o.precision + " where it runs kernels)";
  std::cout << fmt::format("{}: {} vs {}{}\n", o.model.model, a, b, prec);
  std::cout << fmt::format("  {:<28} {:>12} {:>12} {:>12} {:>18}  {}\n", "output", "max abs err",
                           "max rel err", "rel l2 err", "mismatches", "tolerance");
  bool ok = true;
  const std::vector<std::string> names = ea.output_names();
  for (size_t i = 0; i < ra.size(); ++i) {
    runtime::Tolerance tol = tolerance_for(o, rb[i].dtype());
    runtime::Comparison c = runtime::compare(ra[i], rb[i], tol);
    const bool agree = agrees(o, c, rb[i].dtype());
    ok = ok && agree;
    std::string mism = c.problem.empty() ? fmt::format("{}/{}", c.mismatches, c.numel) : c.problem;
    std::string rule = tf32_rule(o, rb[i].dtype())
                           ? fmt::format("rel l2 {:g}", kTf32RelL2)
                           : fmt::format("atol {:g} rtol {:g}", tol.atol, tol.rtol);
    std::cout << fmt::format("  {:<28} {:>12.3g} {:>12.3g} {:>12.3g} {:>18}  {}{}\n", names[i],
                             c.max_abs, c.max_rel, c.rel_l2, mism, rule, agree ? "" : "  DIFFERS");
  }
  std::cout << (ok ? "outputs agree within tolerance\n" : "outputs differ beyond tolerance\n");
  return ok ? 0 : 1;
}

}  // namespace

void add_diff(CLI::App& app, Runner& run) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "run two configurations on the same inputs and compare their outputs");
  o->model.add_to(*cmd);
  o->in.add_to(*cmd);
  cmd->add_option("--a", o->a, "first configuration")->check(CLI::IsMember(backend_names()));
  cmd->add_option("--b", o->b, "second configuration (the expected side)")
      ->check(CLI::IsMember(backend_names()));
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
  cmd->add_option("--atol", o->atol, "absolute tolerance (default by dtype: float32 1e-5)")
      ->check(tolerance);
  cmd->add_option("--rtol", o->rtol, "relative tolerance (default by dtype: float32 1e-3)")
      ->check(tolerance);
  add_precision_option(*cmd, o->precision);
  cmd->add_flag("--per-kernel", o->per_kernel,
                "compare every value a fused kernel writes with the reference executor's and name "
                "the first kernel "
                "whose outputs diverge");
  cmd->callback([o, &run] { run = [o] { return run_diff(*o); }; });
}

}  // namespace braze::cli
