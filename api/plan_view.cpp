#include "api/plan_view.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <braze/braze.h>
#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "graph/registry.h"

namespace braze::api {

using graph::kNoValue;
using graph::NodeId;
using graph::ValueId;

namespace {

uint64_t value_bytes(const graph::Value& v) {
  return v.has_shape ? static_cast<uint64_t>(checked_numel(v.shape)) * dtype_size(v.dtype) : 0;
}

// A colour per kernel kind, lighter for fallbacks.
std::string kind_color(const std::string& kind) {
  if (kind == "gemm") return "#9ecae1";
  if (kind == "reduction") return "#a1d99b";
  if (kind == "pointwise") return "#fdd0a2";
  if (kind == "opaque") return "#dadaeb";
  return "#fc9272";
}

std::string escape_html(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

std::string escape_dot(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

}  // namespace

PlanView make_plan_view(const graph::Graph& g, const fusion::Plan& plan,
                        const std::vector<gpu::Step>& steps) {
  PlanView v;
  v.kernel_of.assign(g.num_nodes(), -1);
  for (size_t i = 0; i < steps.size(); ++i) {
    const gpu::Step& s = steps[i];
    PlanView::Kernel k;
    k.kind = s.kernel ? std::string(fusion::group_kind_name(s.group.kind)) : "fallback";
    k.name = s.kernel ? s.kernel->name : "(CPU reference)";
    k.schedule = s.kernel ? codegen::schedule_name(g, *s.kernel) : "cpu";
    k.fallback = s.fallback_reason;
    k.split = s.split_note;
    if (s.kernel) {
      k.tunables = s.kernel->tunables;
      k.grid = s.kernel->grid;
      k.block = s.kernel->block;
    }
    k.nodes = s.group.nodes;
    for (NodeId id : k.nodes) v.kernel_of[id] = static_cast<int>(i);
    v.kernels.push_back(std::move(k));
  }
  auto users = g.users();
  for (size_t i = 0; i < steps.size(); ++i)
    for (ValueId val : steps[i].group.outputs) {
      PlanView::Crossing c{
          val, value_bytes(g.value(val)), static_cast<int>(i), {}, g.is_graph_output(val)};
      std::set<int> seen;
      for (NodeId u : users[val])
        if (v.kernel_of[u] != static_cast<int>(i) && seen.insert(v.kernel_of[u]).second)
          c.consumers.push_back(v.kernel_of[u]);
      v.crossings.push_back(std::move(c));
    }
  for (const fusion::RefusedMerge& r : plan.refused) {
    const graph::Node& p = g.node(r.producer);
    const graph::Node& c = g.node(r.consumer);
    v.refused.push_back(fmt::format("'{}' ({}) -> '{}' ({}): {}", p.name, p.op_type(), c.name,
                                    c.op_type(), r.reason));
  }
  return v;
}

void print_plan_text(std::ostream& os, const graph::Graph& g, const PlanView& v) {
  size_t fallbacks = std::count_if(v.kernels.begin(), v.kernels.end(),
                                   [](const auto& k) { return k.kind == "fallback"; });
  os << fmt::format("kernels   {} ({} on the CPU reference) for {} nodes\n",
                    v.kernels.size() - fallbacks, fallbacks, g.num_live_nodes());
  for (size_t i = 0; i < v.kernels.size(); ++i) {
    const auto& k = v.kernels[i];
    std::vector<std::string> names;
    for (NodeId id : k.nodes)
      names.push_back(fmt::format("'{}' ({})", g.node(id).name, g.node(id).op_type()));
    const std::string kind = k.kind == "gemm" ? fmt::format("gemm {}", k.schedule) : k.kind;
    os << fmt::format("  #{:<3} {:<10} {}\n        nodes: {}\n", i, kind, k.name,
                      fmt::join(names, ", "));
    if (k.kind != "fallback") {
      std::vector<std::string> tn;
      for (const auto& [key, val] : k.tunables) tn.push_back(fmt::format("{}={}", key, val));
      os << fmt::format("        grid {}x{}x{}, block {}{}\n", k.grid[0], k.grid[1], k.grid[2],
                        k.block[0], tn.empty() ? "" : ", " + fmt::format("{}", fmt::join(tn, " ")));
    }
    if (!k.fallback.empty()) os << "        runs on the CPU reference: " << k.fallback << "\n";
    if (!k.split.empty()) os << "        " << k.split << "\n";
  }
  uint64_t total = 0;
  os << "values crossing kernel boundaries\n";
  for (const auto& c : v.crossings) {
    total += c.bytes;
    std::vector<std::string> to;
    for (int k : c.consumers) to.push_back("#" + std::to_string(k));
    if (c.graph_output) to.push_back("graph output");
    const graph::Value& val = g.value(c.value);
    os << fmt::format("  %{:<40} {:<22} {:>12}  #{} -> {}\n", val.name, graph::value_type_str(val),
                      format_bytes(static_cast<double>(c.bytes)), c.producer, fmt::join(to, ", "));
  }
  os << fmt::format("  total written between kernels: {}\n",
                    format_bytes(static_cast<double>(total)));
  os << fmt::format("merges refused ({})\n", v.refused.size());
  for (const std::string& r : v.refused) os << "  " << r << "\n";
}

nlohmann::json plan_json(const graph::Graph& g, const PlanView& v) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : v.kernels) {
    nlohmann::json nodes = nlohmann::json::array(), ops = nlohmann::json::array();
    for (NodeId id : k.nodes) {
      nodes.push_back(g.node(id).name);
      ops.push_back(g.node(id).op_type());
    }
    nlohmann::json kj = {{"name", k.name},
                         {"kind", k.kind},
                         {"schedule", k.schedule},
                         {"nodes", nodes},
                         {"ops", ops}};
    if (k.kind != "fallback") {
      kj["tunables"] = k.tunables;
      kj["grid"] = k.grid;
      kj["block"] = k.block;
    }
    if (!k.fallback.empty()) kj["fallback_reason"] = k.fallback;
    if (!k.split.empty()) kj["split"] = k.split;
    kernels.push_back(kj);
  }
  nlohmann::json crossings = nlohmann::json::array();
  for (const auto& c : v.crossings)
    crossings.push_back({{"value", g.value(c.value).name},
                         {"bytes", c.bytes},
                         {"producer", c.producer},
                         {"consumers", c.consumers},
                         {"graph_output", c.graph_output}});
  return {{"kernels", kernels}, {"crossing_values", crossings}, {"refused_merges", v.refused}};
}

void write_plan_dot(std::ostream& os, const graph::Graph& g, const PlanView& v) {
  os << "digraph braze {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
        "fontname=\"Helvetica\", "
        "fontsize=10];\n";
  for (size_t i = 0; i < v.kernels.size(); ++i) {
    const auto& k = v.kernels[i];
    os << fmt::format(
        "  subgraph cluster_{} {{\n    label=\"#{} {}\\n{}\";\n    style=\"filled,rounded\"; "
        "fillcolor=\"{}\"; color=\"#555555\"; fontname=\"Helvetica\"; fontsize=10;\n",
        i, i, k.kind, escape_dot(k.name), kind_color(k.kind));
    for (NodeId id : k.nodes)
      os << fmt::format("    n{} [label=\"{}\\n{}\", fillcolor=\"white\"];\n", id,
                        g.node(id).op_type(), escape_dot(g.node(id).name));
    os << "  }\n";
  }
  for (ValueId in : g.inputs())
    os << fmt::format("  v{} [shape=ellipse, fillcolor=\"#eeeeee\", label=\"{}\\n{}\"];\n", in,
                      escape_dot(g.value(in).name), graph::value_type_str(g.value(in)));
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const graph::Node& n = g.node(static_cast<NodeId>(i));
    if (n.dead) continue;
    for (ValueId in : n.inputs) {
      if (in == kNoValue || g.value(in).constant) continue;
      NodeId p = g.value(in).producer;
      std::string from = p == graph::kNoNode ? fmt::format("v{}", in) : fmt::format("n{}", p);
      bool crossing = p == graph::kNoNode || v.kernel_of[p] != v.kernel_of[i];
      os << fmt::format(
          "  {} -> n{}{};\n", from, i,
          crossing ? fmt::format(" [label=\"{}\", fontsize=8, color=\"#cc3333\"]",
                                 format_bytes(static_cast<double>(value_bytes(g.value(in)))))
                   : "");
    }
  }
  for (const auto& o : g.outputs()) {
    os << fmt::format("  out_{} [shape=ellipse, fillcolor=\"#eeeeee\", label=\"{}\"];\n", o.value,
                      escape_dot(o.name));
    NodeId p = g.value(o.value).producer;
    if (p != graph::kNoNode) os << fmt::format("  n{} -> out_{};\n", p, o.value);
  }
  os << "}\n";
}

