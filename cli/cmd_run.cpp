// braze run MODEL: runs the model on given inputs (.pb / .npy files or a folder) or on
// seeded random ones, prints a summary of each output, writes them as .npy with
// --outputs, and with --check compares them with expected outputs (exit 1 on mismatch).
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
#include "cli/model_options.h"
#include "frontend/tensor_io.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"

namespace braze::cli {

namespace fs = std::filesystem;

namespace {

struct RunOptions {
  ModelOptions model;
  std::string backend = "reference";
  std::vector<std::string> inputs;
  std::string outputs;
  std::string check;
  uint64_t seed = 0;
  std::vector<int64_t> int_range;
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

int run_run(const RunOptions& o) {
  runtime::BackendFn backend = make_backend(o.backend);
  runtime::RandomSpec rs;
  rs.seed = o.seed;
  if (!o.int_range.empty()) {
    if (o.int_range.size() != 2) throw UserError("--int-range takes LO,HI");
    rs.int_lo = o.int_range[0];
    rs.int_hi = o.int_range[1] + 1;  // inclusive on the command line
  }

  std::vector<runtime::InputFile> files;
  std::map<std::string, Shape> file_shapes;
  if (!o.inputs.empty()) {
    files = runtime::read_input_files({o.inputs.begin(), o.inputs.end()});
    // Shapes of the given inputs specialise the model; a first import learns the names.
    frontend::ImportResult probe = frontend::import_model_file(o.model.model);
    std::vector<std::string> names;
    for (graph::ValueId v : probe.graph.inputs()) names.push_back(probe.graph.value(v).name);
    std::vector<Tensor> ordered = runtime::match_inputs(names, files);
    files.clear();
    for (size_t i = 0; i < names.size(); ++i) {
      file_shapes[names[i]] = ordered[i].shape();
      files.push_back({names[i], ordered[i]});
    }
  }
  LoadedModel m = load_model(o.model, file_shapes);
  const graph::Graph& g = m.imported.graph;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    if (!files.empty()) {
      inputs.push_back(files.at(i).tensor);
    } else {
      inputs.push_back(runtime::random_tensor(v.dtype, v.shape, o.seed * 1000003 + i, rs));
      std::cerr << fmt::format("note: input '{}' is random {} (seed {})\n", v.name, graph::value_type_str(v), o.seed);
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  runtime::BackendRun ran = backend(g, inputs);
  std::vector<Tensor>& outs = ran.outputs;
  for (const std::string& f : ran.fallbacks) std::cerr << "note: ran on the CPU reference: " << f << "\n";
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("ran {} on the {} backend in {:.2f} ms ({} nodes)\n", o.model.model, o.backend, ms,
                           g.num_live_nodes());
  for (size_t i = 0; i < outs.size(); ++i)
    std::cout << fmt::format("  {} {}{}  {}\n", g.outputs()[i].name, dtype_name(outs[i].dtype()),
                             shape_str(outs[i].shape()), summarize(outs[i]));
  if (!o.outputs.empty()) {
    std::error_code ec;
    fs::create_directories(o.outputs, ec);
    if (ec) throw UserError(fmt::format("--outputs {}: cannot create the folder", o.outputs));
    for (size_t i = 0; i < outs.size(); ++i)
      frontend::write_npy(fs::path(o.outputs) / (file_safe(g.outputs()[i].name) + ".npy"), outs[i]);
    std::cout << fmt::format("wrote {} output{} to {}\n", outs.size(), outs.size() == 1 ? "" : "s", o.outputs);
  }
  if (o.check.empty()) return 0;
  std::vector<std::string> names;
  for (const auto& out : g.outputs()) names.push_back(out.name);
  std::vector<Tensor> expected = runtime::match_inputs(names, runtime::read_input_files({o.check}, "output_"));
  bool ok = true;
  for (size_t i = 0; i < outs.size(); ++i) {
    runtime::Comparison c = runtime::compare(outs[i], expected[i], runtime::default_tolerance(expected[i].dtype()));
    ok = ok && c.ok;
    std::cout << fmt::format("check {} {}: {}\n", names[i], c.ok ? "ok" : "MISMATCH", c.summary(outs[i], expected[i]));
  }
  return ok ? 0 : 1;
}

}  // namespace

void add_run(CLI::App& app, Runner& run) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "run a model on given or random inputs");
  o->model.add_to(*cmd);
  cmd->add_option("--backend", o->backend, "where to run it")->check(CLI::IsMember(backend_names()));
  cmd->add_option("--inputs", o->inputs, "input files (.pb or .npy), or a folder of them; random when absent");
  cmd->add_option("--outputs", o->outputs, "write each output as <name>.npy into this folder");
  cmd->add_option("--check", o->check, "folder of expected outputs (output_N.pb or <name>.npy) to compare with");
  cmd->add_option("--seed", o->seed, "seed for random inputs");
  cmd->add_option("--int-range", o->int_range, "range LO,HI (inclusive) for random integer inputs (default 0,9)")
      ->delimiter(',');
  cmd->callback([o, &run] { run = [o] { return run_run(*o); }; });
}

}  // namespace braze::cli
