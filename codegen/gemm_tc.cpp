// The tensor-core GEMM schedule, for float16 and bfloat16 products on sm_80+ (mma.sync
// m16n8k16, fp32 accumulation) and, when the target asks for tf32 (--precision tf32),
// float32 products (mma.sync m16n8k8 on operands rounded to tf32, fp32 accumulation). The
// main loop is device code, braze_tc_gemm in codegen/device/mma.cuh, one template for
// both element widths; this file picks its compile-time shape, addresses the operands,
// rasterises the blocks and writes the epilogue, shared with the SIMT schedule (gemm.h).
//
//   block tile BM x BN, k in steps of BK        warps WM x WN, each a (BM/WM) x (BN/WN)
//   ┌──────────── BN ────────────┐               tile of 16 x 8 mma tiles, fp32 in registers
//   │ w0      │ w1 │ w2 │ w3     │ BM/WM
//   ├─────────┼────┼────┼────────┤               A and B stream global -> shared through
//   │ w4      │ w5 │ w6 │ w7     │               STAGES buffers (cp.async, 16 bytes a copy,
//   └─────────┴────┴────┴────────┘               zero-filled past the edges), XOR-swizzled
//                                                 per 16 bytes (a float tile read along
//                                                 k: rows padded); ldmatrix or ld.shared
//                                                 (+ cvt.rna.tf32 for floats) feed the mma.
//
// A shared tile keeps the operand's contiguous dim contiguous: A stored [M, K] (and B
// stored [N, K], Gemm transB = 1) load fragments with ldmatrix, 16-bit and tf32 alike, A
// stored [K, M] (transA) and B stored [K, N] (MatMul) with ldmatrix.trans for 16-bit
// elements and ld.shared a float at a time for tf32 (mma.cuh shows both layouts right and
// conflict-free). Operands are read in place through their views (gemm.h, OperandView): a
// kernel input, or layout ops in the group in front of the product (Reshape, Transpose,
// Expand, Slice …) read through as strides, so the schedule applies when both operands are
// views with a contiguous matrix dim, k, that dim, the row stride, the offset and the batch
// strides are multiples of 16 bytes (8 half elements, 4 floats: 16-byte copies), and neither
// is a vector. Batches are blockIdx.z, then a loop; each operand's batch offset comes from
// its view (stride 0 broadcasts).
// Blocks walk the tile grid in groups of block-rows, down a group's columns first
// (emit_gemm_tile_origin), so blocks running together share A rows and B columns in L2.
// The epilogue runs on the accumulators in registers, element by element as in the SIMT
// schedule, and stores the two adjacent columns each lane holds as one pair when they are
// adjacent in the output (emit_gemm_stores).
// Split-K (sm_90): when the output tiles alone leave SMs idle, a cluster of 2-8 blocks
// shares each tile, block r taking the r-th share of the k-tiles; rank 0 adds the others'
// accumulators through distributed shared memory (braze_tc_split_reduce) and runs the
// epilogue, so the result is still written once, by one kernel.
#include <algorithm>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/gemm.h"
#include "codegen/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

