// The GEMM schedule for MatMul and Gemm groups: a register-blocked SIMT kernel. A block of
// `threads` threads computes a bm x bn output tile; each thread holds tm x tn accumulators,
// its rows and columns strided by the thread grid (so shared-memory reads are broadcasts or
// conflict-free and the epilogue's stores coalesce). K advances bk at a time: the block
// stages A's bm x bk tile (transposed) and B's bk x bn tile in shared memory, then every
// thread accumulates bk outer products from registers. Batched over blockIdx.z with numpy
// broadcasting of batch dims. Operands are read through the emitter, so a Transpose,
// Reshape or Cast the partitioner put in front of them becomes index arithmetic in the tile
// loads ("transpose as layout"); the tile loads walk each operand along its contiguous dim.
// The epilogue runs in registers before the single store: the chain of element-wise ops
// after the product (bias, activation, residual, scale, cast) and layout ops, whose forward
// maps say where each element lands — so the result is written once, in the layout its
// consumer wants. float accumulation for the half types, double for double. float16 and
// bfloat16 products on sm_80+ (float32 ones too when the target asks for tf32) go to the
// tensor-core schedule instead (gemm_tc.cpp) when their operands allow it; its candidates
// come first in the search space.
#include "codegen/gemm.h"

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

// One point of the search space: tile sizes and per-thread sub-tile.
struct GemmTile {
  int bm, bn, bk, tm, tn;
  int threads() const { return (bm / tm) * (bn / tn); }
};

GemmTile tile_of(const Tunables& t) {
  return {t.at("bm"), t.at("bn"), t.at("bk"), t.at("tm"), t.at("tn")};
}

Tunables tunables_of(const GemmTile& t) {
  return {{"bm", t.bm}, {"bn", t.bn}, {"bk", t.bk}, {"tm", t.tm}, {"tn", t.tn}};
}

}  // namespace

std::vector<std::string> operand_coords(const Shape& out_batch, const Shape& in_batch,
                                        std::vector<std::string> tail) {
  std::vector<std::string> ob = graph::cuda_unravel("b", out_batch);
  std::vector<std::string> c;
  size_t off = out_batch.size() - in_batch.size();
  for (size_t d = 0; d < in_batch.size(); ++d) c.push_back(in_batch[d] == 1 ? "0LL" : ob[off + d]);
  c.insert(c.end(), tail.begin(), tail.end());
  return c;
}

std::optional<GemmDims> gemm_dims(const graph::Graph& g, const fusion::Group& group,
                                  std::string* why_not) {
  GemmDims d;
  for (graph::NodeId id : group.nodes)
    if (g.node(id).op->kind == graph::FusionKind::OutEWiseFusable) {
      if (d.node) {
        *why_not = "two matrix products in one group";
        return std::nullopt;
      }
      d.node = &g.node(id);
    }
  BRAZE_CHECK(d.node != nullptr, "a GEMM group without a matrix product");
  const graph::Node& n = *d.node;
  if (n.op_type() == "Gemm") {
    d.ta = n.attr_int("transA") != 0;
    d.tb = n.attr_int("transB") != 0;
    d.alpha = n.attr_float("alpha");
    d.beta = n.attr_float("beta");
  }
  const graph::Value& a = g.value(n.inputs[0]);
  const graph::Value& b = g.value(n.inputs[1]);
  d.a_vec = a.shape.size() == 1;
  d.b_vec = b.shape.size() == 1;
  Shape as = a.shape, bs = b.shape;
  if (d.a_vec) as.insert(as.begin(), 1);  // numpy promotion of 1-D operands
  if (d.b_vec) bs.push_back(1);
  d.m = d.ta ? as[as.size() - 1] : as[as.size() - 2];
  d.k = d.ta ? as[as.size() - 2] : as[as.size() - 1];
  d.nn = d.tb ? bs[bs.size() - 2] : bs[bs.size() - 1];
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  d.out_batch.assign(std::max(a_batch.size(), b_batch.size()), 1);
  for (const Shape* s : {&a_batch, &b_batch})
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t& o = d.out_batch[d.out_batch.size() - s->size() + i];
      o = std::max(o, (*s)[i]);
    }
  d.batches = checked_numel(d.out_batch);
  return d;
}

