// braze::inspect: the graph after the passes and its fusion plan, as `braze inspect` shows them.
#include <braze/braze.h>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/compile_script.h"
#include "api/plan_view.h"
#include "graph/passes/pipeline.h"
#include "graph/registry.h"

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

nlohmann::json inspect_json(const std::string& path, const api::Script& s, const OpChanges& c,
                            const api::PlanView& view) {
  const graph::Graph& g = s.graph;
  nlohmann::json j;
  j["model"] = path;
  j["producer"] = s.producer;
  j["opset"] = s.opset;
  j["notes"] = s.notes;
  j["nodes_imported"] = c.before_total;
  j["nodes"] = c.after_total;
  j["op_counts"] = c.after;
  j["folded_away"] = c.removed;
  j["passes"] = s.pass_log;
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

std::string inspect_text(const std::string& path, const api::Script& s, const OpChanges& c,
                         const api::PlanView& view) {
  const graph::Graph& g = s.graph;
  std::ostringstream os;
  os << fmt::format("model     {}\nproducer  {}\nopset     {}\n", path, s.producer, s.opset);
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
  for (const std::string& line : s.pass_log) os << "  " << line << "\n";
  os << "graph\n" << g;
  api::print_plan_text(os, g, view);
  return os.str();
}

std::string steps_text(const std::vector<CompileStep>& steps) {
  std::string out = "steps\n";
  for (const CompileStep& st : steps)
    out += fmt::format("  {:<10} {:>7.3f} s  {}\n", st.name, st.seconds, st.summary);
  return out;
}

nlohmann::json steps_json(const std::vector<CompileStep>& steps) {
  nlohmann::json j = nlohmann::json::array();
  for (const CompileStep& st : steps)
    j.push_back({{"name", st.name}, {"seconds", st.seconds}, {"summary", st.summary}});
  return j;
}

}  // namespace

InspectReport inspect(const std::string& onnx_path, const CompileOptions& o) {
  api::ModelSource src;
  src.path = onnx_path;
  api::ScriptOptions so;
  so.compile = o;
  so.through = api::Through::Codegen;
  const api::Script s = api::compile_script(src, so);
  const graph::Graph& g = s.graph;
  const api::PlanView view = api::make_plan_view(g, s.plan, s.steps);
  const OpChanges c = op_changes(g, s.imported_ops);
  InspectReport r;
  r.notes = s.notes;
  r.steps = s.log;
  r.text = inspect_text(onnx_path, s, c, view) + steps_text(s.log);
  nlohmann::json j = inspect_json(onnx_path, s, c, view);
  j["steps"] = steps_json(s.log);
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