namespace {

constexpr int64_t kMaxSharedBytes = 227 * 1024;  // opt-in limit per block on sm_80 / sm_90

// bk counts elements; elem is the operands' size in bytes (2, or 4 for tf32). split > 1:
// split-K, a cluster of `split` blocks per output tile, each over a share of k, their sums
// added through distributed shared memory (sm_90) before one epilogue.
struct TcTile {
  int bm, bn, bk, wm, wn, stages, split = 1;
  int elem = 2;
  bool a_kcontig = true, b_kcontig = true;
  int threads() const { return wm * wn * 32; }
  // As braze_tc_gemm lays its stages out: a float tile stored m- or n-contiguous has its
  // rows padded by 8 floats. Split-K parks the fp32 accumulators there afterwards.
  int64_t pipeline_bytes() const {
    const int64_t pad = elem == 4 ? 8 : 0;
    const int64_t a = a_kcontig ? int64_t{bm} * bk : int64_t{bk} * (bm + pad);
    const int64_t b = b_kcontig ? int64_t{bn} * bk : int64_t{bk} * (bn + pad);
    return stages * (a + b) * elem;
  }
  int64_t shared_bytes() const {
    return split > 1 ? std::max(pipeline_bytes(), int64_t{bm} * bn * 4) : pipeline_bytes();
  }
};

TcTile tile_of(const Tunables& t, int elem, const GemmDims& d) {
  return {t.at("bm"),
          t.at("bn"),
          t.at("bk"),
          t.at("wm"),
          t.at("wn"),
          t.at("stages"),
          t.count("split") ? t.at("split") : 1,
          elem,
          d.view[0] ? d.view[0]->kcontig : !d.ta,
          d.view[1] ? d.view[1]->kcontig : d.tb};
}

Tunables tunables_of(const TcTile& t) {
  Tunables u{{"tc", 1},    {"bm", t.bm}, {"bn", t.bn},        {"bk", t.bk},
             {"wm", t.wm}, {"wn", t.wn}, {"stages", t.stages}};
  if (t.split > 1) u["split"] = t.split;
  return u;
}

bool pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

// Why the main loop cannot take this tile shape, or empty.
// A k-tile holds whole mma k-steps (16 half elements or 8 floats: 32 bytes); an m- or
// n-contiguous float tile, rows of 128-byte multiples (its padding, mma.cuh).
std::string tile_problem(const TcTile& t) {
  if (!pow2(t.bm) || !pow2(t.bn) || !pow2(t.bk) || t.bk * t.elem < 32 || t.wm < 1 || t.wn < 1 ||
      t.bm % (16 * t.wm) != 0 || t.bn % (16 * t.wn) != 0 || t.bm < 32 || t.bn < 32)
    return fmt::format("tensor-core tile {}x{}x{} with {}x{} warps is not supported", t.bm, t.bn,
                       t.bk, t.wm, t.wn);
  if (t.threads() > 1024 || t.stages < 2) return "tensor-core tile: too many warps or stages";
  if (t.split < 1 || t.split > 8 || !pow2(t.split)) return "split-K over 1, 2, 4 or 8 blocks";
  if (t.shared_bytes() > kMaxSharedBytes)
    return fmt::format("tensor-core tile needs {} bytes of shared memory", t.shared_bytes());
  return "";
}

}  // namespace

bool gemm_tensor_core_types(const graph::Graph& g, const GemmDims& d, const Target& target) {
  const DType a = g.value(d.node->inputs[0]).dtype, b = g.value(d.node->inputs[1]).dtype;
  return target.sm >= 80 && a == b &&
         (a == DType::Float16 || a == DType::BFloat16 || (a == DType::Float32 && target.tf32));
}

std::string gemm_tc_operand_problem(const graph::Graph& g, const GemmDims& d, int i) {
  if (!d.view[i]) return d.no_view[i];
  // 16-byte copies: k, the operand's contiguous dim, its row stride, offset and batch strides
  // in whole 16 bytes.
  const int64_t per_copy = 16 / static_cast<int64_t>(dtype_size(g.value(d.node->inputs[0]).dtype));
  const OperandView& v = *d.view[i];
  const int64_t contig = v.kcontig ? d.k : i == 0 ? d.m : d.nn;
  bool aligned = d.k % per_copy == 0 && contig % per_copy == 0 && v.ld % per_copy == 0 &&
                 v.offset % per_copy == 0;
  for (const graph::StridedDim& f : v.batch) aligned = aligned && f.stride % per_copy == 0;
  if (!aligned)
    return fmt::format(
        "k and operand {}'s contiguous dim, row stride, offset and batch strides must be "
        "multiples of {} elements for 16-byte copies",
        i == 0 ? "A" : "B", per_copy);
  return "";
}