std::optional<GemmEpilogue> gemm_epilogue(const graph::Graph& g, const fusion::Group& group,
                                          const GemmDims& d, std::string* why_not) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  GemmEpilogue epi;
  epi.out = d.node->outputs[0];
  epi.out_coords = graph::cuda_unravel("b", d.out_batch);
  if (!d.a_vec) epi.out_coords.push_back("i");
  if (!d.b_vec) epi.out_coords.push_back("j");
  auto users = g.users();
  for (size_t guard = 0; guard < group.nodes.size(); ++guard) {
    if (std::find(group.outputs.begin(), group.outputs.end(), epi.out) != group.outputs.end())
      break;
    graph::NodeId c = graph::kNoNode;
    for (graph::NodeId u : users[epi.out])
      if (members.count(u)) c = u;
    if (c == graph::kNoNode) {
      *why_not = fmt::format("%{} of the GEMM group is not used", g.value(epi.out).name);
      return std::nullopt;
    }
    const graph::Node& cn = g.node(c);
    if (cn.op->cuda_forward && cn.inputs[0] == epi.out)
      epi.out_coords = cn.op->cuda_forward(cn, epi.out_coords, g.value(epi.out).shape,
                                           g.value(cn.outputs[0]).shape);
    epi.out = cn.outputs[0];
  }
  if (group.outputs.size() != 1 || group.outputs[0] != epi.out) {
    *why_not = "the GEMM group's epilogue has more than one output";
    return std::nullopt;
  }
  return epi;
}

Emitter gemm_emitter(const graph::Graph& g, const fusion::Group& group, const GemmDims& d) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  Emitter e(g, [members](graph::NodeId id) { return members.count(id) != 0; });
  // The product's value at the current element is the epilogue's starting point.
  const graph::ValueId prod = d.node->outputs[0];
  e.set_intercept(
      [prod](graph::ValueId v, const std::vector<std::string>&) -> std::optional<std::string> {
        if (v == prod) return std::string("acc");
        return std::nullopt;
      });
  return e;
}

std::string emit_gemm_value(Emitter& e, const graph::Graph& g, const GemmDims& d,
                            const GemmEpilogue& epi, const std::string& sum) {
  const graph::Node& n = *d.node;
  const std::string acc = graph::cuda_compute_type(g.value(n.outputs[0]).dtype);
  std::string value =
      d.alpha == 1 ? sum : fmt::format("{} * {}", graph::cuda_literal(acc, d.alpha), sum);
  if (n.op_type() == "Gemm" && n.has_input(2) && d.beta != 0) {
    const graph::Value& c = g.value(n.inputs[2]);
    std::vector<std::string> cc = broadcast_coords({"i", "j"}, {d.m, d.nn}, c.shape);
    std::string cval = e.value_at(n.inputs[2], cc);
    value += d.beta == 1 ? " + " + cval
                         : fmt::format(" + {} * {}", graph::cuda_literal(acc, d.beta), cval);
  }
  e.line(fmt::format("const {} acc = {};", acc, value));
  return epi.out == n.outputs[0] ? "acc" : e.value_at(epi.out, epi.out_coords);
}

void emit_gemm_store(Emitter& e, const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                     const std::string& sum) {
  std::string result = emit_gemm_value(e, g, d, epi, sum);
  const graph::Value& ov = g.value(epi.out);
  e.line(fmt::format("braze_store({}, {}, ({}){});", e.output_param(epi.out),
                     graph::cuda_linearize(epi.out_coords, ov.shape),
                     graph::cuda_compute_type(ov.dtype), result));
}

std::vector<Tunables> gemm_candidates(const graph::Graph& g, const fusion::Group& group,
                                      const Target& target) {
  std::string ignored;
  std::optional<GemmDims> d = gemm_dims(g, group, &ignored);
  if (!d) return {};
  std::vector<Tunables> c;
  if (gemm_tc_unsupported(g, group, *d, target).empty()) c = gemm_tc_candidates(g, *d, target);
  // Heuristic: the largest tile that still gives every SM a block.
  auto tiles = [&](int bm, int bn) {
    return ((d->m + bm - 1) / bm) * ((d->nn + bn - 1) / bn) * d->batches;
  };
  const int64_t sms = target.num_sms;
  GemmTile def = tiles(128, 128) >= sms ? GemmTile{128, 128, 8, 8, 8}
                 : tiles(64, 64) >= sms ? GemmTile{64, 64, 16, 4, 4}
                                        : GemmTile{32, 32, 16, 2, 2};
  c.push_back(tunables_of(def));
  for (GemmTile t :
       {GemmTile{128, 128, 8, 8, 8}, GemmTile{128, 128, 16, 8, 8}, GemmTile{128, 64, 8, 8, 4},
        GemmTile{64, 128, 8, 4, 8}, GemmTile{64, 64, 8, 4, 4}, GemmTile{64, 64, 16, 4, 4},
        GemmTile{32, 64, 16, 2, 4}, GemmTile{32, 32, 16, 2, 2}}) {
    Tunables tu = tunables_of(t);
    if (std::find(c.begin(), c.end(), tu) == c.end()) c.push_back(tu);
  }
  return c;
}