namespace {

// The HTML page's layout: one band per kernel in execution order; its nodes as boxes inside,
// wrapping; edges that cross kernels drawn as curves.
constexpr int kWidth = 1100, kBoxW = 150, kBoxH = 34, kGap = 10, kPad = 12,
              kPerRow = (kWidth - 2 * kPad) / (kBoxW + kGap);

// Kernel i's band, `h` high at `y`, as SVG.
std::string html_band(size_t i, const PlanView::Kernel& k, int y, int h) {
  std::string tip = escape_html(k.name + (k.fallback.empty() ? "" : " — CPU: " + k.fallback));
  return fmt::format(
      "<g><title>{}</title><rect x=\"4\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"10\" "
      "fill=\"{}\" "
      "stroke=\"#555\"/><text x=\"14\" y=\"{}\" class=\"k\">#{} {} — {}</text></g>\n",
      tip, y, kWidth - 8, h, kind_color(k.kind), y + 16, i, k.kind, escape_html(k.name));
}

// Node n's box, its top left corner at (x, by), as SVG.
std::string html_box(const graph::Graph& g, const graph::Node& n, int x, int by) {
  std::string label = n.name.size() > 22 ? "…" + n.name.substr(n.name.size() - 21) : n.name;
  std::string types;
  for (ValueId o : n.outputs)
    if (o != kNoValue) types += graph::value_type_str(g.value(o)) + " ";
  return fmt::format(
      "<g><title>{} ({}) → {}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
      "rx=\"5\" "
      "fill=\"white\" stroke=\"#333\"/><text x=\"{}\" y=\"{}\" class=\"op\">{}</text>"
      "<text x=\"{}\" y=\"{}\" class=\"nm\">{}</text></g>\n",
      escape_html(n.name), n.op_type(), escape_html(types), x, by, kBoxW, kBoxH, x + 6, by + 14,
      n.op_type(), x + 6, by + 27, escape_html(label));
}

// The kernels' bands and their nodes' boxes (each box's centre into `pos`); returns the height.
int html_kernels(const graph::Graph& g, const PlanView& v, std::string& bands, std::string& boxes,
                 std::map<NodeId, std::pair<int, int>>& pos) {
  int y = 20;
  for (size_t i = 0; i < v.kernels.size(); ++i) {
    const auto& k = v.kernels[i];
    int rows = static_cast<int>((k.nodes.size() + kPerRow - 1) / kPerRow);
    int h = 24 + rows * (kBoxH + kGap) + kPad;
    bands += html_band(i, k, y, h);
    for (size_t j = 0; j < k.nodes.size(); ++j) {
      int col = static_cast<int>(j) % kPerRow, row = static_cast<int>(j) / kPerRow;
      int x = kPad + col * (kBoxW + kGap), by = y + 24 + row * (kBoxH + kGap);
      boxes += html_box(g, g.node(k.nodes[j]), x, by);
      pos[k.nodes[j]] = {x + kBoxW / 2, by + kBoxH / 2};
    }
    y += h + 14;
  }
  return y;
}

// The edges that cross kernels, as SVG curves between the boxes' centres in `pos`.
std::string html_edges(const graph::Graph& g, const PlanView& v,
                       std::map<NodeId, std::pair<int, int>>& pos) {
  std::string edges;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const graph::Node& n = g.node(static_cast<NodeId>(i));
    if (n.dead) continue;
    for (ValueId in : n.inputs) {
      if (in == kNoValue) continue;
      NodeId p = g.value(in).producer;
      if (p == graph::kNoNode || v.kernel_of[p] == v.kernel_of[i]) continue;
      auto [x1, y1] = pos[p];
      auto [x2, y2] = pos[static_cast<NodeId>(i)];
      edges += fmt::format(
          "<path d=\"M{} {} C{} {} {} {} {} {}\" class=\"e\"><title>%{} ({})</title></path>\n", x1,
          y1 + kBoxH / 2, x1 + 40, y1 + 60, x2 - 40, y2 - 60, x2, y2 - kBoxH / 2,
          escape_html(g.value(in).name),
          format_bytes(static_cast<double>(value_bytes(g.value(in)))));
    }
  }
  return edges;
}

