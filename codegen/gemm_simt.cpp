// The SIMT GEMM schedule: any MatMul / Gemm group (float32, float64, integers, and the half
// types where the tensor-core schedule does not apply), accumulating in the output's compute
// type (float for the half types). The main loop is device code, braze_simt_gemm in
// codegen/device/simt_gemm.cuh: a block computes a bm x bn tile, each thread a tm x tn
// micro-tile of 4 x 4 sub-tiles, both operands staged k-major in two shared-memory stages
// through registers, fragments read 16 bytes at a time; or, for float32 operands read in place
// on sm_80+ (tile key st), in st stages filled by cp.async (braze_simt_gemm_async in
// codegen/device/simt_async.cuh), st - 1 k-tiles in flight. This file picks the tile, tells the
// loop how to read each operand, rasterises the blocks (emit_gemm_tile_origin) and writes the
// epilogue (gemm.h), 4 adjacent columns at a time.
//
// An operand read in place — a kernel input, or a view of one through the layout ops in front
// of the product (gemm.h, OperandView) — is read straight from its pointer, VEC elements (16
// bytes, at most 4) a load when its strides allow, along its contiguous dim. Any other
// operand — a Cast the partitioner put in front of the product, a 1-D operand — is read
// through the emitter, one element at a time, by a lambda the main loop calls; those loads
// walk the operand along the dim that is contiguous when it is a plain input. Batch dims
// broadcast over blockIdx.z, then a loop.
//
// Split-K (split 2, 4 or 8; float accumulators, sm_90): where the output has too few tiles to
// fill the GPU and k is long (BERT at batch 1: 128 x 768 x 3072 is 24 tiles of 64 x 64), a
// cluster of `split` blocks computes each tile, each over its share of the k-tiles, and the
// cluster's rank 0 adds the others' sums through distributed shared memory
// (braze_split_reduce) and runs the epilogue.
#include <braze/dtype.h>

#include <algorithm>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/gemm.h"
#include "codegen/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