std::optional<Kernel> gemm_kernel(const graph::Graph& g, const fusion::Group& group,
                                  const Target& target, std::string* why_not,
                                  const Tunables* tune) {
  std::optional<GemmDims> dims = gemm_dims(g, group, why_not);
  if (!dims) return std::nullopt;
  std::optional<GemmEpilogue> epi = gemm_epilogue(g, group, *dims, why_not);
  if (!epi) return std::nullopt;
  const Tunables chosen = tune ? *tune : gemm_candidates(g, group, target).front();
  if (chosen.count("tc") && chosen.at("tc") != 0)
    return gemm_tc_kernel(g, group, *dims, *epi, target, chosen, why_not);

  const graph::Node& n = *dims->node;
  const graph::Value& a = g.value(n.inputs[0]);
  const graph::Value& b = g.value(n.inputs[1]);
  const graph::Value& y = g.value(n.outputs[0]);
  const bool ta = dims->ta, tb = dims->tb, a_vec = dims->a_vec, b_vec = dims->b_vec;
  const int64_t m = dims->m, k = dims->k, nn = dims->nn, batches = dims->batches;
  const Shape& out_batch = dims->out_batch;
  const std::string acc = graph::cuda_compute_type(y.dtype);

  Emitter e = gemm_emitter(g, group, *dims);
  // A's element (i, p) and B's (p, jj), in their own coordinates.
  std::vector<std::string> a_tail = a_vec ? std::vector<std::string>{"p"}
                                    : ta  ? std::vector<std::string>{"p", "i"}
                                          : std::vector<std::string>{"i", "p"};
  std::vector<std::string> b_tail = b_vec ? std::vector<std::string>{"p"}
                                    : tb  ? std::vector<std::string>{"jj", "p"}
                                          : std::vector<std::string>{"p", "jj"};
  std::vector<std::string> a_coords =
      operand_coords(out_batch, Shape(a.shape.begin(), a.shape.end() - (a_vec ? 1 : 2)), a_tail);
  std::vector<std::string> b_coords =
      operand_coords(out_batch, Shape(b.shape.begin(), b.shape.end() - (b_vec ? 1 : 2)), b_tail);

  const GemmTile t = tile_of(chosen);
  const int threads = t.threads(), rt = t.bm / t.tm, ct = t.bn / t.tn;
  // A tile's loads walk along A's contiguous dim: i when A is stored transposed, else p;
  // likewise jj for B, unless B is stored transposed.
  const bool a_i_fast = ta, b_j_fast = !tb;
  auto tile_load = [&](const char* smem, int rows, int cols, bool row_fast,
                       const std::string& row_var, const std::string& row0, int64_t row_limit,
                       graph::ValueId v, const std::vector<std::string>& coords) {
    // Tile element (r, c): row r of `rows` (i or jj), column c of bk (p); stored smem[c][r].
    const int total = rows * cols;
    e.line("#pragma unroll");
    e.open(fmt::format("for (int l0 = 0; l0 < {}; l0 += {}) {{", total, threads));
    e.line("const int l = l0 + tid;");
    if (total % threads != 0) e.line(fmt::format("if (l >= {}) break;", total));
    e.line(row_fast ? fmt::format("const int r = l % {0}, c = l / {0};", rows)
                    : fmt::format("const int r = l / {0}, c = l % {0};", cols));
    e.line(fmt::format("const long long {} = {} + r, p = p0 + c;", row_var, row0));
    e.line(fmt::format("{} v = ({})0;", acc, acc));
    e.open(fmt::format("if ({} < {}LL && p < {}LL) {{", row_var, row_limit, k));
    e.push_scope();
    e.line(fmt::format("v = ({}){};", acc, e.value_at(v, coords)));
    e.pop_scope();
    e.close();
    e.line(fmt::format("{}[c][r] = v;", smem));
    e.close();
  };

  e.open(fmt::format("for (long long b = blockIdx.z; b < {}LL; b += gridDim.z) {{", batches));
  e.line(fmt::format(
      "const long long i0 = (long long)blockIdx.y * {}, j0 = (long long)blockIdx.x * {};", t.bm,
      t.bn));
  e.line(fmt::format("{} sum[{}][{}];", acc, t.tm, t.tn));
  e.line("#pragma unroll");
  e.line(fmt::format("for (int ti = 0; ti < {}; ++ti)", t.tm));
  e.line("#pragma unroll");
  e.line(fmt::format("  for (int tj = 0; tj < {}; ++tj) sum[ti][tj] = ({})0;", t.tn, acc));
  e.open(fmt::format("for (long long p0 = 0; p0 < {}LL; p0 += {}) {{", k, t.bk));
  try {
    tile_load("as", t.bm, t.bk, a_i_fast, "i", "i0", m, n.inputs[0], a_coords);
    tile_load("bs", t.bn, t.bk, b_j_fast, "jj", "j0", nn, n.inputs[1], b_coords);
    e.line("__syncthreads();");
    e.line("#pragma unroll");
    e.open(fmt::format("for (int q = 0; q < {}; ++q) {{", t.bk));
    e.line(fmt::format("{} ra[{}], rb[{}];", acc, t.tm, t.tn));
    e.line("#pragma unroll");
    e.line(fmt::format("for (int ti = 0; ti < {}; ++ti) ra[ti] = as[q][tr + ti * {}];", t.tm, rt));
    e.line("#pragma unroll");
    e.line(fmt::format("for (int tj = 0; tj < {}; ++tj) rb[tj] = bs[q][tc + tj * {}];", t.tn, ct));
    e.line("#pragma unroll");
    e.line(fmt::format("for (int ti = 0; ti < {}; ++ti)", t.tm));
    e.line("#pragma unroll");
    e.line(fmt::format("  for (int tj = 0; tj < {}; ++tj) sum[ti][tj] += ra[ti] * rb[tj];", t.tn));
    e.close();
    e.line("__syncthreads();");
    e.close();
    // The epilogue, once per accumulator.
    e.line("#pragma unroll");
    e.open(fmt::format("for (int ti = 0; ti < {}; ++ti) {{", t.tm));
    e.line("#pragma unroll");
    e.open(fmt::format("for (int tj = 0; tj < {}; ++tj) {{", t.tn));
    e.line(fmt::format("const long long i = i0 + tr + ti * {}, j = j0 + tc + tj * {};", rt, ct));
    e.open(fmt::format("if (i < {}LL && j < {}LL) {{", m, nn));
    e.push_scope();
    emit_gemm_store(e, g, *dims, *epi, "sum[ti][tj]");
    e.pop_scope();
    e.close();
    e.close();
    e.close();
  } catch (const graph::CudaUnsupported& u) {
    *why_not = u.why;
    return std::nullopt;
  }
  e.close();

  Kernel kern = kernel_record(e, fusion::GroupKind::Gemm, group, tunables_of(t));
  kern.block = {static_cast<unsigned>(threads), 1, 1};
  int64_t gx = (nn + t.bn - 1) / t.bn, gy = (m + t.bm - 1) / t.bm;
  if (gx > 2147483647 || gy > 65535) {
    *why_not = "matrix too large for the tiled GEMM grid";
    return std::nullopt;
  }
  kern.grid = {static_cast<unsigned>(std::max<int64_t>(gx, 1)),
               static_cast<unsigned>(std::max<int64_t>(gy, 1)),
               static_cast<unsigned>(std::clamp<int64_t>(batches, 1, 65535))};
  kern.empty_launch = m == 0 || nn == 0 || batches == 0;
  // Rows of the shared tiles are padded by 4 elements against bank conflicts on the
  // transposing stores.
  std::string code = fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({0}) KERNEL_NAME({1}) {{\n"
      "  __shared__ {2} as[{3}][{4}];\n  __shared__ {2} bs[{3}][{5}];\n"
      "  const int tid = threadIdx.x, tr = tid / {6}, tc = tid % {6};\n{7}}}\n",
      threads, e.signature(), acc, t.bk, t.bm + 4, t.bn + 4, ct, e.body());
  finish_kernel(g, kern, code, false);
  return kern;
}

}  // namespace braze::codegen
