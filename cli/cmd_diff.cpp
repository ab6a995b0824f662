// braze diff MODEL --a CONFIG --b CONFIG: runs two configurations (gpu, gpu-unfused,
// reference, emulator) on the same inputs and prints, per output, the max absolute and
// relative error and the mismatch count. Exit 1 when an output differs beyond tolerance.
#include <braze/error.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/backends.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/run_inputs.h"
#include "runtime/compare.h"
#include "runtime/gpu/cuda_driver.h"

namespace braze::cli {

namespace {

struct DiffOptions {
  ModelOptions model;
  InputOptions in;
  std::string a = "gpu", b = "reference";
  double atol = -1, rtol = -1;
};

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
  std::vector<Tensor> inputs = inputs_for(g, o.in, given);
  runtime::BackendRun ra = make_backend(a)(g, inputs);
  runtime::BackendRun rb = make_backend(b)(g, inputs);
  for (const std::string& f : ra.fallbacks) std::cerr << fmt::format("note: {} ran on the CPU reference: {}\n", a, f);
  for (const std::string& f : rb.fallbacks) std::cerr << fmt::format("note: {} ran on the CPU reference: {}\n", b, f);
  std::cout << fmt::format("{}: {} vs {}\n", o.model.model, a, b);
  std::cout << fmt::format("  {:<28} {:>12} {:>12} {:>18}  {}\n", "output", "max abs err", "max rel err", "mismatches",
                           "tolerance");
  bool ok = true;
  for (size_t i = 0; i < ra.outputs.size(); ++i) {
    runtime::Tolerance tol = runtime::default_tolerance(rb.outputs[i].dtype());
    if (o.atol >= 0) tol.atol = o.atol;
    if (o.rtol >= 0) tol.rtol = o.rtol;
    runtime::Comparison c = runtime::compare(ra.outputs[i], rb.outputs[i], tol);
    ok = ok && c.ok;
    std::string mism = c.problem.empty() ? fmt::format("{}/{}", c.mismatches, c.numel) : c.problem;
    std::cout << fmt::format("  {:<28} {:>12.3g} {:>12.3g} {:>18}  atol {:g} rtol {:g}{}\n", g.outputs()[i].name,
                             c.max_abs, c.max_rel, mism, tol.atol, tol.rtol, c.ok ? "" : "  DIFFERS");
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
  cmd->add_option("--atol", o->atol, "absolute tolerance (default by dtype: float32 1e-5)");
  cmd->add_option("--rtol", o->rtol, "relative tolerance (default by dtype: float32 1e-3)");
  cmd->callback([o, &run] { run = [o] { return run_diff(*o); }; });
}

}  // namespace braze::cli
