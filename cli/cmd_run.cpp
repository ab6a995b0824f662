// braze run MODEL|ENGINE: runs a model or a compiled engine on given inputs (.pb / .npy
// files or a folder) or on seeded random ones, prints a summary of each output, writes them
// as .npy with --outputs, and with --check compares them with expected outputs (exit 1 on
// a mismatch). The GPU is used when one is present; otherwise the CPU reference, said so.
#include <braze/error.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/backends.h"
#include "cli/commands.h"
#include "cli/gpu_build.h"
#include "cli/model_options.h"
#include "cli/run_inputs.h"
#include "frontend/tensor_io.h"
#include "runtime/compare.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine_file.h"
#include "runtime/reference_executor.h"

namespace braze::cli {

namespace fs = std::filesystem;

namespace {

struct RunOptions {
  ModelOptions model;
  BuildOptions build;
  InputOptions in;
  std::string backend;  // empty: gpu when present, else reference
  std::string outputs;
  std::string check;
  bool sync_each_kernel = false;
};

std::string summarize(const Tensor& t) {
  if (t.numel() == 0) return "(empty)";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nonfinite = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.get_f64(i);
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
  }
  std::string first;
  for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 4); ++i) first += fmt::format("{}{:.6g}", i ? ", " : "", t.get_f64(i));
  int64_t finite = t.numel() - nonfinite;
  return fmt::format("min {:.6g}  max {:.6g}  mean {:.6g}{}  [{}{}]", finite ? lo : NAN, finite ? hi : NAN,
                     finite ? sum / static_cast<double>(finite) : NAN,
                     nonfinite ? fmt::format("  ({} NaN/Inf)", nonfinite) : "", first, t.numel() > 4 ? ", …" : "");
}

// Output names may hold characters a file name should not.
std::string file_safe(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return s.empty() ? "output" : s;
}

struct Ran {
  std::vector<Tensor> outputs;
  std::vector<std::string> output_names;
  std::string where;
};

Ran run_engine_file(const RunOptions& o) {
  gpu::LoadedEngine le = gpu::load_engine(o.model.model);
  refuse_build_options_for_engine(o.model, o.build, le.info.precision);
  std::cout << fmt::format("engine {}: model {} (hash {}), {} kernels for {} at --precision {}\n", o.model.model,
                           le.info.model_name, le.info.model_hash, le.engine->steps().size(), le.info.arch,
                           le.info.precision);
  const graph::Graph& g = le.engine->graph();
  GivenInputs given = read_given_inputs(o.in, input_names(g));
  std::vector<Tensor> inputs = inputs_for(g, o.in, given);
  Ran r;
  for (const auto& out : g.outputs()) r.output_names.push_back(out.name);
  if (!o.backend.empty() && o.backend != "gpu" && o.backend != "reference")
    throw UserError(fmt::format("--backend {}: an engine runs its own kernels on the GPU, or its graph on the "
                                "reference; give the model for {}",
                                o.backend, o.backend));
  if (o.backend == "reference") {
    r.outputs = runtime::run_reference(g, inputs);
    r.where = "the CPU reference";
    return r;
  }
  if (!gpu::gpu_available()) {
    std::cerr << "note: no GPU (" << gpu::gpu_unavailable_reason() << "): running the engine's graph on the CPU reference\n";
    r.outputs = runtime::run_reference(g, inputs);
    r.where = "the CPU reference";
    return r;
  }
  std::shared_ptr<gpu::Engine> engine = le.engine;
  std::string note;
  engine = api::for_this_gpu(engine, &note);
  if (!note.empty()) std::cerr << "note: " << note << "\n";
  print_fallbacks(*engine);
  gpu::Session session(engine);
  gpu::RunOptions ro;
  ro.poison = true;
  ro.sync_each_kernel = o.sync_each_kernel;
  r.outputs = session.run(inputs, ro);
  r.where = "the GPU (" + gpu::device_info().name + ")";
  return r;
}