namespace {

constexpr int64_t kStaticSharedBytes = 48 * 1024;

// One point of the search space: block tile bm x bn, k-tile bk, thread micro-tile tm x tn,
// whether the next k-step's fragments are read ahead into registers of their own (pf), and
// st: 0 for two stages filled through registers, else st stages filled by cp.async
// (device/simt_async.cuh; float32 operands read in place, sm_80+).
struct SimtTile {
  int bm, bn, bk, tm, tn, pf, split = 1, st = 0;
  int threads() const { return (bm / tm) * (bn / tn); }
  // The stages; split-K also parks the tile's partial sums there.
  int64_t shared_bytes(int acc_bytes) const {
    const int64_t stages = int64_t{st ? st : 2} * bk * (bm + 4 + bn + 4) * acc_bytes;
    return split > 1 ? std::max<int64_t>(stages, int64_t{bm} * bn * 4) : stages;
  }
};

// A missing key reads 0, which tile_problem refuses (pf 0 is valid: no prefetch).
SimtTile tile_of(const Tunables& t) {
  auto get = [&t](const char* key) { return t.count(key) ? t.at(key) : 0; };
  const int split = t.count("split") ? t.at("split") : 1;
  return {get("bm"), get("bn"), get("bk"), get("tm"), get("tn"), get("pf"), split, get("st")};
}

Tunables tunables_of(const SimtTile& t) {
  Tunables u{{"bm", t.bm}, {"bn", t.bn}, {"bk", t.bk}, {"tm", t.tm}, {"tn", t.tn}, {"pf", t.pf}};
  if (t.split > 1) u["split"] = t.split;
  if (t.st) u["st"] = t.st;
  return u;
}

// Bytes of the accumulator type.
int acc_bytes_of(DType out) {
  const ComputeType acc = compute_type(out);
  return acc == ComputeType::Float || acc == ComputeType::Bool ? 4 : 8;
}

// Why the main loop cannot take this tile shape, or empty.
std::string tile_problem(const SimtTile& t, int acc_bytes) {
  const int rt = t.tm > 0 ? t.bm / t.tm : 0, ct = t.tn > 0 ? t.bn / t.tn : 0;
  const int lane_rows = ct > 0 ? 32 / std::min(ct, 8) : 0;
  if (t.bm <= 0 || t.bn <= 0 || t.tm <= 0 || t.tn <= 0 || t.tm % 4 != 0 || t.tn % 4 != 0 ||
      t.bm % t.tm != 0 || t.bn % t.tn != 0 || t.bk <= 0 || t.bk % 4 != 0 || t.threads() % 32 != 0 ||
      t.threads() > 1024 || 32 % std::min(ct, 8) != 0 || rt % lane_rows != 0 ||
      (t.pf != 0 && t.pf != 1))
    return fmt::format("SIMT GEMM tile {}x{}x{} with {}x{} per thread is not supported", t.bm, t.bn,
                       t.bk, t.tm, t.tn);
  if (t.split < 1 || t.split > 16 ||
      (t.st == 0 && t.split != 1 && t.split != 2 && t.split != 4 && t.split != 8))
    return "SIMT split-K over 1 to 16 blocks (register-staged tiles: 1, 2, 4 or 8)";
  if (t.split > 1 && acc_bytes != 4) return "SIMT split-K sums in float only";
  if (t.st != 0 && (t.st < 2 || t.st > 6 || t.pf != 0 || acc_bytes != 4))
    return "SIMT cp.async stages: 2 to 6, float accumulators, no prefetched fragments";
  if (t.shared_bytes(acc_bytes) > kStaticSharedBytes)
    return fmt::format("SIMT GEMM tile needs {} bytes of shared memory", t.shared_bytes(acc_bytes));
  return "";
}

// Why the cp.async stages (tile key st) cannot read this product's operands, or empty: both
// must be float32 tensors (or views of them) read in place, with float accumulators, sm_80+.
std::string simt_async_problem(const graph::Graph& g, const GemmDims& d, const Target& target) {
  if (target.sm < 80) return "SIMT cp.async stages need sm_80";
  if (acc_bytes_of(g.value(d.node->outputs[0]).dtype) != 4)
    return "SIMT cp.async stages: float accumulators only";
  for (int i = 0; i < 2; ++i) {
    const bool vec = i == 0 ? d.a_vec : d.b_vec;
    const graph::Value& v = g.value(d.node->inputs[i]);
    if (!d.view[i] || vec || (v.constant && v.constant->numel() == 1) ||
        g.value(d.view[i]->root).dtype != DType::Float32)
      return fmt::format("SIMT cp.async stages: operand {} is not a float32 tensor read in place",
                         i == 0 ? "A" : "B");
  }
  return "";
}

// Elements per vector load of an operand of `dtype`: 16 bytes, at most 4.
int vector_width(DType dtype) {
  return static_cast<int>(std::min<size_t>(4, 16 / std::max<size_t>(1, dtype_size(dtype))));
}

// Emits the declaration of `name`, the main loop's reader of operand `v` (A when `rows_var`
// is "i", B when "jj"): `rows` x k, the block's rows from `row0`, `tile_rows` of them a tile;
// element (row, p) at `coords` (over b, rows_var, p). `operand`: 0 for A, 1 for B (its view in
// d). `kfast`: an operand read through the emitter walks k fastest.
void emit_operand_reader(Emitter& e, const graph::Graph& g, const GemmDims& d, int operand,
                         graph::ValueId v, bool is_vec, const std::vector<std::string>& coords,
                         const std::string& name, const std::string& rows_var,
                         const std::string& row0, int64_t rows, int tile_rows, bool kfast,
                         const SimtTile& t, const std::string& acc) {
  const graph::Value& val = g.value(v);
  const bool scalar_constant = val.constant && val.constant->numel() == 1;
  // An operand read in place (a kernel input, or a view of one through layout ops): straight
  // from its pointer, along its contiguous dim, 16 bytes a load where the strides allow.
  if (d.view[operand] && !is_vec && !scalar_constant) {
    const OperandView& ov = *d.view[operand];
    const graph::Value& root = g.value(ov.root);
    const bool fast = ov.kcontig;
    const int w = vector_width(root.dtype);
    bool aligned = ov.ld % w == 0 && ov.offset % w == 0 && (fast ? d.k : rows) % w == 0 &&
                   (fast ? t.bk : tile_rows) % w == 0;
    for (const graph::StridedDim& f : ov.batch) aligned = aligned && f.stride % w == 0;
    if (t.st) {  // simt_async_problem said the operand is a float32 view
      e.line(fmt::format(
          "braze_simt_async<{}, {}, {}, {}, {}> {}({} + ({}), {}LL, {}, {}LL, {}LL);", tile_rows,
          t.bk, t.threads(), fast ? "true" : "false", !fast && aligned ? w : 1, name,
          e.input_param(ov.root), operand_view_offset(ov), ov.ld, row0, rows, d.k));
      return;
    }
    e.line(
        fmt::format("braze_simt_gmem<{}, {}, {}, {}, {}, {}, {}> {}({} + ({}), {}LL, {}, {}LL, "
                    "{}LL);",
                    cuda_storage_type(root.dtype), acc, tile_rows, t.bk, t.threads(),
                    fast ? "true" : "false", aligned ? w : 1, name, e.input_param(ov.root),
                    operand_view_offset(ov), ov.ld, row0, rows, d.k));
    return;
  }
  const std::string fn = name + "_at";
  e.open(fmt::format("auto {} = [&](long long {}, long long p) -> {} {{", fn, rows_var, acc));
  e.push_scope();
  const std::string x = e.value_at(v, coords);
  e.line(fmt::format("return ({}){};", acc, x));
  e.pop_scope();
  e.close(";");
  e.line(fmt::format("braze_simt_fn<{}, {}, {}, {}, {}, decltype({})> {}({}, {}, {}LL, {}LL);", acc,
                     tile_rows, t.bk, t.threads(), kfast ? "true" : "false", fn, name, fn, row0,
                     rows, d.k));
}

}  // namespace

