// braze compile MODEL -o FILE.braze: plans, generates and compiles the model's kernels (no
// GPU needed) and writes a self-contained engine file.
#include <braze/error.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/gpu_build.h"
#include "runtime/gpu/engine_file.h"

namespace braze::cli {

namespace {

struct CompileOptions {
  ModelOptions model;
  BuildOptions build;
  std::string output;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int run_compile(const CompileOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  LoadedModel m = load_model(o.model);
  const double load_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  BuiltEngine b = build_engine(m.imported.graph, o.build, o.model);
  const double build_s = seconds_since(t1);
  const auto t2 = std::chrono::steady_clock::now();
  print_fallbacks(*b.engine);
  api::ModelSource src;
  src.path = o.model.model;
  const gpu::EngineFileInfo info = api::file_info(src, *b.engine, o.build.precision);
  gpu::save_engine(o.output, *b.engine, info);
  const double write_s = seconds_since(t2);
  print_build_summary(*b.engine, &b.report);
  const gpu::BuildReport& r = b.report;
  // What the build spends outside NVRTC: precision conversion and planning are the rest of
  // the build after codegen, NVRTC and tuning.
  std::cout << fmt::format(
      "time: {:.2f} s: import and passes {:.2f} s, precision and plan {:.2f} s, codegen {:.2f} s, "
      "NVRTC and kernel cache {:.2f} s{}, engine file {:.2f} s\n",
      seconds_since(t0), load_s, std::max(0.0, build_s - r.codegen_seconds - r.compile_seconds - r.tune_seconds),
      r.codegen_seconds, r.compile_seconds, r.tune_seconds > 0 ? fmt::format(", tuning {:.2f} s", r.tune_seconds) : "",
      write_s);
  std::cout << fmt::format("wrote {} (model hash {})\n", o.output, info.model_hash);
  return 0;
}

}  // namespace

void add_compile(CLI::App& app, Runner& run) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand("compile", "compile a model into a self-contained engine file (no GPU needed)");
  o->model.add_to(*cmd);
  o->build.add_to(*cmd);
  cmd->add_option("-o,--output", o->output, "engine file to write (.braze)")->required();
  cmd->callback([o, &run] { run = [o] { return run_compile(*o); }; });
}

}  // namespace braze::cli
