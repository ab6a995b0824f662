// The GEMM schedule for MatMul and Gemm groups: a shared-memory tiled kernel, 16x16
// threads per 16x16 output tile, one block column of K at a time, batched over blockIdx.z
// with numpy broadcasting of batch dims. Operands are read through the emitter, so a
// Transpose, Reshape or Cast the partitioner put in front of them becomes index arithmetic
// in the tile loads ("transpose as layout"). The epilogue runs in registers before the
// single store: the chain of element-wise ops after the product (bias, activation,
// residual, scale, cast) and layout ops, whose forward maps say where each element lands —
// so the result is written once, in the layout its consumer wants. Correct for every dtype
// the ops take (float accumulation for the half types); issue #6 brings tensor cores.
#include <braze/error.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "graph/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

namespace {

constexpr int kTile = 16;

// Coordinates of an operand with batch dims `in_batch` (aligned right to the output's
// batch shape `out_batch`) for output batch index "b", followed by `tail`.
std::vector<std::string> operand_coords(const Shape& out_batch, const Shape& in_batch, std::vector<std::string> tail) {
  std::vector<std::string> ob = graph::cuda_unravel("b", out_batch);
  std::vector<std::string> c;
  size_t off = out_batch.size() - in_batch.size();
  for (size_t d = 0; d < in_batch.size(); ++d) c.push_back(in_batch[d] == 1 ? "0LL" : ob[off + d]);
  c.insert(c.end(), tail.begin(), tail.end());
  return c;
}

}  // namespace