std::string gemm_tc_unsupported(const graph::Graph& g, const fusion::Group& group,
                                const GemmDims& d, const Target& target) {
  (void)group;
  std::string why = gemm_tc_product_problem(g, d, target);
  for (int i = 0; i < 2 && why.empty(); ++i) why = gemm_tc_operand_problem(g, d, i);
  return why;
}

std::string gemm_tc_product_problem(const graph::Graph& g, const GemmDims& d,
                                    const Target& target) {
  if (target.sm < 80) return "tensor-core GEMM needs sm_80 or newer";
  const graph::Node& n = *d.node;
  const graph::Value& a = g.value(n.inputs[0]);
  const graph::Value& b = g.value(n.inputs[1]);
  if (a.dtype == DType::Float32 && b.dtype == DType::Float32 && !target.tf32)
    return "float32 products run on tensor cores only at --precision tf32";
  if (!gemm_tensor_core_types(g, d, target))
    return "tensor-core GEMM takes float16, bfloat16 or (tf32) float32 operands of one type";
  if (d.a_vec || d.b_vec) return "a matrix-vector product";
  if (d.m == 0 || d.nn == 0 || d.k == 0 || d.batches == 0) return "an empty product";
  return "";
}

std::vector<Tunables> gemm_tc_candidates(const graph::Graph& g, const GemmDims& d,
                                         const Target& target) {
  auto tiles = [&](int bm, int bn) {
    return ((d.m + bm - 1) / bm) * ((d.nn + bn - 1) / bn) * d.batches;
  };
  const bool tf32 = g.value(d.node->inputs[0]).dtype == DType::Float32;
  // Heuristic, from H200 timings: 128 x 256 for large outputs (three waves of it or more:
  // 4096^3 in float16 at 277 TFLOP/s against 220 with 128 x 128; 8192^3 best too); else
  // 64 x 64 x 64 (4096 x 3072 x 768 + GELU 109 us against 120 at 128 x 256, 4096 x 768 x 3072
  // 81 us against 106-135); where even those leave half the SMs idle and k is long, split-K
  // over 2-4 blocks (128 x 768 x 768 + GELU: 12.0 us at split 4 against 12.9). The tf32 tiles are
  // those ptxas (CUDA 12, sm_90) fits in registers without spilling for all four operand layouts:
  // warp tiles of 64 x 32 or 32 x 64 with bk 16 (two m16n8k8 k-steps a stage; 114-220 registers);
  // 128 x 256 tiles, warp tiles of 64 x 64, and bk 32 spill for some layout.
  const TcTile def = tf32 ? (tiles(128, 128) >= target.num_sms  ? TcTile{128, 128, 16, 2, 4, 4}
                             : tiles(64, 128) >= target.num_sms ? TcTile{64, 128, 16, 1, 4, 4}
                                                                : TcTile{64, 64, 16, 2, 2, 4})
                          : (tiles(128, 256) >= 3 * target.num_sms ? TcTile{128, 256, 32, 2, 4, 3}
                                                                   : TcTile{64, 64, 64, 2, 2, 3});
  TcTile def_split{64, 64, 32, 2, 2, 4};
  for (int split : {4, 2})
    if (!tf32 && target.sm >= 90 && !target.emulated && tiles(64, 64) * split <= target.num_sms &&
        (d.k + 31) / 32 >= 2 * split && def_split.split == 1)
      def_split.split = split;
  const std::initializer_list<TcTile> half_tiles = {
      {128, 256, 32, 2, 4, 3}, {128, 256, 64, 2, 4, 3}, {256, 128, 32, 4, 2, 3},
      {256, 128, 64, 4, 2, 3}, {128, 128, 32, 2, 4, 3}, {128, 128, 32, 2, 4, 4},
      {128, 128, 64, 2, 4, 3}, {128, 64, 32, 2, 2, 4},  {64, 128, 32, 2, 2, 4},
      {64, 64, 32, 2, 2, 4},   {64, 64, 64, 2, 2, 3}};
  const std::initializer_list<TcTile> tf32_tiles = {
      {128, 128, 16, 2, 4, 4}, {128, 128, 16, 2, 4, 3}, {128, 128, 16, 4, 2, 4},
      {64, 128, 16, 1, 4, 4},  {64, 64, 16, 2, 2, 4},   {64, 64, 16, 2, 2, 3}};
  std::vector<Tunables> c{tunables_of(def_split.split > 1 ? def_split : def)};
  if (def_split.split > 1) c.push_back(tunables_of(def));
  for (TcTile t : tf32 ? tf32_tiles : half_tiles) {
    Tunables tu = tunables_of(t);
    if (std::find(c.begin(), c.end(), tu) == c.end()) c.push_back(tu);
  }
  // Split-K where the output tiles leave SMs idle and k is long enough to share: clusters
  // of 2-8 blocks (sm_90; not in the CPU emulator).
  const std::initializer_list<TcTile> half_split = {{64, 64, 64, 2, 2, 3},
                                                    {64, 64, 32, 2, 2, 4},
                                                    {64, 128, 32, 2, 2, 4},
                                                    {128, 128, 32, 2, 4, 3}};
  const std::initializer_list<TcTile> tf32_split = {
      {64, 64, 16, 2, 2, 4}, {64, 128, 16, 1, 4, 4}, {128, 128, 16, 2, 4, 4}};
  if (target.sm >= 90 && !target.emulated)
    for (TcTile t : tf32 ? tf32_split : half_split)
      for (int split : {2, 4, 8}) {
        t.split = split;
        const int64_t ktiles = (d.k + t.bk - 1) / t.bk;
        Tunables tu = tunables_of(t);
        if (tiles(t.bm, t.bn) * split <= 2 * int64_t{target.num_sms} && ktiles >= 2 * split &&
            std::find(c.begin(), c.end(), tu) == c.end())
          c.push_back(tu);
      }
  return c;
}

