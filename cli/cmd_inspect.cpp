// braze inspect MODEL: the imported graph after the passes — op counts by type, what
// folded away, inputs and outputs, every node with its values' dtypes and shapes — and the
// fusion plan: kernels, values crossing them with their bytes, merges refused and why.
#include <braze/error.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/model_options.h"
#include "cli/plan_view.h"
#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/precision.h"
#include "graph/registry.h"
#include "runtime/gpu/engine.h"

namespace braze::cli {

namespace {

struct InspectOptions {
  ModelOptions model;
  bool json = false;
  bool no_fuse = false;
  std::string dot, html;
  std::string arch, precision = "fp32";  // the plan `compile` builds with them
};

nlohmann::json value_json(const graph::Value& v) {
  nlohmann::json j = {{"name", v.name}, {"dtype", dtype_name(v.dtype)}};
  if (v.has_shape) j["shape"] = v.shape;
  else j["shape"] = nullptr;
  return j;
}

int run_inspect(const InspectOptions& o) {
  LoadedModel m = load_model(o.model);
  if (graph::passes::precision_dtype(o.precision) != DType::Float32)
    m.imported.graph = at_precision(m.imported.graph, o.precision);
  const graph::Graph& g = m.imported.graph;
  gpu::EngineOptions eo = gpu::default_engine_options(o.arch);
  eo.target.tf32 = tf32_gemms(o.precision);
  fusion::Plan plan = codegen::plan_for(g, !o.no_fuse, eo.target);
  PlanView view = make_plan_view(g, plan, gpu::generate_steps(g, plan, eo.target));
  if (!o.dot.empty()) {
    std::ofstream f(o.dot);
    if (!f) throw UserError(fmt::format("--dot {}: cannot open for writing", o.dot));
    write_plan_dot(f, g, view);
  }
  if (!o.html.empty()) {
    std::ofstream f(o.html);
    if (!f) throw UserError(fmt::format("--html {}: cannot open for writing", o.html));
    write_plan_html(f, g, view, o.model.model);
  }
  std::map<std::string, int> after = graph::passes::op_counts(g);
  std::map<std::string, int> removed;
  for (const auto& [op, n] : m.imported_ops) {
    int left = after.count(op) ? after.at(op) : 0;
    if (n > left) removed[op] = n - left;
  }
  int n_before = 0, n_after = 0;
  for (auto& [k, v] : m.imported_ops) n_before += v;
  for (auto& [k, v] : after) n_after += v;

  if (o.json) {
    nlohmann::json j;
    j["model"] = o.model.model;
    j["producer"] = m.imported.producer;
    j["opset"] = m.imported.opset;
    j["notes"] = m.imported.notes;
    j["nodes_imported"] = n_before;
    j["nodes"] = n_after;
    j["op_counts"] = after;
    j["folded_away"] = removed;
    j["passes"] = m.passes.log;
    for (graph::ValueId v : g.inputs()) j["inputs"].push_back(value_json(g.value(v)));
    for (const auto& out : g.outputs()) {
      nlohmann::json vj = value_json(g.value(out.value));
      vj["name"] = out.name;
      j["outputs"].push_back(vj);
    }
    j["graph"] = nlohmann::json::array();
    for (graph::NodeId id : g.topo_order()) {
      const graph::Node& n = g.node(id);
      nlohmann::json nj = {{"name", n.name}, {"op", n.op_type()}, {"kind", graph::fusion_kind_name(n.op->kind)}};
      for (graph::ValueId v : n.inputs) nj["inputs"].push_back(v == graph::kNoValue ? nlohmann::json(nullptr) : nlohmann::json(g.value(v).name));
      for (graph::ValueId v : n.outputs) nj["outputs"].push_back(v == graph::kNoValue ? nlohmann::json(nullptr) : value_json(g.value(v)));
      j["graph"].push_back(nj);
    }
    nlohmann::json pj = plan_json(g, view);
    for (auto& [k, val] : pj.items()) j[k] = val;
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  std::cout << fmt::format("model     {}\nproducer  {}\nopset     {}\n", o.model.model, m.imported.producer,
                           m.imported.opset);
  std::cout << "inputs\n";
  for (graph::ValueId v : g.inputs())
    std::cout << fmt::format("  {:<32} {}\n", g.value(v).name, graph::value_type_str(g.value(v)));
  std::cout << "outputs\n";
  for (const auto& out : g.outputs())
    std::cout << fmt::format("  {:<32} {}\n", out.name, graph::value_type_str(g.value(out.value)));
  std::cout << fmt::format("nodes     {} imported, {} after the passes\n", n_before, n_after);
  std::cout << "op counts\n";
  for (const auto& [op, n] : after) std::cout << fmt::format("  {:<24} {}\n", op, n);
  if (!removed.empty()) {
    std::cout << "folded or removed by the passes\n";
    for (const auto& [op, n] : removed) std::cout << fmt::format("  {:<24} {}\n", op, n);
  }
  for (const std::string& line : m.passes.log) std::cout << "  " << line << "\n";
  std::cout << "graph\n" << g;
  print_plan_text(std::cout, g, view);
  return 0;
}

}  // namespace

void add_inspect(CLI::App& app, Runner& run) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "show the imported graph after the passes");
  o->model.add_to(*cmd);
  cmd->add_flag("--json", o->json, "print JSON instead of text");
  cmd->add_flag("--no-fuse", o->no_fuse, "show the plan with one node per kernel");
  cmd->add_option("--dot", o->dot, "write the graph with each kernel as a coloured cluster (Graphviz DOT)");
  cmd->add_option("--html", o->html, "write the same as a standalone HTML page");
  cmd->add_option("--arch", o->arch, "plan for this GPU architecture, as compile does (default: the device's, else sm_90)");
  add_precision_option(*cmd, o->precision);
  cmd->callback([o, &run] { run = [o] { return run_inspect(*o); }; });
}

}  // namespace braze::cli
