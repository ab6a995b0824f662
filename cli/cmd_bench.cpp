// braze bench MODEL|ENGINE: end-to-end latency of the plan on the GPU (min, median, p90;
// one CUDA graph by default), then one row per kernel: time, bytes moved, FLOPs, achieved
// GB/s and TFLOP/s, and the share of the device's roofline (the copy bandwidth measured in
// the same run, datasheet peak rates). --profile writes a Chrome trace; --json the numbers.
#include <braze/error.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/gpu_build.h"
#include "cli/model_options.h"
#include "cli/run_inputs.h"
#include "codegen/capabilities.h"
#include "graph/registry.h"
#include "runtime/gpu/bench.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine_file.h"

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

int run_bench(const BenchCmdOptions& o) {
  std::shared_ptr<gpu::Engine> engine;
  gpu::BuildReport report;
  GivenInputs given;
  if (gpu::is_engine_file(o.model.model)) {
    gpu::LoadedEngine le = gpu::load_engine(o.model.model);
    refuse_build_options_for_engine(o.model, o.build, le.info.precision);
    engine = le.engine;
    // The engine holds the graph: its inputs name the files (it is no ONNX model to import).
    if (!o.in.inputs.empty()) given = read_given_inputs(o.in, names_of(input_infos(engine->graph())));
  } else {
    if (!o.in.inputs.empty()) given = read_given_inputs(o.in, model_input_names(o.model.model));
    LoadedModel m = load_model(o.model, given.shapes);
    BuiltEngine b = build_engine(m.imported.graph, o.build, o.model);
    engine = b.engine;
    report = b.report;
  }
  const graph::Graph& g = engine->graph();
  if (!gpu::gpu_available()) {
    std::cout << "no GPU (" << gpu::gpu_unavailable_reason() << "): nothing to time. What each kernel moves:\n";
    for (const gpu::Step& s : engine->steps())
      std::cout << fmt::format("  {:<52} {:>12}  {:.3g} FLOP\n", s.kernel ? s.kernel->name : "(CPU reference)",
                               human_bytes(static_cast<double>(gpu::step_bytes(g, s))), gpu::step_flops(g, s));
    return 1;
  }
  if (report.tuned || report.tuned_cached) print_build_summary(*engine, &report);
  print_fallbacks(*engine);
  std::vector<Tensor> inputs = inputs_for(input_infos(g), o.in, given);
  gpu::Session session(engine);
  gpu::BenchOptions bo;
  bo.warmup = o.warmup;
  bo.iters = o.iters;
  bo.cuda_graph = !o.no_graph;
  bo.flush_l2 = !o.warm_l2;
  gpu::BenchResult r = gpu::benchmark(session, inputs, bo);
  gpu::CopyBandwidth copy = gpu::measure_copy_bandwidth();
  gpu::PeakRates peak = gpu::peak_rates(engine->arch());
  const gpu::DeviceInfo& dev = gpu::device_info();
  std::cout << fmt::format("device {} ({}, {} SMs); copy bandwidth {:.0f} GB/s, measured now\n", dev.name,
                           engine->arch().name(), dev.sms, copy.gbs);
  std::cout << fmt::format("end to end ({}, {} runs, L2 {}): min {:.2f} us, median {:.2f} us, p90 {:.2f} us\n",
                           r.used_graph ? "one CUDA graph" : o.no_graph ? "stream launches" : "stream launches, no graph: one kernel or a CPU step", o.iters,
                           bo.flush_l2 ? "flushed before each" : "warm", r.latency_us.min,
                           r.latency_us.median, r.latency_us.p90);
  std::cout << fmt::format("  {:>3}  {:<52} {:>10} {:>11} {:>10} {:>9} {:>8} {:>9}\n", "#", "kernel", "median us",
                           "bytes", "FLOPs", "GB/s", "TFLOP/s", "roofline");
  nlohmann::json kernels = nlohmann::json::array();
  double total_us = 0;
  for (const gpu::KernelTiming& k : r.kernels) {
    const gpu::Step& s = engine->steps()[k.step];
    double secs = k.us.median * 1e-6;
    double gbs = static_cast<double>(k.bytes) / secs / 1e9;
    double tflops = k.flops / secs / 1e12;
    // Tensor-core GEMMs against the tensor-core peak of their operands' type (tf32 for float).
    double rate = peak.fp32;
    if (s.kernel->kind == fusion::GroupKind::Attention) rate = peak.fp16_tensor;  // float16 / bfloat16 only
    if (s.kernel->kind == fusion::GroupKind::Gemm) {
      const bool tc = s.kernel->tunables.count("tc") && s.kernel->tunables.at("tc") != 0;
      const DType out = g.value(s.group.outputs[0]).dtype;
      DType operand = out;
      for (graph::NodeId id : s.group.nodes)
        if (g.node(id).op->kind == graph::FusionKind::OutEWiseFusable) operand = g.value(g.node(id).inputs[0]).dtype;
      if (tc && operand == DType::Float32)
        rate = peak.tf32_tensor;
      else if (tc || is_half(out))
        rate = peak.fp16_tensor;
    }
    double floor_s = std::max(static_cast<double>(k.bytes) / (copy.gbs * 1e9), k.flops / (rate * 1e12));
    double pct = 100.0 * floor_s / secs;
    total_us += k.us.median;
    std::cout << fmt::format("  {:>3}  {:<52} {:>10.2f} {:>11} {:>10.3g} {:>9.0f} {:>8.2f} {:>8.0f}%\n", k.step,
                             s.kernel->name, k.us.median, human_bytes(static_cast<double>(k.bytes)), k.flops, gbs,
                             tflops, pct);
    std::vector<std::string> nodes;
    for (graph::NodeId id : s.group.nodes) nodes.push_back(g.node(id).name);
    nlohmann::json kj = {{"step", k.step}, {"name", s.kernel->name}, {"kind", fusion::group_kind_name(s.group.kind)},
                         {"schedule", codegen::schedule_name(*s.kernel)}, {"nodes", nodes}, {"median_us", k.us.median},
                         {"min_us", k.us.min}, {"bytes", k.bytes}, {"flops", k.flops}, {"gbs", gbs},
                         {"tflops", tflops}, {"roofline_pct", pct}, {"tunables", s.kernel->tunables}};
    if (std::optional<codegen::GemmShape> gs = codegen::gemm_shape(g, s.group))
      kj["gemm"] = {{"batch", gs->batch}, {"m", gs->m}, {"n", gs->n}, {"k", gs->k},
                    {"dtype", dtype_name(gs->dtype)}, {"schedule", codegen::schedule_name(*s.kernel)}};
    if (std::optional<codegen::AttentionShape> as = codegen::attention_shape(g, s.group))
      kj["attention"] = {{"batch", as->batch}, {"sq", as->sq}, {"sk", as->sk}, {"d", as->d},
                         {"dtype", dtype_name(as->dtype)}, {"mask", as->mask}};
    kernels.push_back(kj);
  }
  std::cout << fmt::format("  sum of kernel medians {:.2f} us over {} kernels\n", total_us, r.kernels.size());
  if (!o.profile.empty()) {
    gpu::write_profile(session, o.profile);
    std::cout << "wrote the trace " << o.profile << " (chrome://tracing or ui.perfetto.dev)\n";
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    if (!out) throw UserError(fmt::format("--json {}: cannot open for writing", o.json));
    nlohmann::json j = {{"model", o.model.model},
                        {"device", dev.name},
                        {"copy_gbs", copy.gbs},
                        {"cuda_graph", r.used_graph},
                        {"latency_us", {{"min", r.latency_us.min}, {"median", r.latency_us.median}, {"p90", r.latency_us.p90}}},
                        {"kernels", kernels}};
    out << j.dump(2) << "\n";
  }
  return 0;
}

}  // namespace

void add_bench(CLI::App& app, Runner& run) {
  auto o = std::make_shared<BenchCmdOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "time a model or engine on the GPU, end to end and per kernel");
  o->model.add_to(*cmd, "ONNX model or .braze engine file");
  o->build.add_to(*cmd);
  o->in.add_to(*cmd);
  cmd->add_option("--warmup", o->warmup, "untimed runs first (default 20)")->check(CLI::Range(0, 10000000));
  cmd->add_option("--iters", o->iters, "timed runs (default 200)")->check(CLI::Range(1, 10000000));
  cmd->add_flag("--no-cuda-graph", o->no_graph, "launch kernel by kernel instead of one CUDA graph");
  cmd->add_flag("--warm-l2", o->warm_l2, "do not flush the L2 cache before each timed run (it is flushed by default)");
  cmd->add_option("--profile", o->profile, "write a Chrome-trace JSON of one run");
  cmd->add_option("--json", o->json, "write the numbers as JSON");
  cmd->callback([o, &run] { run = [o] { return run_bench(*o); }; });
}

}  // namespace braze::cli
