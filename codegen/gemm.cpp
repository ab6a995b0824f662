// The GEMM schedule for MatMul and Gemm: a shared-memory tiled kernel, 16x16 threads per
// 16x16 output tile, one block column of K at a time, batched over blockIdx.z with numpy
// broadcasting of batch dims. Correct for every dtype the ops take (float accumulation for
// the half types); issue #6 replaces the float16/bfloat16 path with tensor cores.
#include <braze/error.h>

#include <algorithm>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "graph/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

namespace {

constexpr int kTile = 16;

// Batch dims of an operand aligned to the output's batch shape: the flat offset (in
// matrices) of batch index `b` of the output.
std::string batch_offset(const Shape& out_batch, Shape in_batch) {
  while (in_batch.size() < out_batch.size()) in_batch.insert(in_batch.begin(), 1);
  std::vector<std::string> coords = graph::cuda_unravel("b", out_batch);
  for (size_t d = 0; d < coords.size(); ++d)
    if (in_batch[d] == 1) coords[d] = "0LL";
  return graph::cuda_linearize(coords, in_batch);
}

}  // namespace

std::optional<Kernel> gemm_kernel(const graph::Graph& g, const fusion::Group& group, const Target& target,
                                  std::string* why_not) {
  if (group.nodes.size() != 1) {
    *why_not = "the GEMM schedule takes one node";
    return std::nullopt;
  }
  const graph::Node& n = g.node(group.nodes[0]);
  const bool is_gemm = n.op_type() == "Gemm";
  const graph::Value& a = g.value(n.inputs[0]);
  const graph::Value& b = g.value(n.inputs[1]);
  const graph::Value& y = g.value(n.outputs[0]);
  Shape as = a.shape, bs = b.shape;
  bool ta = false, tb = false;
  double alpha = 1, beta = 1;
  if (is_gemm) {
    ta = n.attr_int("transA") != 0;
    tb = n.attr_int("transB") != 0;
    alpha = n.attr_float("alpha");
    beta = n.attr_float("beta");
  }
  if (as.size() == 1) as.insert(as.begin(), 1);  // numpy promotion of 1-D operands
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = ta ? as[as.size() - 1] : as[as.size() - 2];
  const int64_t k = ta ? as[as.size() - 2] : as[as.size() - 1];
  const int64_t nn = tb ? bs[bs.size() - 2] : bs[bs.size() - 1];
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  Shape out_batch(std::max(a_batch.size(), b_batch.size()), 1);
  for (const Shape* s : {&a_batch, &b_batch})
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t& o = out_batch[out_batch.size() - s->size() + i];
      o = std::max(o, (*s)[i]);
    }
  const int64_t batches = checked_numel(out_batch);

  Emitter e(g, [&](graph::NodeId id) { return id == group.nodes[0]; });
  std::string pa = e.input_param(n.inputs[0]), pb = e.input_param(n.inputs[1]);
  std::string pc = is_gemm && n.has_input(2) ? e.input_param(n.inputs[2]) : "";
  std::string py = e.output_param(n.outputs[0]);
  const std::string acc = graph::cuda_compute_type(y.dtype);
  const std::string a_idx = ta ? fmt::format("(p) * {}LL + (i)", m) : fmt::format("(i) * {}LL + (p)", k);
  const std::string b_idx = tb ? fmt::format("(jj) * {}LL + (p)", k) : fmt::format("(p) * {}LL + (jj)", nn);

  std::string code;
  code += fmt::format("extern \"C\" __global__ void __launch_bounds__({0}) KERNEL_NAME({1}) {{\n", kTile * kTile,
                      e.signature());
  code += fmt::format("  __shared__ {0} as[{1}][{2}];\n  __shared__ {0} bs[{1}][{2}];\n", acc, kTile, kTile + 1);
  code += fmt::format("  const int tx = threadIdx.x, ty = threadIdx.y;\n");
  code += fmt::format("  for (long long b = blockIdx.z; b < {}LL; b += gridDim.z) {{\n", batches);
  code += fmt::format("    const long long a0 = {} * {}LL, b0 = {} * {}LL;\n", batch_offset(out_batch, a_batch), m * k,
                      batch_offset(out_batch, b_batch), k * nn);
  code += fmt::format("    const long long i = (long long)blockIdx.y * {0} + ty, j = (long long)blockIdx.x * {0} + tx;\n", kTile);
  code += fmt::format("    {} sum = 0;\n", acc);
  code += fmt::format("    for (long long p0 = 0; p0 < {}LL; p0 += {}) {{\n", k, kTile);
  code += fmt::format("      {{ const long long p = p0 + tx; as[ty][tx] = (i < {}LL && p < {}LL) ? ({})braze_load({}, a0 + {}) : ({})0; }}\n",
                      m, k, acc, pa, a_idx, acc);
  code += fmt::format("      {{ const long long p = p0 + ty, jj = j; bs[ty][tx] = (p < {}LL && jj < {}LL) ? ({})braze_load({}, b0 + {}) : ({})0; }}\n",
                      k, nn, acc, pb, b_idx, acc);
  code += "      __syncthreads();\n";
  code += fmt::format("      #pragma unroll\n      for (int q = 0; q < {}; ++q) sum += as[ty][q] * bs[q][tx];\n", kTile);
  code += "      __syncthreads();\n    }\n";
  code += fmt::format("    if (i < {}LL && j < {}LL) {{\n", m, nn);
  std::string value = alpha == 1 ? "sum" : fmt::format("{} * sum", graph::cuda_literal(acc, alpha));
  if (!pc.empty() && beta != 0) {
    const graph::Value& c = g.value(n.inputs[2]);
    std::vector<std::string> cc = broadcast_coords({"i", "j"}, {m, nn}, c.shape);
    std::string cval = fmt::format("({})braze_load({}, {})", acc, pc, graph::cuda_linearize(cc, c.shape));
    value += beta == 1 ? " + " + cval : fmt::format(" + {} * {}", graph::cuda_literal(acc, beta), cval);
  }
  code += fmt::format("      braze_store({}, b * {}LL + i * {}LL + j, ({})({}));\n", py, m * nn, nn, acc, value);
  code += "    }\n  }\n}\n";

  Kernel kern;
  kern.kind = fusion::GroupKind::Gemm;
  kern.nodes = group.nodes;
  kern.params = e.params();
  kern.block = {kTile, kTile, 1};
  kern.grid = {static_cast<unsigned>((nn + kTile - 1) / kTile), static_cast<unsigned>((m + kTile - 1) / kTile),
               static_cast<unsigned>(std::clamp<int64_t>(batches, 1, 65535))};
  kern.empty_launch = m == 0 || nn == 0 || batches == 0;
  if (kern.grid[0] > 2147483647u || kern.grid[1] > 65535u) {
    *why_not = "matrix too large for the tiled GEMM grid";
    return std::nullopt;
  }
  kern.grid[0] = std::max(kern.grid[0], 1u);
  kern.grid[1] = std::max(kern.grid[1], 1u);
  finish_kernel(g, kern, code, false);
  return kern;
}

}  // namespace braze::codegen
