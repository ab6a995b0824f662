// braze compile MODEL -o FILE.braze: plans, generates and compiles the model's kernels (no
// GPU needed) and writes a self-contained engine file.
#include <braze/error.h>

#include <chrono>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include <braze/braze.h>

#include "cli/build_summary.h"
#include "cli/commands.h"
#include "cli/model_options.h"

namespace braze::cli {

namespace {

struct CompileCommand {
  ModelOptions model;
  BuildOptions build;
  std::string output;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int run_compile(const CompileCommand& o) {
  const auto t0 = std::chrono::steady_clock::now();
  // The commands that take only models say what an engine file is.
  refuse_engine_file(o.model);
  const Engine engine = Engine::compile(o.model.model, compile_options(o.model, o.build));
  for (const std::string& n : engine.notes()) std::cerr << "note: " << n << "\n";
  const auto t1 = std::chrono::steady_clock::now();
  engine.save(o.output);
  const double write_s = seconds_since(t1);
  const CompileReport& r = engine.report();
  print_build_summary(r, engine.arch());
  std::cout << fmt::format("time: {:.2f} s, engine file {:.2f} s\n", seconds_since(t0), write_s);
  for (const CompileStep& step : r.steps)
    std::cout << fmt::format("  {:<10} {:>7.2f} s  {}\n", step.name, step.seconds, step.summary);
  std::cout << fmt::format("wrote {} (model hash {})\n", o.output, r.model_hash);
  return 0;
}

}  // namespace

void add_compile(CLI::App& app, Runner& run) {
  auto o = std::make_shared<CompileCommand>();
  CLI::App* cmd = app.add_subcommand(
      "compile", "compile a model into a self-contained engine file (no GPU needed)");
  o->model.add_to(*cmd);
  o->build.add_to(*cmd);
  cmd->add_option("-o,--output", o->output, "engine file to write (.braze)")->required();
  cmd->callback([o, &run] { run = [o] { return run_compile(*o); }; });
}

}  // namespace braze::cli
