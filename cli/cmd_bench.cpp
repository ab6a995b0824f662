// braze bench MODEL|ENGINE: end-to-end latency of the plan on the GPU (min, median, p90;
// one CUDA graph by default), then one row per kernel: time, bytes moved, FLOPs, achieved
// GB/s and TFLOP/s, and the share of the device's roofline (the copy bandwidth measured in
// the same run, datasheet peak rates). --profile writes a Chrome trace; --json the numbers.
#include <braze/error.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <braze/braze.h>

#include "cli/build_summary.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/model_options.h"
#include "cli/run_inputs.h"

namespace braze::cli {

namespace {

struct BenchCmdOptions {
  ModelOptions model;
  BuildOptions build;
  InputOptions in;
  int warmup = 20, iters = 200;
  bool no_graph = false;
  bool warm_l2 = false;
  std::string profile, json;
};

nlohmann::json kernel_json(const KernelBench& k) {
  nlohmann::json j = {
      {"step", k.step},         {"name", k.name},     {"kind", k.kind},
      {"schedule", k.schedule}, {"nodes", k.nodes},   {"median_us", k.median_us},
      {"min_us", k.min_us},     {"bytes", k.bytes},   {"flops", k.flops},
      {"gbs", k.gbs},           {"tflops", k.tflops}, {"roofline_pct", k.roofline_pct},
      {"tunables", k.tunables}};
  if (k.gemm)
    j["gemm"] = {{"batch", k.gemm->batch},
                 {"m", k.gemm->m},
                 {"n", k.gemm->n},
                 {"k", k.gemm->k},
                 {"dtype", dtype_name(k.gemm->dtype)},
                 {"schedule", k.schedule}};
  if (k.attention)
    j["attention"] = {{"batch", k.attention->batch},
                      {"sq", k.attention->sq},
                      {"sk", k.attention->sk},
                      {"d", k.attention->d},
                      {"dtype", dtype_name(k.attention->dtype)},
                      {"mask", k.attention->mask}};
  return j;
}

int run_bench(const BenchCmdOptions& o) {
  GivenInputs given;
  Engine engine = [&] {
    if (is_engine_file(o.model.model)) {
      Engine e = Engine::load(o.model.model);
      refuse_build_options_for_engine(o.model, o.build, e.precision());
      // The engine holds the graph: its inputs name the files (it is no ONNX model to import).
      if (!o.in.inputs.empty()) given = read_given_inputs(o.in, e.input_names());
      return e;
    }
    if (!o.in.inputs.empty()) given = read_given_inputs(o.in, model_input_names(o.model.model));
    Engine e = Engine::compile(o.model.model, compile_options(o.model, o.build, given.shapes));
    for (const std::string& n : e.notes()) std::cerr << "note: " << n << "\n";
    return e;
  }();
  if (!gpu_available()) {
    std::cout << "no GPU (" << gpu_unavailable_reason()
              << "): nothing to time. What each kernel moves:\n";
    for (const KernelCost& k : kernel_costs(engine))
      std::cout << fmt::format("  {:<52} {:>12}  {:.3g} FLOP\n", k.name,
                               human_bytes(static_cast<double>(k.bytes)), k.flops);
    return 1;
  }
  const CompileReport& report = engine.report();
  if (report.tuned || report.tuned_cached) print_build_summary(report, engine.arch());
  std::vector<Tensor> inputs = inputs_for(engine.inputs(), o.in, given);
  BenchOptions bo;
  bo.warmup = o.warmup;
  bo.iters = o.iters;
  bo.cuda_graph = !o.no_graph;
  bo.flush_l2 = !o.warm_l2;
  bo.profile = o.profile;
  const BenchReport r = benchmark(engine, inputs, bo);
  std::cout << fmt::format("device {} ({}, {} SMs); copy bandwidth {:.0f} GB/s, measured now\n",
                           r.device, r.arch, r.sms, r.copy_gbs);
  std::cout << fmt::format(
      "end to end ({}, {} runs, L2 {}): min {:.2f} us, median {:.2f} us, p90 {:.2f} us\n",
      r.cuda_graph ? "one CUDA graph"
      : o.no_graph ? "stream launches"
                   : "stream launches, no graph: one kernel or a CPU step",
      o.iters, bo.flush_l2 ? "flushed before each" : "warm", r.min_us, r.median_us, r.p90_us);
  std::cout << fmt::format("  {:>3}  {:<52} {:>10} {:>11} {:>10} {:>9} {:>8} {:>9}\n", "#",
                           "kernel", "median us", "bytes", "FLOPs", "GB/s", "TFLOP/s", "roofline");
  nlohmann::json kernels = nlohmann::json::array();
  double total_us = 0;
  for (const KernelBench& k : r.kernels) {
    total_us += k.median_us;
    std::cout << fmt::format(
        "  {:>3}  {:<52} {:>10.2f} {:>11} {:>10.3g} {:>9.0f} {:>8.2f} {:>8.0f}%\n", k.step, k.name,
        k.median_us, human_bytes(static_cast<double>(k.bytes)), k.flops, k.gbs, k.tflops,
        k.roofline_pct);
    kernels.push_back(kernel_json(k));
  }
  std::cout << fmt::format("  sum of kernel medians {:.2f} us over {} kernels\n", total_us,
                           r.kernels.size());
  if (!o.profile.empty())
    std::cout << "wrote the trace " << o.profile << " (chrome://tracing or ui.perfetto.dev)\n";
  if (!o.json.empty()) {
    nlohmann::json j = {
        {"model", o.model.model},
        {"device", r.device},
        {"copy_gbs", r.copy_gbs},
        {"cuda_graph", r.cuda_graph},
        {"latency_us", {{"min", r.min_us}, {"median", r.median_us}, {"p90", r.p90_us}}},
        {"kernels", kernels}};
    write_output("--json", o.json,
                 j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  return 0;
}

}  // namespace

void add_bench(CLI::App& app, Runner& run) {
  auto o = std::make_shared<BenchCmdOptions>();
  CLI::App* cmd =
      app.add_subcommand("bench", "time a model or engine on the GPU, end to end and per kernel");
  o->model.add_to(*cmd, "ONNX model or .braze engine file");
  o->build.add_to(*cmd);
  o->in.add_to(*cmd);
  cmd->add_option("--warmup", o->warmup, "untimed runs first (default 20)")
      ->check(CLI::Range(0, 10000000));
  cmd->add_option("--iters", o->iters, "timed runs (default 200)")->check(CLI::Range(1, 10000000));
  cmd->add_flag("--no-cuda-graph", o->no_graph,
                "launch kernel by kernel instead of one CUDA graph");
  cmd->add_flag("--warm-l2", o->warm_l2,
                "do not flush the L2 cache before each timed run (it is flushed by default)");
  cmd->add_option("--profile", o->profile, "write a Chrome-trace JSON of one run");
  cmd->add_option("--json", o->json, "write the numbers as JSON");
  cmd->callback([o, &run] { run = [o] { return run_bench(*o); }; });
}

}  // namespace braze::cli