std::optional<Kernel> gemm_kernel(const graph::Graph& g, const fusion::Group& group, const Target& target,
                                  std::string* why_not) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  const graph::Node* mm = nullptr;
  for (graph::NodeId id : group.nodes)
    if (g.node(id).op->kind == graph::FusionKind::OutEWiseFusable) {
      if (mm) {
        *why_not = "two matrix products in one group";
        return std::nullopt;
      }
      mm = &g.node(id);
    }
  BRAZE_CHECK(mm != nullptr, "a GEMM group without a matrix product");
  const graph::Node& n = *mm;
  const bool is_gemm = n.op_type() == "Gemm";
  const graph::Value& a = g.value(n.inputs[0]);
  const graph::Value& b = g.value(n.inputs[1]);
  const graph::Value& y = g.value(n.outputs[0]);
  bool ta = false, tb = false;
  double alpha = 1, beta = 1;
  if (is_gemm) {
    ta = n.attr_int("transA") != 0;
    tb = n.attr_int("transB") != 0;
    alpha = n.attr_float("alpha");
    beta = n.attr_float("beta");
  }
  const bool a_vec = a.shape.size() == 1, b_vec = b.shape.size() == 1;
  Shape as = a.shape, bs = b.shape;
  if (a_vec) as.insert(as.begin(), 1);  // numpy promotion of 1-D operands
  if (b_vec) bs.push_back(1);
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
  const std::string acc = graph::cuda_compute_type(y.dtype);

  Emitter e(g, [&](graph::NodeId id) { return members.count(id) != 0; });
  // The product's value at the current element is the epilogue's starting point.
  const graph::ValueId prod = n.outputs[0];
  e.set_intercept([&](graph::ValueId v, const std::vector<std::string>&) -> std::optional<std::string> {
    if (v == prod) return std::string("acc");
    return std::nullopt;
  });
  // A's element (i, p) and B's (p, jj), in their own coordinates.
  std::vector<std::string> a_tail = a_vec ? std::vector<std::string>{"p"}
                                    : ta  ? std::vector<std::string>{"p", "i"}
                                          : std::vector<std::string>{"i", "p"};
  std::vector<std::string> b_tail = b_vec ? std::vector<std::string>{"p"}
                                    : tb  ? std::vector<std::string>{"jj", "p"}
                                          : std::vector<std::string>{"p", "jj"};
  std::vector<std::string> a_coords = operand_coords(out_batch, Shape(a.shape.begin(), a.shape.end() - (a_vec ? 1 : 2)), a_tail);
  std::vector<std::string> b_coords = operand_coords(out_batch, Shape(b.shape.begin(), b.shape.end() - (b_vec ? 1 : 2)), b_tail);

  // The epilogue chain from the product to the group's output, and where each element
  // lands in it.
  graph::ValueId out = prod;
  std::vector<std::string> out_coords = graph::cuda_unravel("b", out_batch);
  if (!a_vec) out_coords.push_back("i");
  if (!b_vec) out_coords.push_back("j");
  auto users = g.users();
  for (size_t guard = 0; guard < group.nodes.size(); ++guard) {
    if (std::find(group.outputs.begin(), group.outputs.end(), out) != group.outputs.end()) break;
    graph::NodeId c = graph::kNoNode;
    for (graph::NodeId u : users[out])
      if (members.count(u)) c = u;
    if (c == graph::kNoNode) {
      *why_not = fmt::format("%{} of the GEMM group is not used", g.value(out).name);
      return std::nullopt;
    }
    const graph::Node& cn = g.node(c);
    if (cn.op->cuda_forward && cn.inputs[0] == out)
      out_coords = cn.op->cuda_forward(cn, out_coords, g.value(out).shape, g.value(cn.outputs[0]).shape);
    out = cn.outputs[0];
  }
  if (group.outputs.size() != 1 || group.outputs[0] != out) {
    *why_not = "the GEMM group's epilogue has more than one output";
    return std::nullopt;
  }
  const graph::Value& ov = g.value(out);

  std::string pc = is_gemm && n.has_input(2) && beta != 0 ? "c" : "";
  e.open(fmt::format("for (long long b = blockIdx.z; b < {}LL; b += gridDim.z) {{", batches));
  e.line(fmt::format("const long long i = (long long)blockIdx.y * {0} + ty, j = (long long)blockIdx.x * {0} + tx;", kTile));
  e.line(fmt::format("{} sum = 0;", acc));
  e.open(fmt::format("for (long long p0 = 0; p0 < {}LL; p0 += {}) {{", k, kTile));
  try {
    e.open("{");
    e.line("const long long p = p0 + tx;");
    e.open(fmt::format("if (i < {}LL && p < {}LL) {{", m, k));
    e.push_scope();
    e.line(fmt::format("as[ty][tx] = ({}){};", acc, e.value_at(n.inputs[0], a_coords)));
    e.pop_scope();
    e.close();
    e.line(fmt::format("else as[ty][tx] = ({})0;", acc));
    e.close();
    e.open("{");
    e.line("const long long p = p0 + ty, jj = j;");
    e.open(fmt::format("if (p < {}LL && jj < {}LL) {{", k, nn));
    e.push_scope();
    e.line(fmt::format("bs[ty][tx] = ({}){};", acc, e.value_at(n.inputs[1], b_coords)));
    e.pop_scope();
    e.close();
    e.line(fmt::format("else bs[ty][tx] = ({})0;", acc));
    e.close();
    e.line("__syncthreads();");
    e.line(fmt::format("#pragma unroll\n    for (int q = 0; q < {}; ++q) sum += as[ty][q] * bs[q][tx];", kTile));
    e.line("__syncthreads();");
    e.close();
    e.open(fmt::format("if (i < {}LL && j < {}LL) {{", m, nn));
    e.push_scope();
    std::string value = alpha == 1 ? "sum" : fmt::format("{} * sum", graph::cuda_literal(acc, alpha));
    if (!pc.empty()) {
      const graph::Value& c = g.value(n.inputs[2]);
      std::vector<std::string> cc = broadcast_coords({"i", "j"}, {m, nn}, c.shape);
      std::string cval = e.value_at(n.inputs[2], cc);
      value += beta == 1 ? " + " + cval : fmt::format(" + {} * {}", graph::cuda_literal(acc, beta), cval);
    }
    e.line(fmt::format("const {} acc = {};", acc, value));
    std::string result = out == prod ? "acc" : e.value_at(out, out_coords);
    e.line(fmt::format("braze_store({}, {}, ({}){});", e.output_param(out), graph::cuda_linearize(out_coords, ov.shape),
                       graph::cuda_compute_type(ov.dtype), result));
    e.pop_scope();
    e.close();
  } catch (const graph::CudaUnsupported& u) {
    *why_not = u.why;
    return std::nullopt;
  }
  e.close();

  Kernel kern;
  kern.kind = fusion::GroupKind::Gemm;
  kern.nodes = group.nodes;
  kern.params = e.params();
  kern.error_messages = e.errors();
  kern.has_error_flag = !kern.error_messages.empty();
  kern.block = {kTile, kTile, 1};
  int64_t gx = (nn + kTile - 1) / kTile, gy = (m + kTile - 1) / kTile;
  if (gx > 2147483647 || gy > 65535) {
    *why_not = "matrix too large for the tiled GEMM grid";
    return std::nullopt;
  }
  kern.grid = {static_cast<unsigned>(std::max<int64_t>(gx, 1)), static_cast<unsigned>(std::max<int64_t>(gy, 1)),
               static_cast<unsigned>(std::clamp<int64_t>(batches, 1, 65535))};
  kern.empty_launch = m == 0 || nn == 0 || batches == 0;
  std::string code = fmt::format("extern \"C\" __global__ void __launch_bounds__({0}) KERNEL_NAME({1}) {{\n"
                                 "  __shared__ {2} as[{3}][{4}];\n  __shared__ {2} bs[{3}][{4}];\n"
                                 "  const int tx = threadIdx.x, ty = threadIdx.y;\n{5}}}\n",
                                 kTile * kTile, e.signature(), acc, kTile, kTile + 1, e.body());
  finish_kernel(g, kern, code, false);
  return kern;
}

}  // namespace braze::codegen
