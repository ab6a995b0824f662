// The reduction schedule: runs an op's row program (graph/cuda_hooks.h). One block per
// row, grid-striding over rows; each pass strides its threads over the row, combines in
// registers and reduces across the block; per-element outputs take a last sweep over the
// row, per-row outputs are written by thread 0.
//
//   row r of X (reduced axes)          passes                outputs
//   x0 x1 x2 … x(L-1)   ──map──►  s0 = max(x)        ─┐
//                        ──map──►  s1 = sum(exp(x-s0)) ├─► y_i = exp(x_i - s0) / s1
#include <braze/error.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "graph/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

namespace {

// Replaces {name} fields of a row-program template.
std::string substitute(const std::string& templ, const std::map<std::string, std::string>& fields,
                       const graph::Node& n) {
  std::string out;
  for (size_t i = 0; i < templ.size(); ++i) {
    if (templ[i] != '{') {
      out += templ[i];
      continue;
    }
    size_t j = templ.find('}', i);
    BRAZE_CHECK(j != std::string::npos, n.describe() + ": unclosed field in row program");
    std::string name = templ.substr(i + 1, j - i - 1);
    auto it = fields.find(name);
    BRAZE_CHECK(it != fields.end(), n.describe() + ": row program uses unknown field {" + name + "}");
    out += it->second;
    i = j;
  }
  return out;
}

std::string identity_of(const std::string& combine, const std::string& type) {
  bool flt = type == "float" || type == "double";
  if (combine == "sum") return graph::cuda_literal(type, 0);
  if (combine == "prod") return graph::cuda_literal(type, 1);
  if (combine == "max") return flt ? graph::cuda_literal(type, -INFINITY) : graph::cuda_literal(type, -1e300);
  if (combine == "min") return flt ? graph::cuda_literal(type, INFINITY) : graph::cuda_literal(type, 1e300);
  throw InternalError("unknown row combine " + combine);
}

std::string combiner(const std::string& combine, const std::string& type) {
  if (combine == "sum") return fmt::format("[]({0} a, {0} b) {{ return a + b; }}", type);
  if (combine == "prod") return fmt::format("[]({0} a, {0} b) {{ return a * b; }}", type);
  if (combine == "max") return fmt::format("[]({0} a, {0} b) {{ return braze_max(a, b); }}", type);
  if (combine == "min") return fmt::format("[]({0} a, {0} b) {{ return braze_min(a, b); }}", type);
  throw InternalError("unknown row combine " + combine);
}

bool uses_field(const graph::CudaRowProgram& p, const std::string& name) {
  std::string f = "{" + name + "}";
  for (const auto& pass : p.passes)
    if (pass.map.find(f) != std::string::npos) return true;
  for (const auto& o : p.outputs)
    if (o.expr.find(f) != std::string::npos) return true;
  return false;
}

unsigned threads_for(int64_t row) {
  unsigned t = 32;
  while (t < 256 && static_cast<int64_t>(t) < row) t *= 2;
  return t;
}

}  // namespace

