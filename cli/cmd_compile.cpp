// braze compile MODEL -o FILE.braze: plans, generates and compiles the model's kernels (no
// GPU needed) and writes a self-contained engine file.
#include <braze/error.h>
#include <xxhash.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/gpu_build.h"
#include "frontend/tensor_io.h"
#include "runtime/gpu/engine_file.h"
#include "runtime/gpu/nvrtc.h"

namespace braze::cli {

namespace {

struct CompileOptions {
  ModelOptions model;
  BuildOptions build;
  std::string output;
};

int run_compile(const CompileOptions& o) {
  LoadedModel m = load_model(o.model);
  BuiltEngine b = build_engine(m.imported.graph, o.build, o.model);
  print_fallbacks(*b.engine);
  std::string bytes = frontend::read_file(o.model.model);
  gpu::EngineFileInfo info;
  info.model_hash = fmt::format("{:016x}", XXH64(bytes.data(), bytes.size(), 0));
  info.model_name = std::filesystem::path(o.model.model).filename().string();
  info.braze_version = BRAZE_VERSION;
  info.nvrtc_version = gpu::nvrtc_version();
  info.arch = b.engine->arch().name();
  info.precision = o.build.precision;
  gpu::save_engine(o.output, *b.engine, info);
  print_build_summary(*b.engine, &b.report);
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