// The values crossing kernel boundaries as table rows.
std::string html_crossing_rows(const graph::Graph& g, const PlanView& v) {
  std::string crossing_rows;
  for (const auto& c : v.crossings) {
    std::vector<std::string> to;
    for (int k : c.consumers) to.push_back("#" + std::to_string(k));
    if (c.graph_output) to.push_back("output");
    crossing_rows +=
        fmt::format("<tr><td>%{}</td><td>{}</td><td>{}</td><td>#{} → {}</td></tr>\n",
                    escape_html(g.value(c.value).name), graph::value_type_str(g.value(c.value)),
                    format_bytes(static_cast<double>(c.bytes)), c.producer, fmt::join(to, ", "));
  }
  return crossing_rows;
}

}  // namespace

void write_plan_html(std::ostream& os, const graph::Graph& g, const PlanView& v,
                     const std::string& title) {
  std::map<NodeId, std::pair<int, int>> pos;  // node -> centre
  std::string bands, boxes;
  const int y = html_kernels(g, v, bands, boxes, pos);
  const std::string edges = html_edges(g, v, pos);
  const std::string crossing_rows = html_crossing_rows(g, v);
  std::string refused;
  for (const std::string& r : v.refused) refused += "<li>" + escape_html(r) + "</li>\n";
  os << fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>braze plan: {0}</title>
<style>
body {{ font-family: Helvetica, Arial, sans-serif; margin: 20px; }}
.k {{ font-size: 12px; font-weight: bold; }} .op {{ font-size: 11px; font-weight: bold; }} .nm {{ font-size: 9px; fill: #444; }}
.e {{ fill: none; stroke: #c33; stroke-width: 1.2; opacity: 0.6; }} .e:hover {{ opacity: 1; stroke-width: 2.5; }}
table {{ border-collapse: collapse; font-size: 12px; }} td, th {{ border: 1px solid #ccc; padding: 3px 8px; }}
.legend span {{ display: inline-block; padding: 2px 10px; margin-right: 6px; border: 1px solid #555; border-radius: 4px; }}
</style></head><body>
<h2>braze plan: {0}</h2>
<p>{1} kernels for {2} nodes. Each coloured band is one kernel; red curves are values crossing kernel boundaries
(hover for names and sizes).</p>
<p class="legend"><span style="background:#9ecae1">gemm</span><span style="background:#a1d99b">reduction</span>
<span style="background:#fdd0a2">pointwise</span><span style="background:#dadaeb">opaque</span>
<span style="background:#fc9272">CPU fallback</span></p>
<svg xmlns="http://www.w3.org/2000/svg" width="{3}" height="{4}">
{5}{6}{7}</svg>
<h3>Values crossing kernel boundaries</h3>
<table><tr><th>value</th><th>type</th><th>bytes</th><th>kernels</th></tr>
{8}</table>
<h3>Merges refused ({9})</h3><ul>
{10}</ul></body></html>
)",
                    escape_html(title), v.kernels.size(), g.num_live_nodes(), kWidth, y + 10, bands,
                    boxes, edges, crossing_rows, v.refused.size(), refused);
}

}  // namespace braze::api