namespace {

// The epilogue, once per accumulator: accum[mi][ni][2 * r + q] is C's element
// (mi * 16 + lane / 4 + 8 * r, ni * 8 + 2 * (lane % 4) + q) of the warp's tile; the two
// q's are adjacent in the output when its last dim is j, of even size: one paired store.
// CudaUnsupported where a store cannot be generated.
void emit_tc_epilogue(Emitter& e, const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                      const TcTile& t) {
  const int warp_m = t.bm / t.wm, warp_n = t.bn / t.wn;
  e.line("#pragma unroll");
  e.open(fmt::format("for (int mi = 0; mi < {}; ++mi) {{", warp_m / 16));
  e.line("#pragma unroll");
  e.open(fmt::format("for (int ni = 0; ni < {}; ++ni) {{", warp_n / 8));
  e.line("#pragma unroll");
  e.open("for (int r = 0; r < 2; ++r) {");
  e.line(fmt::format("const long long i = i0 + (warp / {}) * {} + mi * 16 + lane / 4 + r * 8;",
                     t.wn, warp_m));
  e.line(fmt::format("const long long jp = j0 + (warp % {}) * {} + ni * 8 + (lane % 4) * 2;", t.wn,
                     warp_n));
  emit_gemm_stores(e, g, d, epi, 2, "accum[mi][ni][2 * r + q]");
  for (int c = 0; c < 3; ++c) e.close();  // r, ni, mi
}

}  // namespace