std::optional<Kernel> reduction_kernel(const graph::Graph& g, const fusion::Group& group, const Target& target,
                                       std::string* why_not) {
  if (group.nodes.size() != 1) {
    *why_not = "the reduction schedule takes one node";
    return std::nullopt;
  }
  const graph::Node& n = g.node(group.nodes[0]);
  graph::CudaRowInputs ins;
  for (graph::ValueId v : n.inputs) {
    ins.shapes.push_back(v == graph::kNoValue ? Shape{} : g.value(v).shape);
    ins.dtypes.push_back(v == graph::kNoValue ? DType::Float32 : g.value(v).dtype);
    ins.values.push_back(v == graph::kNoValue ? nullptr : g.value(v).constant.get());
  }
  const std::vector<Shape>& shapes = ins.shapes;
  std::optional<graph::CudaRowProgram> prog = n.op->cuda_row ? n.op->cuda_row(n, ins) : std::nullopt;
  if (!prog) {
    *why_not = n.describe() + " has no GPU row program for these attributes and dtypes";
    return std::nullopt;
  }
  const graph::Value& xv = g.value(n.inputs[0]);
  const Shape xshape = prog->x_view.empty() ? xv.shape : prog->x_view;
  BRAZE_CHECK(checked_numel(xshape) == checked_numel(xv.shape), n.describe() + ": row program view of X differs in size");
  Shape kept_shape, red_shape;
  std::vector<bool> reduced(xshape.size(), false);
  for (int64_t a : prog->axes) reduced.at(static_cast<size_t>(a)) = true;
  for (size_t d = 0; d < xshape.size(); ++d) (reduced[d] ? red_shape : kept_shape).push_back(xshape[d]);
  int64_t rows = checked_numel(kept_shape), len = checked_numel(red_shape);

  Emitter e(g, [&](graph::NodeId id) { return id == group.nodes[0]; });
  std::vector<std::string> out_params(n.outputs.size());
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] != graph::kNoValue && i < prog->outputs.size() && !prog->outputs[i].expr.empty())
      out_params[i] = e.output_param(n.outputs[i]);
  const unsigned threads = prog->passes.empty() ? 256 : threads_for(len);
  std::string acc_decls;
  for (size_t p = 0; p < prog->passes.size(); ++p) {
    const auto& pass = prog->passes[p];
    bool arg = pass.combine.rfind("arg", 0) == 0;
    acc_decls += fmt::format("  __shared__ {} braze_shm{}[32];\n", arg ? graph::cuda_compute_type(xv.dtype) : pass.type, p);
    if (arg) acc_decls += fmt::format("  __shared__ long long braze_shmi{}[32];\n", p);
  }

  auto full_coords = [&](const std::vector<std::string>& kept, const std::vector<std::string>& red) {
    std::vector<std::string> c;
    size_t ki = 0, ri = 0;
    for (size_t d = 0; d < xshape.size(); ++d) c.push_back(reduced[d] ? red[ri++] : kept[ki++]);
    return c;
  };
  std::map<std::string, std::string> fields;
  auto element_fields = [&](const std::vector<std::string>& coords, const std::string& r) {
    std::map<std::string, std::string> f = fields;
    f["r"] = r;
    f["x"] = e.value_at_view(n.inputs[0], xshape, coords);
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == graph::kNoValue) continue;
      Shape view = i - 1 < prog->views.size() && !prog->views[i - 1].empty() ? prog->views[i - 1] : shapes[i];
      std::string name = "in" + std::to_string(i);
      if (uses_field(*prog, name)) f[name] = e.value_at_view(n.inputs[i], view, broadcast_coords(coords, xshape, view));
    }
    return f;
  };

  // A program without passes is element-wise (inference BatchNormalization): every thread
  // takes elements, as the pointwise schedule does.
  const bool elementwise = prog->passes.empty();
  if (elementwise) {
    kept_shape.clear();
    red_shape = xshape;
    std::fill(reduced.begin(), reduced.end(), true);
    len = checked_numel(xshape);
    rows = 1;
  }
  if (!elementwise) e.open(fmt::format("for (long long row = blockIdx.x; row < {}LL; row += gridDim.x) {{", rows));
  std::vector<std::string> kept = e.unravel("row", kept_shape);
  for (size_t p = 0; p < prog->passes.size(); ++p) {
    const auto& pass = prog->passes[p];
    bool arg = pass.combine.rfind("arg", 0) == 0;
    std::string acc = fmt::format("a{}", p), acci = fmt::format("ai{}", p);
    std::string val_type = arg ? graph::cuda_compute_type(xv.dtype) : pass.type;
    if (arg) {
      e.line(fmt::format("{} {} = {};", val_type, acc, graph::cuda_literal(val_type, 0)));
      e.line(fmt::format("long long {} = -1;", acci));
    } else {
      e.line(fmt::format("{} {} = {};", pass.type, acc, identity_of(pass.combine, pass.type)));
    }
    e.open(fmt::format("for (long long r = threadIdx.x; r < {}LL; r += blockDim.x) {{", len));
    e.push_scope();
    std::vector<std::string> red = e.unravel("r", red_shape);
    auto f = element_fields(full_coords(kept, red), "r");
    f["n"] = graph::cuda_literal(arg ? "double" : pass.type, static_cast<double>(len));
    std::string m = e.let(val_type, substitute(pass.map, f, n));
    if (arg) {
      bool is_max = pass.combine.find("max") != std::string::npos, last = pass.combine.find("last") != std::string::npos;
      e.line(fmt::format("if (braze_arg_better({}, r, {}, {}, {}, {})) {{ {} = {}; {} = r; }}", m, acc, acci, is_max, last,
                         acc, m, acci));
    } else {
      e.line(fmt::format("{} = ({}){}({}, {});", acc, pass.type, combiner(pass.combine, pass.type), acc, m));
    }
    e.pop_scope();
    e.close();
    std::string s = fmt::format("s{}", p);
    if (arg) {
      e.line(fmt::format("const long long {} = braze_block_argreduce({}, {}, {}, {}, braze_shm{}, braze_shmi{});", s, acc,
                         acci, pass.combine.find("max") != std::string::npos, pass.combine.find("last") != std::string::npos, p, p));
    } else {
      e.line(fmt::format("const {} {} = braze_block_reduce({}, {}, {}, braze_shm{});", pass.type, s, acc,
                         combiner(pass.combine, pass.type), identity_of(pass.combine, pass.type), p));
    }
    fields[s] = s;
  }
  bool any_element = false;
  for (size_t i = 0; i < out_params.size(); ++i) {
    if (out_params[i].empty()) continue;
    const auto& o = prog->outputs[i];
    const graph::Value& ov = g.value(n.outputs[i]);
    std::string ct = graph::cuda_compute_type(ov.dtype);
    if (o.per_element) {
      any_element = true;
      continue;
    }
    e.open("if (threadIdx.x == 0) {");
    e.push_scope();
    std::vector<std::string> zeros(red_shape.size(), "0LL");
    std::map<std::string, std::string> f = o.expr.find("{in") != std::string::npos || o.expr.find("{x}") != std::string::npos
                                               ? element_fields(full_coords(kept, zeros), "0LL")
                                               : fields;
    f["n"] = graph::cuda_literal(ct == "bool" ? "long long" : ct, static_cast<double>(len));
    e.line(fmt::format("braze_store({}, row, ({})({}));", out_params[i], ct, substitute(o.expr, f, n)));
    e.pop_scope();
    e.close();
  }
  if (any_element) {
    if (elementwise)
      e.open(fmt::format("for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < {}LL; "
                         "r += (long long)gridDim.x * blockDim.x) {{", len));
    else
      e.open(fmt::format("for (long long r = threadIdx.x; r < {}LL; r += blockDim.x) {{", len));
    e.push_scope();
    std::vector<std::string> red = e.unravel("r", red_shape);
    std::vector<std::string> coords = full_coords(kept, red);
    auto f = element_fields(coords, "r");
    std::string lin = e.let("long long", graph::cuda_linearize(coords, xshape));
    for (size_t i = 0; i < out_params.size(); ++i) {
      if (out_params[i].empty() || !prog->outputs[i].per_element) continue;
      const graph::Value& ov = g.value(n.outputs[i]);
      std::string ct = graph::cuda_compute_type(ov.dtype);
      f["n"] = graph::cuda_literal(ct, static_cast<double>(len));
      e.line(fmt::format("braze_store({}, {}, ({})({}));", out_params[i], lin, ct, substitute(prog->outputs[i].expr, f, n)));
    }
    e.pop_scope();
    e.close();
  }
  if (!elementwise) e.close();

  Kernel k;
  k.kind = fusion::GroupKind::Reduction;
  k.nodes = group.nodes;
  k.params = e.params();
  k.error_messages = e.errors();
  k.has_error_flag = !k.error_messages.empty();
  k.block = {threads, 1, 1};
  int64_t blocks = elementwise ? (len + threads - 1) / threads : rows;
  k.grid = {static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, int64_t{target.num_sms} * 16)), 1, 1};
  k.empty_launch = rows == 0 || (elementwise && len == 0);
  std::string code = fmt::format("extern \"C\" __global__ void __launch_bounds__({}) KERNEL_NAME({}) {{\n{}{}}}\n",
                                 threads, e.signature(), acc_decls, e.body());
  finish_kernel(g, k, code, true);
  return k;
}

}  // namespace braze::codegen
