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

#include <braze/braze.h>

#include "cli/build_summary.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/run_inputs.h"
#include "runtime/compare.h"

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
  for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 4); ++i)
    first += fmt::format("{}{:.6g}", i ? ", " : "", t.get_f64(i));
  int64_t finite = t.numel() - nonfinite;
  return fmt::format("min {:.6g}  max {:.6g}  mean {:.6g}{}  [{}{}]", finite ? lo : NAN,
                     finite ? hi : NAN, finite ? sum / static_cast<double>(finite) : NAN,
                     nonfinite ? fmt::format("  ({} NaN/Inf)", nonfinite) : "", first,
                     t.numel() > 4 ? ", …" : "");
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

std::string where_of(Backend b) {
  switch (b) {
    case Backend::Gpu:
      return "the GPU (" + gpu_name() + ")";
    case Backend::Emulator:
      return "the emulator backend";
    default:
      return "the CPU reference";
  }
}

Ran run_on(const Engine& engine, Backend backend, const RunOptions& o, const GivenInputs& given) {
  const std::vector<Tensor> inputs = inputs_for(engine.inputs(), o.in, given);
  SessionOptions so;
  so.poison = true;
  so.sync_each_kernel = o.sync_each_kernel;
  Session session(engine, backend, so);
  for (const std::string& n : session.notes()) std::cerr << "note: " << n << "\n";
  Ran r;
  r.output_names = engine.output_names();
  r.outputs = session.run(inputs);
  if (backend == Backend::Emulator)
    for (const std::string& n : session.notes()) std::cerr << "note: " << n << "\n";
  r.where = where_of(backend);
  return r;
}

Ran run_engine_file(const RunOptions& o) {
  const Engine engine = Engine::load(o.model.model);
  refuse_build_options_for_engine(o.model, o.build, engine.precision());
  std::cout << fmt::format("engine {}: model {} (hash {}), {} kernels for {} at --precision {}\n",
                           o.model.model, engine.model_name(), engine.report().model_hash,
                           engine.kernels() + engine.report().cpu_groups, engine.arch(),
                           engine.precision());
  if (!o.backend.empty() && o.backend != "gpu" && o.backend != "reference")
    throw UserError(
        fmt::format("--backend {}: an engine runs its own kernels on the GPU, or its graph on the "
                    "reference; give the model for {}",
                    o.backend, o.backend));
  const GivenInputs given = read_given_inputs(o.in, engine.input_names());
  if (o.backend == "reference") return run_on(engine, Backend::Reference, o, given);
  if (!gpu_available()) {
    std::cerr << "note: no GPU (" << gpu_unavailable_reason()
              << "): running the engine's graph on the CPU reference\n";
    return run_on(engine, Backend::Reference, o, given);
  }
  return run_on(engine, Backend::Gpu, o, given);
}

Ran run_model(const RunOptions& o) {
  std::string backend = o.backend;
  if (backend.empty()) {
    backend = gpu_available() ? "gpu" : "reference";
    if (backend == "reference")
      std::cerr << "note: no GPU (" << gpu_unavailable_reason()
                << "): running on the CPU reference\n";
  }
  GivenInputs given;
  if (!o.in.inputs.empty()) given = read_given_inputs(o.in, model_input_names(o.model.model));
  CompileOptions co = compile_options(o.model, o.build, given.shapes);
  const BackendChoice choice = backend_choice(backend);
  const bool gpu = choice.backend == Backend::Gpu;
  co.fuse = co.fuse && choice.fuse;
  if (choice.backend == Backend::Reference)
    co.precision = "fp32";  // the reference runs the model as given
  co.kernels = gpu;         // the reference and the emulator need no GPU kernels
  const Engine engine = Engine::compile(o.model.model, co);
  // The groups a GPU session runs on the CPU reference are its notes (run_on prints them).
  for (const std::string& n : engine.notes())
    if (n.rfind("runs on the CPU reference", 0) != 0) std::cerr << "note: " << n << "\n";
  if (gpu && o.build.tune) print_build_summary(engine.report(), engine.arch());
  Ran r = run_on(engine, choice.backend, o, given);
  if (choice.backend == Backend::Emulator) r.where = "the " + backend + " backend";
  return r;
}

int run_run(const RunOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  Ran r = is_engine_file(o.model.model) ? run_engine_file(o) : run_model(o);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("ran {} on {} in {:.1f} ms (including set-up)\n", o.model.model, r.where,
                           ms);
  for (size_t i = 0; i < r.outputs.size(); ++i)
    std::cout << fmt::format("  {} {}{}  {}\n", r.output_names[i], dtype_name(r.outputs[i].dtype()),
                             shape_str(r.outputs[i].shape()), summarize(r.outputs[i]));
  if (!o.outputs.empty()) {
    std::error_code ec;
    fs::create_directories(o.outputs, ec);
    if (ec) throw UserError(fmt::format("--outputs {}: cannot create the folder", o.outputs));
    for (size_t i = 0; i < r.outputs.size(); ++i)
      write_npy((fs::path(o.outputs) / (file_safe(r.output_names[i]) + ".npy")).string(),
                r.outputs[i]);
    std::cout << fmt::format("wrote {} output{} to {}\n", r.outputs.size(),
                             r.outputs.size() == 1 ? "" : "s", o.outputs);
  }
  if (o.check.empty()) return 0;
  std::vector<Tensor> expected = read_inputs({o.check}, r.output_names, "output_");
  std::vector<std::string> differ;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    runtime::Comparison c = runtime::compare(r.outputs[i], expected[i],
                                             runtime::default_tolerance(expected[i].dtype()));
    if (!c.ok) differ.push_back(r.output_names[i]);
    std::cout << fmt::format("check {} {}: {}\n", r.output_names[i], c.ok ? "ok" : "MISMATCH",
                             c.summary(r.outputs[i], expected[i]));
  }
  if (differ.empty()) return 0;
  std::cout.flush();
  std::cerr << fmt::format("error: {} of {} output{} from {} ({}) beyond the tolerance\n",
                           differ.size(), r.outputs.size(),
                           differ.size() == 1 ? " differs" : "s differ", o.check,
                           fmt::join(differ, ", "));
  return 1;
}

}  // namespace

void add_run(CLI::App& app, Runner& run) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "run a model or an engine file on given or random inputs");
  o->model.add_to(*cmd, "ONNX model or .braze engine file");
  o->build.add_to(*cmd);
  o->in.add_to(*cmd);
  cmd->add_option("--backend", o->backend,
                  "where to run a model: gpu (default when present), gpu-unfused, "
                  "reference (the CPU), emulator (the GPU kernels on the CPU)")
      ->check(CLI::IsMember(backend_names()));
  cmd->add_option("--outputs", o->outputs, "write each output as <name>.npy into this folder");
  cmd->add_option("--check", o->check,
                  "folder of expected outputs (output_N.pb or <name>.npy) to compare with");
  cmd->add_flag("--sync-each-kernel", o->sync_each_kernel,
                "GPU: wait for each kernel before the next, to confirm which one fails (slower)");
  cmd->callback([o, &run] { run = [o] { return run_run(*o); }; });
}

}  // namespace braze::cli