std::optional<Kernel> gemm_tc_kernel(const graph::Graph& g, const fusion::Group& group,
                                     const GemmDims& d, const GemmEpilogue& epi,
                                     const Target& target, const Tunables& tune,
                                     std::string* why_not) {
  std::string why = gemm_tc_unsupported(g, group, d, target);
  const graph::Node& n = *d.node;
  const graph::Value& a = g.value(n.inputs[0]);
  const TcTile t = tile_of(tune, static_cast<int>(dtype_size(a.dtype)), d);
  if (why.empty()) why = tile_problem(t);
  const int64_t tiles_m = (d.m + t.bm - 1) / t.bm, tiles_n = (d.nn + t.bn - 1) / t.bn;
  if (why.empty()) why = gemm_too_large(d, t.bm, t.bn, t.bk, t.split);
  if (!why.empty()) {
    *why_not = why;
    return std::nullopt;
  }
  const int warp_m = t.bm / t.wm, warp_n = t.bn / t.wn;
  Emitter e = gemm_emitter(g, group, d);
  const OperandView &va = *d.view[0], &vb = *d.view[1];
  const std::string pa = e.input_param(va.root), pb = e.input_param(vb.root);
  const std::string a_off = operand_view_offset(va), b_off = operand_view_offset(vb);
  const bool split = t.split > 1;
  if (split && (target.sm < 90 || target.emulated)) {
    *why_not = "split-K needs thread-block clusters (sm_90)";
    return std::nullopt;
  }
  e.line("const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;");
  emit_gemm_tile_origin(e, tiles_m, tiles_n, t.bm, t.bn,
                        split ? fmt::format("(int)blockIdx.x / {}", t.split) : "(int)blockIdx.x");
  e.open(fmt::format("for (long long b = blockIdx.z; b < {}LL; b += gridDim.z) {{", d.batches));
  e.line(fmt::format("float accum[{}][{}][4];", warp_m / 16, warp_n / 8));
  std::string krange;
  if (split) {
    const int64_t share = ((d.k + t.bk - 1) / t.bk + t.split - 1) / t.split;  // k-tiles a block
    e.line(fmt::format("const int kt_begin = (int)(blockIdx.x % {}) * {};", t.split, share));
    krange = fmt::format(", kt_begin, kt_begin + {}", share);
  }
  e.line(
      fmt::format("tile_gemm::run(accum, {} + {}, {}LL, {} + {}, {}LL, {}LL, {}LL, {}LL, i0, "
                  "j0, smem{});",
                  pa, a_off, va.ld, pb, b_off, vb.ld, d.m, d.nn, d.k, krange));
  if (split)
    e.line(fmt::format(
        "if (!braze_tc_split_reduce<{}>(accum, reinterpret_cast<float*>(braze_smem))) continue;",
        t.split));
  try {
    emit_tc_epilogue(e, g, d, epi, t);
  } catch (const CudaUnsupported& u) {
    *why_not = u.why;
    return std::nullopt;
  }
  e.close();  // b

  Kernel kern = kernel_record(e, fusion::GroupKind::Gemm, group, tunables_of(t));
  kern.block = {static_cast<unsigned>(t.threads()), 1, 1};
  kern.grid = {static_cast<unsigned>(tiles_m * tiles_n * t.split), 1,
               static_cast<unsigned>(std::clamp<int64_t>(d.batches, 1, 65535))};
  kern.shared_bytes = static_cast<unsigned>(t.shared_bytes());
  std::string code = fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({0}){13} KERNEL_NAME({1}) {{\n"
      "  typedef braze_tc_gemm<{2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}> tile_gemm;\n"
      "  static_assert(tile_gemm::kSharedBytes <= {11}, \"the launch's shared memory\");\n"
      "  BRAZE_DYNAMIC_SMEM(braze_smem, {11});\n"
      "  const braze_saddr smem = braze_smem_addr(braze_smem);\n{12}}}\n",
      t.threads(), e.signature(), cuda_storage_type(a.dtype), t.bm, t.bn, t.bk, t.wm, t.wn,
      t.stages, va.kcontig ? "true" : "false", vb.kcontig ? "true" : "false", kern.shared_bytes,
      e.body(), split ? fmt::format(" __cluster_dims__({}, 1, 1)", t.split) : "");
  finish_kernel(g, kern, code, kMmaHelpers);
  return kern;
}

}  // namespace braze::codegen