Ran run_model(const RunOptions& o) {
  std::string backend = o.backend;
  if (backend.empty()) {
    backend = gpu::gpu_available() ? "gpu" : "reference";
    if (backend == "reference")
      std::cerr << "note: no GPU (" << gpu::gpu_unavailable_reason() << "): running on the CPU reference\n";
  }
  GivenInputs given;
  if (!o.in.inputs.empty()) given = read_given_inputs(o.in, model_input_names(o.model.model));
  LoadedModel m = load_model(o.model, given.shapes);
  const graph::Graph& g = m.imported.graph;
  std::vector<Tensor> inputs = inputs_for(g, o.in, given);
  Ran r;
  for (const auto& out : g.outputs()) r.output_names.push_back(out.name);
  if (backend == "gpu" || backend == "gpu-unfused") {
    BuildOptions b = o.build;
    b.no_fuse = b.no_fuse || backend == "gpu-unfused";
    BuiltEngine built = build_engine(g, b, o.model);
    if (b.tune) print_build_summary(*built.engine, &built.report);
    print_fallbacks(*built.engine);
    gpu::Session session(built.engine);
    gpu::RunOptions ro;
    ro.poison = true;
    ro.sync_each_kernel = o.sync_each_kernel;
    r.outputs = session.run(inputs, ro);
    r.where = "the GPU (" + gpu::device_info().name + ")";
    return r;
  }
  runtime::BackendRun ran = make_backend(backend, o.build.precision)(g, inputs);
  for (const std::string& f : ran.fallbacks) std::cerr << "note: ran on the CPU reference: " << f << "\n";
  r.outputs = std::move(ran.outputs);
  r.where = "the " + backend + " backend";
  return r;
}

int run_run(const RunOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  Ran r = gpu::is_engine_file(o.model.model) ? run_engine_file(o) : run_model(o);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("ran {} on {} in {:.1f} ms (including set-up)\n", o.model.model, r.where, ms);
  for (size_t i = 0; i < r.outputs.size(); ++i)
    std::cout << fmt::format("  {} {}{}  {}\n", r.output_names[i], dtype_name(r.outputs[i].dtype()),
                             shape_str(r.outputs[i].shape()), summarize(r.outputs[i]));
  if (!o.outputs.empty()) {
    std::error_code ec;
    fs::create_directories(o.outputs, ec);
    if (ec) throw UserError(fmt::format("--outputs {}: cannot create the folder", o.outputs));
    for (size_t i = 0; i < r.outputs.size(); ++i)
      frontend::write_npy(fs::path(o.outputs) / (file_safe(r.output_names[i]) + ".npy"), r.outputs[i]);
    std::cout << fmt::format("wrote {} output{} to {}\n", r.outputs.size(), r.outputs.size() == 1 ? "" : "s", o.outputs);
  }
  if (o.check.empty()) return 0;
  std::vector<Tensor> expected =
      runtime::match_inputs(r.output_names, runtime::read_input_files({o.check}, "output_"));
  bool ok = true;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    runtime::Comparison c =
        runtime::compare(r.outputs[i], expected[i], runtime::default_tolerance(expected[i].dtype()));
    ok = ok && c.ok;
    std::cout << fmt::format("check {} {}: {}\n", r.output_names[i], c.ok ? "ok" : "MISMATCH",
                             c.summary(r.outputs[i], expected[i]));
  }
  return ok ? 0 : 1;
}

}  // namespace

void add_run(CLI::App& app, Runner& run) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "run a model or an engine file on given or random inputs");
  o->model.add_to(*cmd, "ONNX model or .braze engine file");
  o->build.add_to(*cmd);
  o->in.add_to(*cmd);
  cmd->add_option("--backend", o->backend, "where to run a model: gpu (default when present), gpu-unfused, "
                                           "reference (the CPU), emulator (the GPU kernels on the CPU)")
      ->check(CLI::IsMember(backend_names()));
  cmd->add_option("--outputs", o->outputs, "write each output as <name>.npy into this folder");
  cmd->add_option("--check", o->check, "folder of expected outputs (output_N.pb or <name>.npy) to compare with");
  cmd->add_flag("--sync-each-kernel", o->sync_each_kernel,
                "GPU: wait for each kernel before the next and name the one that fails (slower)");
  cmd->callback([o, &run] { run = [o] { return run_run(*o); }; });
}

}  // namespace braze::cli