namespace {

// The cp.async tiles (none where simt_async_problem objects), the default first: 64 x 64 tiles
// of 128 threads holding 8 x 4 each, or 32 x 64 of 4 x 4 (twice the tiles), in four stages of
// 16-deep k-tiles — cuBLAS's shape for these products is 64 x 64 x 8 in three stages, 128
// threads (sm80_xmma_gemm_f32f32) — split over a cluster of blocks: of the two tiles and the
// splits 1-8 that leave each block 8 k-tiles or more, the most blocks up to three an SM,
// ties to the larger tile (cuBLAS runs 2-3 blocks an SM, split over k: BERT b1's 128 x 768 x
// 3072 as 24 tiles x 11 on an H100). The rule fits `--tune` on BERT b1's four float32
// products (H100, 2026-12-07, bench/RESULTS.md): 128 x 2304 x 768 best at 64 x 64 split 5
// (23.8 us; split 4 25.8), 128 x 768 x 768 at 32 x 64 split 5 or 6 (15.3, 15.5; 64 x 64 split 4
// 16.7), 128 x 3072 x 768 at 64 x 64 split 4 (27.0; 32 x 64 split 2 29.3), 128 x 768 x 3072 at
// 32 x 64 split 6 or 8 (36.0, 36.3; 64 x 64 split 8 38.1).
template <class Blocks>
std::vector<SimtTile> async_tiles(const GemmDims& d, const Blocks& blocks, int64_t sms,
                                  bool can_split) {
  const SimtTile quad{64, 64, 16, 8, 4, 0, 1, 4}, half{32, 64, 16, 4, 4, 0, 1, 4};
  const int64_t ktiles = (d.k + quad.bk - 1) / quad.bk;
  auto splits = [&](int s) { return s == 1 || (can_split && ktiles >= 4 * s); };
  SimtTile lead = quad;
  int64_t most = 0;
  for (const SimtTile& t : {quad, half})
    for (int s = 1; s <= 8; ++s)
      if (splits(s) && (s == 1 || ktiles >= 8 * s) && blocks(t) * s <= 3 * sms &&
          blocks(t) * s > most) {
        most = blocks(t) * s;
        lead = t;
        lead.split = s;
      }
  std::vector<SimtTile> out{lead};
  // For --tune, each over every split: the two, 8 x 8 a thread (64 threads: fewer
  // shared-memory reads an FMA) and 8-deep k-tiles in six stages; then two shapes unsplit.
  for (const SimtTile& t :
       {quad, half, SimtTile{64, 64, 16, 8, 8, 0, 1, 4}, SimtTile{64, 64, 8, 8, 4, 0, 1, 6}})
    for (int s : {8, 6, 5, 4, 3, 2, 1})
      if (splits(s) && (t.bk == 16 || ktiles >= 8 * s)) {
        out.push_back(t);
        out.back().split = s;
      }
  // Clusters past 8 blocks (non-portable: the runtime allows them on the kernel, H100 and
  // H200 take 16) where k is long: BERT b1's 128 x 768 x 3072 as 24 tiles x 11, two blocks on
  // every SM, as cuBLAS splits it. Not yet timed on a GPU; not a default.
  for (const SimtTile& t : {quad, half})
    for (int s : {10, 11, 12, 16})
      if (splits(s) && ktiles >= 8 * s && blocks(t) * s <= 4 * sms) {
        out.push_back(t);
        out.back().split = s;
      }
  for (const SimtTile& t :
       {SimtTile{128, 64, 16, 8, 8, 0, 1, 3}, SimtTile{64, 64, 16, 8, 4, 0, 1, 3}})
    out.push_back(t);
  return out;
}

}  // namespace

