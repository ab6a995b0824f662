// braze::inspect: the graph after the passes and its fusion plan, as `braze inspect` shows them.
#include <braze/braze.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/pipeline.h"
#include "api/plan_view.h"
#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/precision.h"
#include "graph/registry.h"
#include "runtime/gpu/engine.h"

namespace braze {

namespace {

nlohmann::json value_json(const graph::Value& v) {
  nlohmann::json j = {{"name", v.name}, {"dtype", dtype_name(v.dtype)}};
  if (v.has_shape)
    j["shape"] = v.shape;
  else
    j["shape"] = nullptr;
  return j;
}

struct OpChanges {
  std::map<std::string, int> after, removed;
  int before_total = 0, after_total = 0;
};

OpChanges op_changes(const graph::Graph& g, const std::map<std::string, int>& imported) {
  OpChanges c;
  c.after = graph::passes::op_counts(g);
  for (const auto& [op, n] : imported) {
    const int left = c.after.count(op) ? c.after.at(op) : 0;
    if (n > left) c.removed[op] = n - left;
    c.before_total += n;
  }
  for (const auto& [k, v] : c.after) c.after_total += v;
  return c;
}

nlohmann::json inspect_json(const std::string& path, const api::LoadedModel& m, const OpChanges& c,
                            const api::PlanView& view) {
  const graph::Graph& g = m.imported.graph;
  nlohmann::json j;
  j["model"] = path;
  j["producer"] = m.imported.producer;
  j["opset"] = m.imported.opset;
  j["notes"] = m.imported.notes;
  j["nodes_imported"] = c.before_total;
  j["nodes"] = c.after_total;
  j["op_counts"] = c.after;
  j["folded_away"] = c.removed;
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
    nlohmann::json nj = {
        {"name", n.name}, {"op", n.op_type()}, {"kind", graph::fusion_kind_name(n.op->kind)}};
    for (graph::ValueId v : n.inputs)
      nj["inputs"].push_back(v == graph::kNoValue ? nlohmann::json(nullptr)
                                                  : nlohmann::json(g.value(v).name));
    for (graph::ValueId v : n.outputs)
      nj["outputs"].push_back(v == graph::kNoValue ? nlohmann::json(nullptr)
                                                   : value_json(g.value(v)));
    j["graph"].push_back(nj);
  }
  nlohmann::json pj = api::plan_json(g, view);
  for (auto& [k, val] : pj.items()) j[k] = val;
  return j;
}

std::string inspect_text(const std::string& path, const api::LoadedModel& m, const OpChanges& c,
                         const api::PlanView& view) {
  const graph::Graph& g = m.imported.graph;
  std::ostringstream os;
  os << fmt::format("model     {}\nproducer  {}\nopset     {}\n", path, m.imported.producer,
                    m.imported.opset);
  os << "inputs\n";
  for (graph::ValueId v : g.inputs())
    os << fmt::format("  {:<32} {}\n", g.value(v).name, graph::value_type_str(g.value(v)));
  os << "outputs\n";
  for (const auto& out : g.outputs())
    os << fmt::format("  {:<32} {}\n", out.name, graph::value_type_str(g.value(out.value)));
  os << fmt::format("nodes     {} imported, {} after the passes\n", c.before_total, c.after_total);
  os << "op counts\n";
  for (const auto& [op, n] : c.after) os << fmt::format("  {:<24} {}\n", op, n);
  if (!c.removed.empty()) {
    os << "folded or removed by the passes\n";
    for (const auto& [op, n] : c.removed) os << fmt::format("  {:<24} {}\n", op, n);
  }
  for (const std::string& line : m.passes.log) os << "  " << line << "\n";
  os << "graph\n" << g;
  api::print_plan_text(os, g, view);
  return os.str();
}

}  // namespace

InspectReport inspect(const std::string& onnx_path, const CompileOptions& o) {
  api::check_precision(o.precision);
  api::ModelSource src;
  src.path = onnx_path;
  api::Dumps d;
  if (api::wants_dump(o, "graph")) d.graph = o.dump_to;
  if (api::wants_dump(o, "passes")) d.passes = o.dump_to;
  InspectReport r;
  auto t = std::chrono::steady_clock::now();
  auto lap = [&t] {
    const auto now = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(now - std::exchange(t, now)).count();
  };
  api::LoadedModel m = api::load_model(src, {o.shapes.begin(), o.shapes.end()}, d);
  r.import_seconds = lap();
  if (graph::passes::precision_dtype(o.precision) != DType::Float32)
    m.imported.graph = api::at_precision(m.imported.graph, o.precision);
  r.precision_seconds = lap();
  const graph::Graph& g = m.imported.graph;
  gpu::EngineOptions eo = gpu::default_engine_options(o.arch);
  eo.target.tf32 = api::tf32_gemms(o.precision);
  const fusion::Plan plan = codegen::plan_for(g, o.fuse, eo.target);
  r.plan_seconds = lap();
  const std::vector<gpu::Step> steps = gpu::generate_steps(g, plan, eo.target);
  r.codegen_seconds = lap();
  const api::PlanView view = api::make_plan_view(g, plan, steps);
  const OpChanges c = op_changes(g, m.imported_ops);
  r.notes = m.imported.notes;
  r.text =
      inspect_text(onnx_path, m, c, view) +
      fmt::format(
          "time: import and passes {:.2f} s, precision {:.2f} s, plan {:.2f} s, codegen {:.2f} s\n",
          r.import_seconds, r.precision_seconds, r.plan_seconds, r.codegen_seconds);
  nlohmann::json j = inspect_json(onnx_path, m, c, view);
  j["seconds"] = {{"import_and_passes", r.import_seconds},
                  {"precision", r.precision_seconds},
                  {"plan", r.plan_seconds},
                  {"codegen", r.codegen_seconds}};
  r.json = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::ostringstream dot, html;
  api::write_plan_dot(dot, g, view);
  api::write_plan_html(html, g, view, onnx_path);
  r.dot = dot.str();
  r.html = html.str();
  return r;
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}

}  // namespace braze