std::vector<Tunables> gemm_simt_candidates(const graph::Graph& g, const GemmDims& d,
                                           const Target& target) {
  const int acc_bytes = acc_bytes_of(g.value(d.node->outputs[0]).dtype);
  auto blocks = [&](const SimtTile& t) {
    return ((d.m + t.bm - 1) / t.bm) * ((d.nn + t.bn - 1) / t.bn) * d.batches;
  };
  // 8-byte accumulators get micro-tiles of at most 32 (registers); all fit 48 KB of shared
  // memory in two stages.
  const bool wide = acc_bytes == 8;
  const SimtTile big{128, 128, 16, 8, 8, 0}, tall{128, 64, 8, 8, 4, 1}, mid{64, 64, 16, 4, 4, 1},
      narrow{32, 64, 16, 4, 4, 1}, small{32, 32, 16, 4, 4, 1};
  // Heuristic: the largest tile that gives every SM work. The 256-thread tiles with 8 x 8 or
  // 8 x 4 per thread run two blocks an SM, so they want two blocks an SM to share out
  // (8192^3 on an H200: bk 16 at one block an SM 23.8 ms, bk 8 at two 25.5 ms; 64 x 64
  // already beats smaller tiles at half an SM's worth of blocks).
  const int64_t sms = target.num_sms;
  SimtTile def = small;
  if (!wide && blocks(big) >= 2 * sms)
    def = big;
  else if (blocks(tall) >= 2 * sms)
    def = tall;
  else if (2 * blocks(mid) >= sms)  // 128 x 3072 x 768 + GELU: 40.5 us, 32 x 64 56.4 us
    def = mid;
  else if (blocks(narrow) >= sms)
    def = narrow;
  // Split-K where the default leaves SMs idle (fewer blocks than SMs) and k is long: the 64 x 64
  // tile (else 32 x 64) over as many blocks a tile as keep at most two blocks an SM busy with
  // at least 4 k-tiles each (float accumulators; clusters: sm_90). BERT at batch 1, 128 x 768
  // x 3072: 96 blocks of 32 x 32 (64 threads each) took 170 us on the H200 (2026-12-02).
  const bool can_split = !wide && target.sm >= 90 && !target.emulated;
  auto with_split = [&](SimtTile t, int s) {
    t.split = s;
    return t;
  };
  std::vector<SimtTile> splits;  // largest split first, mid's before narrow's
  if (can_split)
    for (const SimtTile& t : {mid, narrow})
      for (int s : {8, 4, 2})
        if (blocks(t) * s <= 2 * sms && (d.k + t.bk - 1) / t.bk >= 4 * s)
          splits.push_back(with_split(t, s));
  if (!splits.empty() && blocks(def) < sms) def = splits.front();
  std::vector<SimtTile> staged;
  if (simt_async_problem(g, d, target).empty()) staged = async_tiles(d, blocks, sms, can_split);
  // Where the register-staged default is not 128 x 128 (fewer than two blocks an SM of it)
  // and the cp.async one fills half the SMs or more (H100, 2026-12-07, against the register-staged
  // default: 128 x 2304 x 768 25.9 us against 39.5, 1024 x 2304 x 768 129 against 203, 4096
  // x 768 x 3072 589 against 881). Larger outputs keep 128 x 128 until measured against it.
  if (!staged.empty() && blocks(big) < 2 * sms &&
      2 * blocks(staged.front()) * staged.front().split >= sms)
    def = staged.front();
  std::vector<Tunables> c{tunables_of(def)};
  std::vector<SimtTile> all = {big,
                               SimtTile{128, 128, 8, 8, 8, 1},
                               SimtTile{128, 128, 8, 8, 8, 0},
                               tall,
                               SimtTile{64, 128, 8, 4, 8, 1},
                               mid,
                               SimtTile{64, 64, 8, 8, 8, 1},
                               narrow,
                               small};
  all.insert(all.end(), splits.begin(), splits.end());
  all.insert(all.end(), staged.begin(), staged.end());
  for (const SimtTile& t : all) {
    if (wide && t.tm * t.tn > 32) continue;
    if (!tile_problem(t, acc_bytes).empty()) continue;
    Tunables tu = tunables_of(t);
    if (std::find(c.begin(), c.end(), tu) == c.end()) c.push_back(tu);
  }
  return c;
}

namespace {

// The block's tile: its origin, the batch loop, the operands' readers, the main loop (split
// over a cluster's blocks where asked) and the epilogue, into `e`.
void emit_simt_tile(Emitter& e, const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                    const SimtTile& t, const std::string& acc) {
  const graph::Node& n = *d.node;
  const graph::Value& a = g.value(n.inputs[0]);
  const graph::Value& b = g.value(n.inputs[1]);
  const int64_t tiles_m = (d.m + t.bm - 1) / t.bm, tiles_n = (d.nn + t.bn - 1) / t.bn;
  // A's element (i, p) and B's (p, jj), in their own coordinates.
  std::vector<std::string> a_tail = d.a_vec ? std::vector<std::string>{"p"}
                                    : d.ta  ? std::vector<std::string>{"p", "i"}
                                            : std::vector<std::string>{"i", "p"};
  std::vector<std::string> b_tail = d.b_vec ? std::vector<std::string>{"p"}
                                    : d.tb  ? std::vector<std::string>{"jj", "p"}
                                            : std::vector<std::string>{"p", "jj"};
  std::vector<std::string> a_coords = operand_coords(
      d.out_batch, Shape(a.shape.begin(), a.shape.end() - (d.a_vec ? 1 : 2)), a_tail);
  std::vector<std::string> b_coords = operand_coords(
      d.out_batch, Shape(b.shape.begin(), b.shape.end() - (d.b_vec ? 1 : 2)), b_tail);

  const bool split = t.split > 1;
  emit_gemm_tile_origin(e, tiles_m, tiles_n, t.bm, t.bn,
                        split ? fmt::format("(int)blockIdx.x / {}", t.split) : "(int)blockIdx.x");
  const int64_t ktiles = (d.k + t.bk - 1) / t.bk,
                share = (ktiles + t.split - 1) / t.split;  // k-tiles a block
  // One batch: no loop (fewer registers live across the main loop); else a 32-bit one.
  if (d.batches == 1) {
    e.open("{");
    e.line("const long long b = 0;");
  } else {
    e.open(fmt::format("for (int bz = blockIdx.z; bz < {}; bz += gridDim.z) {{", d.batches));
    e.line("const long long b = bz;");
  }
  // A is stored with k contiguous unless transposed (transA); B only when transposed.
  emit_operand_reader(e, g, d, 0, n.inputs[0], d.a_vec, a_coords, "la", "i", "i0", d.m, t.bm, !d.ta,
                      t, acc);
  emit_operand_reader(e, g, d, 1, n.inputs[1], d.b_vec, b_coords, "lb", "jj", "j0", d.nn, t.bn,
                      d.tb, t, acc);
  e.line(fmt::format("{} sum[{}][{}];", acc, t.tm, t.tn));
  // The main loop's template arguments: whether fragments are prefetched (register stages).
  const std::string run =
      t.st ? "tile_gemm::run" : fmt::format("tile_gemm::run<{}>", t.pf ? "true" : "false");
  if (split) {
    // Block rank r of the cluster sums k-tiles r * share onwards (the last share may be short
    // or empty).
    e.line(fmt::format("const int kt0 = (int)(blockIdx.x % {}) * {};", t.split, share));
    e.line(fmt::format("{}(sum, la, lb, {} - kt0 < {} ? {} - kt0 : {}, smem, kt0);", run, ktiles,
                       share, ktiles, share));
    e.open(fmt::format(
        "if (braze_split_reduce<{}, {}>(&sum[0][0], reinterpret_cast<float*>(smem))) {{", t.split,
        t.tm * t.tn));
  } else {
    e.line(fmt::format("{}(sum, la, lb, {}, smem);", run, ktiles));
  }
  // The epilogue: accumulator row ti, columns 4s .. 4s + 3 are adjacent in C.
  e.line("#pragma unroll");
  e.open(fmt::format("for (int ti = 0; ti < {}; ++ti) {{", t.tm));
  e.line("const long long i = i0 + tile_gemm::row_of(tr, ti);");
  e.line("#pragma unroll");
  e.open(fmt::format("for (int s = 0; s < {}; ++s) {{", t.tn / 4));
  e.line("const long long jp = j0 + tile_gemm::col_of(tc, 4 * s);");
  emit_gemm_stores(e, g, d, epi, 4, "sum[ti][4 * s + q]");
  e.close();
  e.close();
  if (split) e.close();
  e.close();
}

// The kernel around the tile: launch bounds, the tile type, the shared stages.
std::string simt_kernel_text(const Emitter& e, const SimtTile& t, int acc_bytes,
                             const std::string& acc) {
  // Two 256-thread blocks an SM (at most 128 registers a thread) where ptxas fits the tile
  // without spilling: float, up to 32 accumulators a thread, or 64 without prefetched
  // fragments and with one float4 of each operand in flight (bk 8). The rest take what
  // they need (ptxas -v, sm_90).
  const bool two_blocks =
      t.threads() == 256 && acc_bytes == 4 && (t.tm * t.tn <= 32 || (t.pf == 0 && t.bk == 8));
  // cp.async stages: 128 registers a thread for up to 32 accumulators, else 255, and blocks
  // as many as that leaves room for.
  const int min_blocks = t.st ? std::clamp((t.tm * t.tn <= 32 ? 512 : 256) / t.threads(), 1, 8)
                         : two_blocks ? 2
                                      : 1;
  const bool split = t.split > 1;
  // The stages are declared as 4-vectors of the accumulator type, for their alignment.
  // split: the stages also hold the tile's partial sums, bm x bn floats.
  const std::string elems =
      split ? fmt::format("(tile_gemm::kSharedElems > {0} ? tile_gemm::kSharedElems : {0})",
                          t.bm * t.bn)
            : "tile_gemm::kSharedElems";
  return fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({0}, {1}){10} KERNEL_NAME({2}) {{\n"
      "  typedef {12} tile_gemm;\n"
      "  __shared__ braze_vec<{3}, 4> stages[{11} / 4];\n"
      "  {3}* const smem = stages[0].v;\n"
      "  const int tr = tile_gemm::thread_row(), tc = tile_gemm::thread_col();\n{9}}}\n",
      t.threads(), min_blocks, e.signature(), acc, t.bm, t.bn, t.bk, t.tm, t.tn, e.body(),
      split ? fmt::format(" __cluster_dims__({}, 1, 1)", t.split) : "", elems,
      t.st ? fmt::format("braze_simt_gemm_async<{}, {}, {}, {}, {}, {}>", t.bm, t.bn, t.bk, t.tm,
                         t.tn, t.st)
           : fmt::format("braze_simt_gemm<{}, {}, {}, {}, {}, {}>", acc, t.bm, t.bn, t.bk, t.tm,
                         t.tn));
}

}  // namespace

std::optional<Kernel> gemm_simt_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const GemmDims& d, const GemmEpilogue& epi,
                                       const Target& target, const Tunables& tune,
                                       std::string* why_not) {
  const graph::Value& y = g.value(d.node->outputs[0]);
  const std::string acc = cuda_compute_type(y.dtype);
  const int acc_bytes = acc_bytes_of(y.dtype);
  const SimtTile t = tile_of(tune);
  std::string why = tile_problem(t, acc_bytes);
  const int64_t tiles_m = (d.m + t.bm - 1) / t.bm, tiles_n = (d.nn + t.bn - 1) / t.bn;
  if (why.empty()) why = gemm_too_large(d, t.bm, t.bn, t.bk, t.split);
  if (why.empty() && t.split > 1 && (target.sm < 90 || target.emulated))
    why = "split-K needs thread-block clusters (sm_90)";
  if (why.empty() && t.st) why = simt_async_problem(g, d, target);
  if (!why.empty()) {
    *why_not = why;
    return std::nullopt;
  }
  Emitter e = gemm_emitter(g, group, d);
  try {
    emit_simt_tile(e, g, d, epi, t, acc);
  } catch (const CudaUnsupported& u) {
    *why_not = u.why;
    return std::nullopt;
  }
  Kernel kern = kernel_record(e, fusion::GroupKind::Gemm, group, tunables_of(t));
  kern.block = {static_cast<unsigned>(t.threads()), 1, 1};
  kern.grid = {static_cast<unsigned>(std::max<int64_t>(tiles_m * tiles_n * t.split, 1)), 1,
               static_cast<unsigned>(std::clamp<int64_t>(d.batches, 1, 65535))};
  kern.empty_launch = d.m == 0 || d.nn == 0 || d.batches == 0;
  finish_kernel(g, kern, simt_kernel_text(e, t, acc_bytes, acc),
                t.st ? kMmaHelpers | kSimtGemmHelpers | kSimtAsyncHelpers : kSimtGemmHelpers);
  return kern;
}

}  // namespace braze::codegen
