// The Hopper tensor-core GEMM schedule (sm_90a): float16 / bfloat16 products with fp32
// accumulation on wgmma, operands streamed by TMA, one warpgroup loading and the others
// computing (the device side is codegen/device/wgmma.cuh; its header says how the stages
// and barriers hand over).
//
//   block tile BM x BN, k in steps of 64          warpgroup 0: one thread issues the TMA
//   ┌──────────── BN ────────────┐                  copies of each k-tile's A and B boxes
//   │ warpgroup 1: m64nBNk16     │ 64               into a free stage (STAGES of them)
//   ├────────────────────────────┤                warpgroups 1..BM/64: four wgmma k16 steps
//   │ warpgroup 2                │ 64               a stage, accumulators in registers
//   └────────────────────────────┘                  (BN / 2 floats a thread)
//
// Shared tiles are what the TMA writes with the 128-byte swizzle, 64 16-bit elements (128
// bytes) a row: an operand stored k-contiguous (A [M, K], B [N, K] with Gemm transB) as one
// box of rows x 64 k; one stored m- or n-contiguous (A [K, M] with transA, B [K, N] from
// MatMul) as 64 x 64 boxes, 64 k-rows of 64 columns each, side by side (wgmma reads it
// "transposed", MN-major). Each wgmma's descriptors give the swizzle atom's strides: the
// eight 128-byte rows of an atom are 1024 bytes apart from the next eight (SBO); for the
// MN-major boxes, one 64-column box to the next is 64 x 128 bytes (LBO).
// TMA zero-fills what lies past the matrix, so partial tiles need no masks until the
// epilogue, which is the other schedules' (gemm.h): element by element on the accumulators
// in registers, the two adjacent columns a lane holds stored as a pair when they are adjacent
// in the output. Blocks walk the tile grid as the other schedules do (emit_gemm_tile_origin);
// batches are blockIdx.z, an operand's batch either the output's or a single matrix shared
// by all. Two block shapes: cooperative (one tile a block, its consumer warpgroups 64 rows
// each, as drawn) and ping-pong ("pp": persistent, see WgTile), whose consumer warpgroups
// take whole tiles in turns and walk the tiles, batches included, across blockIdx.x.
// Either shape may stage its epilogue through shared memory (se, see WgTile).
#include <algorithm>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/gemm.h"
#include "codegen/cuda_hooks.h"

namespace braze::codegen {

namespace {

constexpr int kRowBytes = 128;  // a k-tile: one 128-byte swizzled row of each operand row
constexpr int kBox = 64;        // m- or n-contiguous (16-bit) operands load 64 x 64 boxes

// A k-tile's elements: 64 16-bit ones, or 32 floats read as tf32.
int k_tile(const GemmDims& d) { return kRowBytes / d.elem_bytes; }
int64_t k_tiles(const GemmDims& d) { return (d.k + k_tile(d) - 1) / k_tile(d); }

// Whether `split` blocks each get some of `ktiles` k-tiles (shares of ⌈ktiles / split⌉).
bool split_shares(int64_t ktiles, int split) {
  const int64_t share = (ktiles + split - 1) / split;
  return (split - 1) * share < ktiles;
}
constexpr int64_t kMaxSharedBytes = 227 * 1024;
// se: a staged block is 64 rows of 32 se floats, row r's columns XOR-ed with 8 (r % 4), so
// that the fragments' 8-byte writes (rows lane / 4, columns 2 (lane % 4)) hit distinct banks
// in each half-warp, and a quarter-warp's 16-byte reads of 32 adjacent floats still do.
constexpr int kStageCols = 32;

// pp ("ping-pong", persistent): one block an SM walks the tiles; its two consumer warpgroups
// take alternate bm x bn tiles (each whole, bm / 64 wgmma's a k16 step), so that one's
// epilogue overlaps the other's wgmma's, and the producer loads the next tile's k-tiles while
// a tile finishes.
// se ("staged epilogue", se = 1, 2 or 4): each consumer warpgroup passes its accumulators
// through shared memory, 64 rows x 32 se columns at a time, and applies the epilogue to 4
// adjacent columns a thread: whole-sector stores (a warp writes 32 x 8 bytes of 16-bit
// output along rows, where writing straight from the fragments writes 8 rows x 16 bytes,
// half of each sector). Unrolled (sr = 0) or rolled (sr = 1: loops over the blocks and over
// 16 elements a thread at a time, so that the epilogue's code is one block's 16 elements:
// unrolled, a GELU epilogue of 64 x 256 is ~5000 instructions, which the SM's instruction
// caches do not hold, and its warps stall on instruction fetch) or half-rolled (sr = 2: the
// blocks unrolled, 32 elements a step rolled; sr = 1 keeps every block's accumulators live
// through its loop, this lets each block's die once staged).
struct WgTile {
  int bm, bn, stages;
  bool pp = false;
  int se = 0;  // 0: no staging, else the staged block is 32 se columns wide
  int sr = 0;  // se: 0 unrolled, 1 rolled, 2 blocks unrolled and 32 elements a step rolled
  int rr = 8;  // raster: the walk takes rr rows of tiles at a time (emit_gemm_tile_origin)
  int cw = 1;  // cooperative: 64-row blocks a consumer computes (2: 256 x bn as two 128-row halves)
  int64_t rb = 0;   // se: each consumer's buffer of epilogue inputs copied ahead (cp.async), bytes
  int split = 1;    // split-K: a cluster of `split` blocks a tile, each over a share of the k-tiles
  bool ca = false;  // pp, se: the epilogue's row-wise inputs copied ahead as each tile begins (rb)
  int consumers() const { return pp ? 2 : bm / (64 * cw); }
  int turn_bytes() const { return pp ? 16 : 0; }
  int row_blocks() const { return pp ? bm / 64 : cw; }  // 64-row blocks a consumer computes
  int threads() const { return 128 * (1 + consumers()); }
  int64_t a_bytes() const { return int64_t{bm} * kRowBytes; }
  int64_t stage_bytes() const { return int64_t{bm + bn} * kRowBytes; }
  // After the stages: two barriers a stage (pp: and two turn barriers); se: each consumer's
  // staging buffer (16-byte aligned); and slack to align the stages to 1024 bytes.
  int64_t staging_offset() const {
    return (stages * stage_bytes() + 16 * stages + turn_bytes() + 15) / 16 * 16;
  }
  int stage_cols() const { return kStageCols * se; }
  int64_t staging_bytes() const { return int64_t{64} * stage_cols() * 4; }  // 64 rows
  // split: every thread's partial sums parked in shared memory (over the stages) for rank 0.
  int64_t red_bytes() const { return int64_t{row_blocks()} * bn / 2 * threads() * 4; }
  int64_t shared_bytes() const {
    return se ? staging_offset() + consumers() * (staging_bytes() + rb) + 1024
              : stages * stage_bytes() + 16 * stages + turn_bytes() + 1024;
  }
};

Tunables tunables_of(const WgTile& t) {
  Tunables u{{"tc", 1}, {"wg", 1}, {"bm", t.bm}, {"bn", t.bn}, {"stages", t.stages}};
  if (t.pp) u["pp"] = 1;
  if (t.se) u["se"] = t.se;
  if (t.sr) u["sr"] = t.sr;
  if (t.rr != 8) u["rr"] = t.rr;
  if (t.cw != 1) u["cw"] = t.cw;
  if (t.split != 1) u["split"] = t.split;
  if (t.ca) u["ca"] = 1;
  return u;
}

// The batch factors of a view that the TMA walks (those of non-zero stride; a broadcast
// factor reads the same box for every digit), outermost first, with the divisor that gives
// each one's digit of the output batch b.
struct TmaBatchDim {
  graph::StridedDim dim;
  int64_t inner;   // the product of the sizes of the factors after it
  bool outermost;  // b / inner is the digit itself
};
std::vector<TmaBatchDim> tma_batch_dims(const OperandView& v) {
  std::vector<TmaBatchDim> out;
  int64_t inner = 1;
  for (size_t k = v.batch.size(); k-- > 0;) {
    if (v.batch[k].stride != 0) out.insert(out.begin(), {v.batch[k], inner, k == 0});
    inner *= v.batch[k].size;
  }
  return out;
}

// The asm of one wgmma step over a k-tile's 32 bytes (m64nNk16 of 16-bit operands, m64nNk8
// of tf32 ones) with fp32 accumulators d[N / 2], A and B from shared memory by descriptor,
// D += A B; trans_* marks an m- or n-contiguous (MN-major) operand (16-bit types only: tf32
// takes K-major operands alone, and no transpose immediates).
std::string wgmma_step_function(int n, const char* type, bool trans_a, bool trans_b) {
  const bool tf32 = std::string(type) == "tf32";
  const int regs = n / 2;
  std::string list, outs;
  for (int r = 0; r < regs; ++r) {
    list += fmt::format("{}%{}", r ? ", " : "", r);
    outs += fmt::format("{}\"+f\"(d[{}])", r ? ", " : "", r);
  }
  return fmt::format(
      "BRAZE_DEV void braze_wgmma_step(float (&d)[{0}], unsigned long long da, "
      "unsigned long long db) {{\n"
      "  asm volatile(\"{{\\n .reg .pred p;\\n setp.ne.b32 p, %{1}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{2}k{7}.f32.{3}.{3} {{{4}}}, %{5}, %{6}, p, 1, 1{8};"
      "\\n}}\\n\"\n"
      "      : {9}\n"
      "      : \"r\"(1), \"l\"(da), \"l\"(db));\n"
      "}}\n",
      regs, regs, n, type, list, regs + 1, regs + 2, tf32 ? 8 : 16,
      tf32 ? std::string() : fmt::format(", {}, {}", trans_a ? 1 : 0, trans_b ? 1 : 0), outs);
}

}  // namespace

std::vector<std::string> tma_batch_coords(const OperandView& v) {
  std::vector<std::string> c;
  for (const TmaBatchDim& t : tma_batch_dims(v)) {
    std::string digit = t.inner == 1 ? "(int)b" : fmt::format("(int)(b / {})", t.inner);
    c.push_back(t.outermost ? digit : fmt::format("{} % {}", digit, t.dim.size));
  }
  if (c.empty()) c.push_back("0");
  return c;
}

TensorMap tma_view_map(const OperandView& v, size_t param, DType dtype, int64_t contig,
                       int64_t rows, unsigned box_contig, unsigned box_rows) {
  const uint64_t es = dtype_size(dtype);
  TensorMap m;
  m.param = param;
  m.offset_bytes = static_cast<uint64_t>(v.offset) * es;
  m.dtype = dtype;
  m.dims = {static_cast<uint64_t>(contig), static_cast<uint64_t>(rows)};
  m.strides = {static_cast<uint64_t>(v.ld) * es};
  m.box = {box_contig, box_rows};
  for (const TmaBatchDim& t : tma_batch_dims(v)) {
    m.dims.push_back(static_cast<uint64_t>(t.dim.size));
    m.strides.push_back(static_cast<uint64_t>(t.dim.stride) * es);
    m.box.push_back(1);
  }
  if (m.dims.size() == 2) {
    m.dims.push_back(1);
    m.strides.push_back(static_cast<uint64_t>(v.ld * rows) * es);
    m.box.push_back(1);
  }
  return m;
}

namespace {

// Narrow windows: a tap's channels are 16 bytes (graph/passes/narrow_windows.h pads a stem's to
// 8 halves), and a k-tile is per_tile / channels taps, each its own im2col copy into a block of
// 16-byte rows (no swizzle); otherwise a k-tile is one tap's channels (or a 64-channel share).
bool narrow(const WindowView& w, int elem_bytes) { return w.channels * elem_bytes == 16; }

// Why TMA's im2col mode cannot load the windows w as the wgmma schedule's A tiles, or empty:
// channels in whole k-tiles (a k-tile is one tap's channels: 64, or 32 floats) or narrow, 1 to
// 3 spatial dims, window strides up to 8 (TMA's traversal strides), corners within the range the
// map encodes for its rank (±2^15, ±2^7, ±2^4 for 3, 4, 5 dims), filter offsets in 16 bits.
std::string window_problem(const WindowView& w, int64_t per_tile, int elem_bytes) {
  const graph::WindowGeometry& g = w.geometry;
  const size_t r = g.rank();
  if (r < 1 || r > 3) return "implicit-GEMM convolution: 1 to 3 spatial dims";
  if (w.channels % per_tile != 0 && !narrow(w, elem_bytes))
    return fmt::format(
        "implicit-GEMM convolution: {} channels, not a multiple of {} nor of 16 bytes a tap",
        w.channels, per_tile);
  const int64_t corner = int64_t{1} << (r == 1 ? 15 : r == 2 ? 7 : 4);
  for (size_t k = 0; k < r; ++k) {
    const int64_t span = g.dilation[k] * (g.kernel[k] - 1);
    if (g.stride[k] < 1 || g.stride[k] > 8)
      return "implicit-GEMM convolution: a window stride over 8";
    if (g.pad_begin[k] > corner || g.pad_end[k] - span < -corner || g.pad_end[k] - span >= corner ||
        span >= (1 << 15) || g.in[k] >= (1LL << 31))
      return "implicit-GEMM convolution: padding or a window beyond TMA's im2col corners";
  }
  if (w.images >= (1LL << 31)) return "implicit-GEMM convolution: too many images";
  return "";
}

// The im2col tensor map of the windows' input [N, D1 … Dr, C] (TensorMap::im2col): dims C,
// Dr … D1, N; a copy moves `pixels` windows' rows of `channels` (a k-tile's: 64, or 32
// floats). The walk's box of window
// corners runs from −pad_begin to in + pad_end − dilation · (kernel − 1) − 1 by the
// stride, so that it meets every window once, in the product's row order.
TensorMap window_map(const WindowView& w, size_t param, DType dtype, int pixels, int channels) {
  const graph::WindowGeometry& g = w.geometry;
  const uint64_t es = dtype_size(dtype);
  TensorMap m;
  m.param = param;
  m.dtype = dtype;
  m.dims = {static_cast<uint64_t>(w.channels)};
  m.element_strides = {1};
  uint64_t stride = static_cast<uint64_t>(w.channels) * es;
  for (size_t k = g.rank(); k-- > 0;) {
    m.dims.push_back(static_cast<uint64_t>(g.in[k]));
    m.strides.push_back(stride);
    stride *= static_cast<uint64_t>(g.in[k]);
    m.element_strides.push_back(static_cast<uint32_t>(g.stride[k]));
    m.lower.push_back(static_cast<int32_t>(-g.pad_begin[k]));
    m.upper.push_back(static_cast<int32_t>(g.pad_end[k] - g.dilation[k] * (g.kernel[k] - 1)));
  }
  m.dims.push_back(static_cast<uint64_t>(w.images));
  m.strides.push_back(stride);
  m.element_strides.push_back(1);
  m.channels = static_cast<uint32_t>(channels);
  m.pixels = static_cast<uint32_t>(pixels);
  m.swizzle = channels * es != 16;  // a narrow window's copy: a block of 16-byte rows
  return m;
}

}  // namespace

std::string gemm_wgmma_operand_problem(const GemmDims& d, int i) {
  if (i == 0 && !d.view[0] && d.window) return window_problem(*d.window, k_tile(d), d.elem_bytes);
  if (!d.view[i]) return d.no_view[i];
  std::vector<TmaBatchDim> dims = tma_batch_dims(*d.view[i]);
  if (dims.size() > 3)
    return "wgmma schedule: an operand's view has more than 3 batch strides (TMA: 5 dims)";
  for (const TmaBatchDim& t : dims)
    if (t.dim.stride < 0 || t.dim.size > (1LL << 31))
      return "wgmma schedule: a batch stride TMA cannot walk";
  if (d.view[i]->ld <= 0 || d.view[i]->ld >= (1LL << 36))
    return "wgmma schedule: a row stride TMA cannot take";
  return "";
}

std::string gemm_wgmma_unsupported(const graph::Graph& g, const fusion::Group& group,
                                   const GemmDims& d, const Target& target) {
  (void)group;
  if (!target.sm90a || target.emulated) return "wgmma needs sm_90a";
  std::string why = gemm_tc_product_problem(g, d, target);
  if (!why.empty()) return why;
  const graph::Value& a = g.value(d.node->inputs[0]);
  if (a.dtype != DType::Float16 && a.dtype != DType::BFloat16 && a.dtype != DType::Float32)
    return "wgmma schedule: float16, bfloat16 and (tf32) float32 operands";
  // tf32's wgmma reads K-major tiles alone (no transposing a float's 4 bytes in shared memory):
  // A [M, K] and B [N, K] (store_weights_k_major) both k-contiguous.
  if (a.dtype == DType::Float32)
    for (int i = 0; i < 2; ++i)
      if (d.view[i] && !d.view[i]->kcontig)
        return fmt::format("wgmma schedule: tf32 operands are read k-contiguous, {} is not",
                           i == 0 ? "A" : "B");
  for (int i = 0; i < 2; ++i) {
    // TMA's copies are 16-byte ones too: what mma.sync's cannot read, neither can they,
    // except A's windows, which only the im2col mode reads.
    const bool windows = i == 0 && !d.view[0] && d.window;
    why = windows ? "" : gemm_tc_operand_problem(g, d, i);
    if (why.empty()) why = gemm_wgmma_operand_problem(d, i);
    if (!why.empty()) return why;
  }
  if (d.batches > 65535) return "wgmma schedule: more than 65535 batches";
  if (d.m > (1LL << 31) - 256 || d.nn > (1LL << 31) - 256 || d.k > (1LL << 31) - k_tile(d))
    return "wgmma schedule: a dim beyond 32-bit TMA coordinates";
  return "";
}

namespace {

// B read in 64-column boxes (n-contiguous) takes tiles of whole boxes; a k-contiguous B takes
// any multiple of 16 rows.
int bn_step(const GemmDims& d) { return d.view[1] && d.view[1]->kcontig ? 16 : 64; }

// The most stages of a tile's shape that fit (at most 8, at least 2, no more than it has
// k-tiles plus one).
int fitting_stages(WgTile t, int64_t ktiles) {
  const int most = static_cast<int>(std::min<int64_t>(8, std::max<int64_t>(2, ktiles + 1)));
  for (t.stages = most; t.stages > 2 && t.shared_bytes() > kMaxSharedBytes; --t.stages) {
  }
  return t.stages;
}

// The cooperative tile that fills the multiprocessors best, for outputs under two waves of
// 128 x 256 tiles: the fewest clocks by a model of one tile's k-loop, per k-tile the longer
// of its wgmma's (bm x bn x 64 multiply-adds at the ~1100 a clock an SM sustains, with one
// consumer warpgroup as with two) and its loads (bm + bn rows of 128 bytes at ~60 bytes a
// clock), plus its pipeline's fill (~2000 clocks: a block an SM, a wave of blocks waits for
// its first k-tiles) and its epilogue, times its waves; a tile whose width is not whole 32-column
// blocks cannot stage its epilogue (se) and counts 25% more. Fitted to H200 kernels (2026-12-02,
// ncu and --tune): 128 x 192 x 768, 1375 clocks a k-tile; 128 x 64 x 3072, 552; 128 x 144 unstaged
// 14.98 us against 12.64 for 128 x 160 staged (1024 x 2304 x 768). Where B is k-contiguous
// (store_weights_k_major) it finds the tiles --tune found best: 128 x 160 for 1024 x 2304
// (120 tiles on 132 SMs, 96 of 128 x 192), 64 x 96 for 1024 x 768 (128 tiles, 96 of 128 x
// 64), 64 x 160 for 512 x 2560 (128; 160 of 128 x 64, two waves); cuBLAS's kernels on those
// products run 132, 128 and 128 tiles of about the same areas. Ties go to the fewer bytes
// loaded. `min_step`: the least step of widths tried.
WgTile wave_fit_tile(const GemmDims& d, const Target& target, std::vector<int> bms = {128, 64},
                     int min_step = 16) {
  const int64_t sms = std::max(target.num_sms, 1), ktiles = k_tiles(d);
  const int step = std::max(bn_step(d), min_step);
  WgTile best{bms[0], 64, 8};
  double best_clocks = std::numeric_limits<double>::infinity(), best_load = best_clocks;
  for (int bm : bms) {
    for (int bn = 256; bn >= std::max(48, step); bn -= step) {
      const int64_t tiles = ((d.m + bm - 1) / bm) * ((d.nn + bn - 1) / bn) * d.batches;
      const int64_t waves = (tiles + sms - 1) / sms;
      // A k-tile: 64 16-bit multiply-adds a row and column, or 32 tf32 ones at half the rate.
      const double mma = double(bm) * bn * 64 / 1100.0, load = double(bm + bn) * 128 / 60.0;
      const bool staged = bn % kStageCols == 0;
      const double clocks = double(waves) *
                            (double(ktiles) * std::max(mma, load) + 2000 + double(bm) * bn / 20) *
                            (staged ? 1.0 : 1.25);
      if (clocks < best_clocks * 0.999 || (clocks <= best_clocks * 1.001 && load < best_load)) {
        best_clocks = std::min(best_clocks, clocks), best_load = load;
        best = WgTile{bm, bn, 8, false, staged ? 1 : 0};
      }
    }
  }
  best.stages = fitting_stages(best, ktiles);
  return best;
}

}  // namespace

namespace {

// Heuristic order from H200 timings (2026-11-30, float16 + bias + GELU): 128 x 256 won on
// every large shape, even where its tiles fill under one wave (4096 x 768 x 3072: 45.9 us,
// against 51.7 at 128 x 128 and 55.0-63.3 for the rest; 4096 x 3072 x 768: 66.8 against
// 72.9; 8192^3: 1628 against 1815); on small outputs (fewer of those tiles than half the
// SMs) 128 x 64 with 8 stages did (128 x 3072 x 768: 11.6 us against 24.8 at 128 x 256;
// 128 x 768 x 768: 10.6 against 11.8 for split-K mma.sync). Blocks holding one consumer
// warpgroup and a producer warp, two to an SM, were slower everywhere (74.8 / 55.8 /
// 2163 us) and were dropped. After float division by constants stopped branching (GELU's
// x / sqrt 2), the persistent ping-pong 64 x 256 won where a tile has few k-tiles and the
// output many tiles (4096 x 3072 x 768 + GELU: 51.9 us against 58.1; the MLP's 8192 x 4096
// x 1024: 145 against 160): one warpgroup's epilogue runs under the other's wgmma's.
std::vector<WgTile> tile_order() {
  return {{128, 256, 4},
          {128, 192, 5},
          {128, 128, 6},
          {64, 256, 4},
          {128, 64, 8},
          {64, 128, 8},
          {64, 256, 5, true},
          {64, 128, 8, true},
          {128, 128, 6, true},
          {64, 256, 5, true, 1},
          {64, 256, 4, true, 2},
          {128, 256, 4, false, 1},
          {128, 192, 5, false, 1},
          {64, 256, 4, true, 4, 1},
          {64, 256, 4, true, 2, 1},
          {128, 256, 4, false, 2, 1},
          {64, 64, 8},
          {64, 256, 4, true, 4, 2},
          {64, 256, 4, true, 2, 2},
          {128, 256, 4, false, 1, 0, 16},
          {128, 128, 6, true, 2, 2},
          {128, 128, 5, true, 4, 2},
          {128, 192, 4, true, 2, 2},
          {256, 128, 4, false, 1, 0, 8, 2},
          {256, 128, 4, false, 2, 2, 8, 2}};
}

// The tile that fills the SMs best first, and for --tune the best of the other block shape
// and the best of any multiple of 16 columns.
void lead_wave_fit(std::vector<WgTile>& tiles, const GemmDims& d, const Target& target,
                   bool rows_ahead) {
  WgTile fit = wave_fit_tile(d, target),
         other = wave_fit_tile(d, target, {fit.bm == 128 ? 64 : 128});
  WgTile any = fit;
  for (int bn = fit.bn - 16; bn >= 48 && bn % bn_step(d) == 0 && fit.bn % kStageCols == 0; bn -= 16)
    if (bn % kStageCols != 0) {
      any = WgTile{fit.bm, bn, 8};
      any.stages = fitting_stages(any, k_tiles(d));
      break;
    }
  for (const WgTile& t : {any, other, fit}) {
    auto same = [&](const WgTile& u) {
      return u.bm == t.bm && u.bn == t.bn && u.pp == t.pp && u.se == t.se && u.sr == t.sr &&
             u.rr == t.rr && u.cw == t.cw;
    };
    tiles.erase(std::remove_if(tiles.begin(), tiles.end(), same), tiles.end());
    tiles.insert(tiles.begin(), t);
  }
  // For --tune, after it: its half as a staged ping-pong tile, two an SM, so that one consumer's
  // epilogue (a one-wave product's stores, all at its end) overlaps the other's k-loop; where
  // the epilogue reads a residual, also with the residual copied ahead as each tile begins.
  if (fit.bm == 128 && fit.cw == 1 && !fit.pp && fit.se && fit.bn % kStageCols == 0) {
    WgTile half{64, fit.bn, 8, true, 1};
    half.stages = fitting_stages(half, 2 * k_tiles(d));
    tiles.insert(tiles.begin() + 1, half);
    if (rows_ahead) {  // its stages drop to fit the copies' buffers (plan_row_preloads)
      half.ca = true;
      tiles.insert(tiles.begin() + 2, half);
    }
  }
}

}  // namespace

namespace {

// Split-K tiles (64 x 64 and 64 x 128, clusters of 2 to 8 blocks, each over a share of k,
// their sums added through distributed shared memory) for products whose 64 x 64 tiles leave
// most SMs idle: in the search space wherever they fill at most half the SMs over 8 k-tiles or
// more, and first (the default) where they fill at most a quarter over 32 or more — a
// convolution's product at batch 1, say ResNet-50's last 3x3, 49 x 512 x 4608: 8 tiles over
// 72 k-tiles, where each SM would stream 1/8 of 4.7 MB of weights at a 132nd of the bandwidth.
// Not yet timed on the GPU: the default's threshold is a guess from the byte counts.
void add_split_tiles(std::vector<WgTile>& tiles, const GemmDims& d, const Target& target) {
  const int64_t sms = std::max(target.num_sms, 1), kt = k_tiles(d);
  auto tiles_of = [&](int bn) { return (d.m + 63) / 64 * ((d.nn + bn - 1) / bn) * d.batches; };
  std::vector<WgTile> found;
  for (int bn : {64, 128}) {
    if (bn % bn_step(d) != 0 || tiles_of(bn) * 2 > sms || kt < 8) continue;
    for (int split : {8, 4, 2}) {
      if (tiles_of(bn) * split > sms || kt < 4 * split || !split_shares(kt, split)) continue;
      WgTile t{64, bn, 8};
      t.split = split;
      t.stages = fitting_stages(t, (kt + split - 1) / split);
      if (t.red_bytes() <= t.stages * t.stage_bytes()) found.push_back(t);
    }
  }
  if (found.empty()) return;
  const bool lead = tiles_of(64) * 4 <= sms && kt >= 32;
  tiles.insert(lead ? tiles.begin() : tiles.end(), found.begin(), found.end());
}

}  // namespace

// Narrow outputs (up to 192 columns) over few k-tiles and many rows (a convolution net's 1x1
// products, channels-last): the time is the epilogue's, storing the output, and the ping-pong
// tiles of the rule below computed and staged columns past n. The persistent ping-pong 128-row
// tile no wider than n rounded up to 32 columns, its epilogue staged, at most six stages so
// that the producer runs tiles ahead. H100, 2026-12-06 (bench/MODELS.md): MobileNetV2's
// 401408 x 96 x 16 expansion 106 us, was 229 on 128 x 192; ResNet-50's 100352 x 64 x 64 + bias
// + Relu 15.8 us, was 30.5 (torch.matmul: 13.5 for the product alone).
void lead_narrow_tile(std::vector<WgTile>& tiles, const GemmDims& d) {
  const int bn = static_cast<int>(std::max<int64_t>(32, (d.nn + 31) / 32 * 32));
  if (bn % bn_step(d) != 0) return;
  const int se = bn % 64 == 0 ? 2 : 1;
  WgTile t{128, bn, 6, true, se, se == 2 ? 2 : 0};
  t.stages = std::min(6, fitting_stages(t, 8));
  auto same = [&](const WgTile& u) {
    return u.bm == t.bm && u.bn == t.bn && u.pp == t.pp && u.se == t.se && u.sr == t.sr &&
           u.rr == t.rr && u.cw == t.cw && u.split == t.split;
  };
  tiles.erase(std::remove_if(tiles.begin(), tiles.end(), same), tiles.end());
  tiles.insert(tiles.begin(), t);
}

std::vector<Tunables> gemm_wgmma_candidates(const GemmDims& d, const Target& target,
                                            bool rows_ahead) {
  auto tiles_of = [&](int bm, int bn) {
    return ((d.m + bm - 1) / bm) * ((d.nn + bn - 1) / bn) * d.batches;
  };
  const int64_t big_tiles = tiles_of(128, 256);
  const int64_t sms = std::max(target.num_sms, 1);
  // A cooperative tile's time goes with its area, a kernel's with its waves of tiles.
  auto cost = [&](int bm, int bn) { return (tiles_of(bm, bn) + sms - 1) / sms * bm * bn; };
  std::vector<WgTile> tiles = tile_order();
  // Moves the bm x bn tile (ping-pong or not, its epilogue staged or not) to the front.
  auto lead = [&](int bm, int bn, bool pp, int se = 0, int sr = 0, int rr = 8) {
    auto it = std::find_if(tiles.begin(), tiles.end(), [&](const WgTile& t) {
      return t.bm == bm && t.bn == bn && t.pp == pp && t.se == se && t.sr == sr && t.rr == rr &&
             t.cw == 1;
    });
    std::rotate(tiles.begin(), it, it + 1);
  };
  // Staged epilogues, H200, 2026-11-30 at e171a6d: 4096 x 3072 x 768 plain 35.0 us
  // (pp 64 x 256, se 2) against 46.6 unstaged, + GELU 45.8 (pp, se 4 rolled) against 48.2;
  // 4096 x 768 x 3072 + GELU 34.5 (128 x 192, se 1) against 35.4; 8192^3 + GELU 1531
  // (128 x 256, se 1) against 1535. The rolled pp se 4 is within 4% of the best plain.
  // At dd46fef (the same day): se 4 with its blocks unrolled and 32 elements a step rolled (sr 2),
  // 4096 x 3072 x 768 + GELU 45.2 us against 46.8 rolled (sr 1), plain 35.1 against 35.9;
  // three consumer warpgroups taking 64 x 192 tiles in turns lost (50.6-52.4 us) and went.
  // Under two waves of the largest tiles, or where n is at most 128 and k at least 4 k-tiles
  // (attention's P V, n the head size: the 64 x 256 ping-pong tile computed 256 columns for
  // GPT-2 b8's 64 over 8 k-tiles, 1.94x torch.matmul; over 1 or 2 k-tiles, BERT b32's Q Kᵀ
  // and P V, the waste is small and the persistent walk stays): the tile that fills the SMs
  // best, and for --tune the best of the other block shape and the best of any multiple of 16
  // columns.
  if (big_tiles < 2 * sms || (d.nn <= 128 && k_tiles(d) >= 4)) {
    lead_wave_fit(tiles, d, target, rows_ahead);
  } else if (d.nn <= 192 && k_tiles(d) < 4) {
    lead_narrow_tile(tiles, d);
  } else if (k_tiles(d) <= 16 && big_tiles >= sms) {
    // The staged ping-pong 128 x 192 where its waves cost no more than 64 x 256's: per tile
    // it loads 480 KB for 18.9 M MACs against 64 x 256's 480 KB for 12.6 M (H200, 2026-12-04,
    // BERT b32: 4096 x 2304 x 768 + bias 26.7 us against 30.2, 2.9 waves against 4.4;
    // 4096 x 3072 x 768 + bias 33.5 against 35.9; + GELU 42.8 against 42.1). Where its
    // columns do not divide (bn_step) 64 x 256 stays first.
    lead(64, 256, true, 4, 2);
    if (cost(128, 192) <= cost(64, 256)) lead(128, 192, true, 2, 2);
  }
  // 128 x 192 where 128 x 256 leaves SMs idle in its last wave (4096 x 768 x 3072: 96 tiles
  // of 128 x 256 on 132 SMs, 128 of 128 x 192).
  else if (10 * cost(128, 192) < 9 * cost(128, 256))
    lead(128, 192, false, 1);
  // 16 rows of tiles a raster group where there are as many: 132 blocks of 128 x 256 as 16 x
  // 8 tiles rather than 8 x 16 span 65 MB of A and B rather than 82 (8192^3 + GELU, end
  // to end over 400 runs, three runs each alternating: 1724.6 / 1725.4 / 1723.8 us against
  // 1727.1 / 1727.1 / 1727.2).
  else
    lead(128, 256, false, 1, 0, (d.m + 127) / 128 >= 16 ? 16 : 8);
  add_split_tiles(tiles, d, target);
  std::vector<Tunables> c;
  for (const WgTile& t : tiles)
    if (t.shared_bytes() <= kMaxSharedBytes && t.bn % bn_step(d) == 0) c.push_back(tunables_of(t));
  return c;
}

namespace {

// The tile `tune` asks for (its keys as tunables_of writes them).
WgTile tile_of(const Tunables& tune) {
  return WgTile{tune.at("bm"),
                tune.at("bn"),
                tune.at("stages"),
                tune.count("pp") && tune.at("pp") != 0,
                tune.count("se") ? tune.at("se") : 0,
                tune.count("sr") ? tune.at("sr") : 0,
                tune.count("rr") ? tune.at("rr") : 8,
                tune.count("cw") ? tune.at("cw") : 1,
                0,
                tune.count("split") ? tune.at("split") : 1,
                tune.count("ca") && tune.at("ca") != 0};
}

bool tile_supported(const WgTile& t, const GemmDims& d) {
  return !((t.bm != 64 && t.bm != 128 && t.bm != 256) || (t.cw != 1 && (t.cw != 2 || t.pp)) ||
           t.bm % (64 * t.cw) != 0 || (t.bm == 256 && (t.pp || t.cw != 2)) ||
           t.bn % bn_step(d) != 0 || t.bn < 16 || t.bn > 256 || t.stages < 2 ||
           t.row_blocks() * t.bn > 384 || (t.se != 0 && t.se != 1 && t.se != 2 && t.se != 4) ||
           (t.sr && !t.se) || t.sr < 0 || t.sr > 2 || (t.sr == 2 && t.stage_cols() % 64 != 0) ||
           t.rr < 1 || t.rr > 64 || (t.se && t.bn % t.stage_cols() != 0) ||
           t.shared_bytes() > kMaxSharedBytes ||
           (t.split != 1 && t.split != 2 && t.split != 4 && t.split != 8) ||
           (t.split > 1 && (t.pp || t.se || t.red_bytes() > t.stages * t.stage_bytes())) ||
           (t.ca && (!t.pp || !t.se || t.sr != 0)));
}

// Builds one product's kernel; each member function emits one part of it, in order.
class WgmmaBuilder {
 public:
  WgmmaBuilder(const graph::Graph& g, const fusion::Group& group, const GemmDims& d,
               const GemmEpilogue& epi, const Target& target, const WgTile& t)
      : g_(g),
        group_(group),
        d_(d),
        epi_(epi),
        target_(target),
        t_(t),
        e_(gemm_emitter(g, group, d)),
        va_(d.view[0] ? &*d.view[0] : nullptr),
        vb_(*d.view[1]) {
    tiles_m_ = (d.m + t.bm - 1) / t.bm;
    tiles_n_ = (d.nn + t.bn - 1) / t.bn;
    tiles_ = tiles_m_ * tiles_n_ * d.batches;
    ktiles_ = k_tiles(d);
    ek_ = k_tile(d);
    share_ = (ktiles_ + t.split - 1) / t.split;
    // m- / n-contiguous operands: 64 x 64 boxes.
    a_mn_ = va_ && !va_->kcontig;
    b_mn_ = !vb_.kcontig;
    narrow_ = !va_ && narrow(*d.window, d.elem_bytes);
    mw_ = t.row_blocks();  // accum[mi] holds rows 64 mi .. 64 mi + 63 of the warpgroup's
    row0_ = t.pp ? "0" : fmt::format("cons * {}", 64 * t.cw);
    cols_ = t.stage_cols();
    blocks_ = t.bn / std::max(cols_, 1);
    res_slot_ = fmt::format("(((mi * {} + c) * {} + se_it) * 128 + se_t)", blocks_, cols_ / 8);
    edges_ = d.m % t.bm != 0 || d.nn % t.bn != 0;
  }

  std::optional<Kernel> build(std::string* why_not) {
    e_.input_param(va_ ? va_->root : d_.window->root);
    e_.input_param(vb_.root);
    if (t_.se && t_.sr == 0 && (!t_.pp || t_.ca)) plan_row_preloads();
    if (t_.ca && res_pre_.empty()) {
      *why_not =
          "wgmma tile: ca asks for the epilogue's row-wise inputs copied ahead, and it has none "
          "(or they do not fit in shared memory)";
      return std::nullopt;
    }
    emit_setup();
    emit_producer();
    emit_consumer_start();
    emit_mainloop();
    emit_split_reduce();
    emit_epilogue_setup();
    try {
      for (bool in_range : {true, false}) {
        if (!in_range && !edges_) break;
        emit_epilogue(in_range);
      }
    } catch (const CudaUnsupported& u) {
      *why_not = u.why;
      return std::nullopt;
    }
    if (t_.pp) e_.close();  // tl
    return finish();
  }

 private:
  // The staged epilogue's walk of a warpgroup's rows x BN at the coordinates (i, jp) of a
  // thread's 4 adjacent columns, around `body` (se_t and se_c declared by the caller).
  void emit_block_walk(const std::function<void()>& body) {
    e_.line("#pragma unroll");
    e_.open(fmt::format("for (int mi = 0; mi < {}; ++mi) {{", mw_));
    e_.line("#pragma unroll");
    e_.open(fmt::format("for (int c = 0; c < {}; ++c) {{", blocks_));
    e_.line("#pragma unroll");
    e_.open(fmt::format("for (int se_it = 0; se_it < {}; ++se_it) {{", cols_ / 8));
    e_.line(fmt::format("const int se_r = se_it * {} + se_t / {};", 512 / cols_, cols_ / 4));
    e_.line(fmt::format("const long long i = i0 + {} + mi * 64 + se_r;", row0_));
    e_.line(fmt::format("const long long jp = j0 + c * {} + se_c;", cols_));
    body();
    e_.close();
    e_.close();
    e_.close();
  }

  // rb: the staged epilogue's row-wise inputs' copies into this consumer's buffer (`trial`:
  // every copy at offset 0, to learn which there are).
  std::vector<Emitter::Preload> emit_res_copies(bool trial) {
    std::vector<Emitter::Preload> pre;
    e_.open("{");
    e_.line("const int se_t = (int)threadIdx.x % 128;");
    e_.line(fmt::format("const int se_c = (se_t % {}) * 4;", cols_ / 4));
    e_.open(fmt::format("if (i0 + {} <= {}LL && j0 + {} <= {}LL) {{", t_.bm, d_.m, t_.bn, d_.nn));
    emit_block_walk([&] {
      size_t q = 0;
      pre = emit_gemm_preloads(
          e_, g_, d_, epi_, 4, [&](graph::ValueId, int, int bytes, const std::string& addr) {
            const int64_t base = trial || q >= res_base_.size() ? 0 : res_base_[q];
            ++q;
            return fmt::format("braze_cp_async<{}>(res_ptr + {} + {} * {}, {});", bytes, base,
                               res_slot_, bytes, addr);
          });
    });
    e_.close();
    e_.close();
    return pre;
  }

  // rb: the staged epilogue's row-wise inputs (a residual) are copied into shared memory by
  // cp.async as the tile begins, each thread the vectors it will read back (no barrier), and
  // the epilogue reads them there, where it would otherwise wait on DRAM once the k-loop is
  // done: in a one-wave product every block's epilogue does so at once (H200, 2026-12-04 at
  // c863546: 4096 x 768 x 768 + bias + residual 15.8 us against 17.8, 4096 x 768 x 3072 33.9
  // against 35.2, with a stage fewer to make room). Cooperative tiles (one a block) and
  // ping-pong tiles that ask for it (ca; their copies as each tile begins, before the turn
  // wait), unrolled staging, interior tiles; the stages drop (to 3 at least) to fit the
  // buffer, else it is not used.
  void plan_row_preloads() {
    const size_t at = e_.mark();
    try {
      res_pre_ = emit_res_copies(true);
    } catch (const CudaUnsupported&) {
      res_pre_.clear();  // the epilogue's own emission reports it
    }
    e_.rewind(at);
    int64_t rb = 0;  // each preload's copies, one after the other (gemm_preload_copies_ahead)
    for (const Emitter::Preload& p : res_pre_) {
      if (!gemm_preload_copies_ahead(p)) rb = -1;
      if (rb < 0) break;
      res_base_.push_back(rb);
      res_bytes_.push_back(p.bytes);
      rb += int64_t{mw_} * blocks_ * (cols_ / 8) * 128 * p.bytes;
    }
    WgTile with = t_;
    with.rb = std::max<int64_t>(rb, 0);
    while (with.shared_bytes() > kMaxSharedBytes && with.stages > 3) --with.stages;
    if (!res_pre_.empty() && rb > 0 && with.shared_bytes() <= kMaxSharedBytes && (rb % 16) == 0) {
      t_ = with;
    } else {
      res_pre_.clear();
      res_base_.clear();
      res_bytes_.clear();
    }
  }

  // The origin (i0, j0) and batch b of tile `tl` of the walk (pp), or of this block's.
  void emit_tile(const std::string& tl) {
    if (!t_.pp) {
      const std::string tile =
          t_.split > 1 ? fmt::format("(int)blockIdx.x / {}", t_.split) : "(int)blockIdx.x";
      emit_gemm_tile_origin(e_, tiles_m_, tiles_n_, t_.bm, t_.bn, tile, t_.rr);
      e_.line("const long long b = blockIdx.z;");
      // split: this block's k-tiles, kt_first onwards (every rank has some: split_shares).
      if (t_.split > 1)
        e_.line(
            fmt::format("const int kt_first = (int)(blockIdx.x % {0}) * {1}, kt_n = {2} - "
                        "kt_first < {1} ? {2} - kt_first : {1};",
                        t_.split, share_, ktiles_));
    } else {
      emit_gemm_tile_origin(e_, tiles_m_, tiles_n_, t_.bm, t_.bn,
                            fmt::format("(int)({} % {})", tl, tiles_m_ * tiles_n_), t_.rr);
      e_.line(fmt::format("const long long b = {} / {};", tl, tiles_m_ * tiles_n_));
    }
    e_.line("(void)b;");
  }

  // Shared memory, warpgroup and lane, and the stages' barriers.
  void emit_setup() {
    const int consumer_warps = t_.pp ? 4 : 4 * t_.consumers();  // warps consuming a stage
    e_.line("const braze_saddr smem = (braze_smem_addr(braze_smem) + 1023u) & ~1023u;");
    e_.line(fmt::format("const braze_saddr full = smem + {}u, empty = full + {}u;",
                        t_.stages * t_.stage_bytes(), 8 * t_.stages));
    if (t_.pp) e_.line(fmt::format("const braze_saddr turn = empty + {}u;", 8 * t_.stages));
    e_.line("const int wg = (int)threadIdx.x / 128, lane = (int)threadIdx.x % 32;");
    if (!t_.pp) emit_tile("");
    e_.open("if (threadIdx.x == 0) {");
    e_.open(fmt::format("for (int s = 0; s < {}; ++s) {{", t_.stages));
    e_.line("braze_mbar_init(full + 8 * s, 1);");
    e_.line(fmt::format("braze_mbar_init(empty + 8 * s, {});", consumer_warps));
    e_.close();
    if (t_.pp) {
      e_.line("braze_mbar_init(turn, 128);");
      e_.line("braze_mbar_init(turn + 8, 128);");
    }
    e_.line("braze_mbar_init_fence();");
    e_.close();
    e_.line("__syncthreads();");
  }

  // An operand's k-tile into shared memory at `dst`: one box of rows x 64 k (k-contiguous),
  // or 64 x 64 boxes side by side along m or n (mn-contiguous) from `origin` (i0 or j0).
  void emit_load(const char* dst, const char* map, bool mn, int rows, const char* origin,
                 const std::vector<std::string>& batch) {
    const std::string fn = fmt::format("braze_tma_load_{}d", 2 + batch.size());
    const std::string bc = fmt::format("{}", fmt::join(batch, ", "));
    if (!mn) {
      e_.line(fmt::format("{}({}, {}, kg * {}, {}, {}, bar);", fn, dst, map, ek_, origin, bc));
      return;
    }
    for (int q = 0; q < rows / kBox; ++q)
      e_.line(fmt::format("{}({} + {}u, {}, {} + {}, kg * {}, {}, bar);", fn, dst, q * kBox * 128,
                          map, origin, q * kBox, ek_, bc));
  }

  // A's windows (d.window): the image and window corner of the tile's first row i0 (wn, and
  // wc0 … for the spatial dims, outermost first), where TMA's im2col walk begins.
  void emit_window_corner() {
    const graph::WindowGeometry& g = d_.window->geometry;
    const int64_t windows = checked_numel(g.out);
    e_.line(fmt::format("const int wn = i0 / {};", windows));
    e_.line(fmt::format("int wp = i0 % {};", windows));
    for (size_t k = g.rank(); k-- > 0;) {
      const std::string at = k == 0 ? "wp" : fmt::format("wp % {}", g.out[k]);
      e_.line(fmt::format("const int wc{} = ({}) * {} - {};", k, at, g.stride[k], g.pad_begin[k]));
      if (k > 0) e_.line(fmt::format("wp /= {};", g.out[k]));
    }
  }

  // Tap `tap`'s filter offsets (its position times the dilation), innermost first, as
  // locals wo0 … (emitted; `tap` is consumed).
  std::vector<std::string> emit_tap_offsets() {
    const graph::WindowGeometry& g = d_.window->geometry;
    std::vector<std::string> offset;
    for (size_t k = g.rank(); k-- > 0;) {
      const std::string at = k == 0 ? "tap" : fmt::format("tap % {}", g.kernel[k]);
      e_.line(fmt::format("const unsigned short wo{} = (unsigned short)(({}) * {});", k, at,
                          g.dilation[k]));
      if (k > 0) e_.line(fmt::format("tap /= {};", g.kernel[k]));
      offset.push_back(fmt::format("wo{}", k));
    }
    return offset;
  }

  // A's k-tile kg from the windows: tap kg / (C / 64)'s channels from (kg % (C / 64)) · 64 of
  // the tile's bm windows, one im2col copy (the tap's offsets: its position times the dilation).
  // Narrow windows: taps kg · T … kg · T + T − 1 (T = ek / C), one copy each into its block of
  // bm 16-byte rows; a tap past the kernel's (the k-tile's padding, whose weights are zero)
  // copies from image N, past the tensor, which TMA fills with zeros.
  void emit_window_load() {
    const WindowView& w = *d_.window;
    const graph::WindowGeometry& g = w.geometry;
    std::vector<std::string> corner;  // innermost first
    for (size_t k = g.rank(); k-- > 0;) corner.push_back(fmt::format("wc{}", k));
    const std::string fn = fmt::format("braze_tma_im2col_{}d", g.rank() + 2);
    if (narrow_) {
      const int64_t per = ek_ / w.channels, taps = checked_numel(g.kernel);
      e_.line("#pragma unroll");
      e_.open(fmt::format("for (int t = 0; t < {}; ++t) {{", per));
      e_.line(fmt::format("int tap = kg * {} + t;", per));
      e_.line(fmt::format("const int wi = tap < {} ? wn : {};", taps, w.images));
      e_.line(fmt::format("if (tap >= {}) tap = 0;", taps));
      const std::vector<std::string> offset = emit_tap_offsets();
      e_.line(fmt::format("{}(sa + t * {}u, braze_tmap_a, 0, {}, wi, {}, bar);", fn,
                          int64_t{t_.bm} * 16, fmt::join(corner, ", "), fmt::join(offset, ", ")));
      e_.close();
      return;
    }
    const int64_t cb = w.channels / ek_;
    e_.line(fmt::format("int tap = kg / {};", cb));
    const std::vector<std::string> offset = emit_tap_offsets();
    e_.line(fmt::format("{}(sa, braze_tmap_a, (kg % {}) * {}, {}, wn, {}, bar);", fn, cb, ek_,
                        fmt::join(corner, ", "), fmt::join(offset, ", ")));
  }

  // The producer. gk counts the k-tiles it has loaded: stage gk % STAGES, its
  // (gk / STAGES)-th use.
  void emit_producer() {
    const std::vector<std::string> ba = va_ ? tma_batch_coords(*va_) : std::vector<std::string>{},
                                   bb = tma_batch_coords(vb_);
    e_.open("if (wg == 0) {");
    if (t_.consumers() > 1) e_.line("braze_setmaxnreg_dec<40>();");
    e_.open("if (threadIdx.x == 0) {");
    if (t_.pp) {
      e_.line("int gk = 0;");
      e_.open(fmt::format("for (int tl = blockIdx.x; tl < {}; tl += gridDim.x) {{", tiles_));
      emit_tile("tl");
      if (!va_) emit_window_corner();
      e_.open(fmt::format("for (int kt = 0; kt < {}; ++kt, ++gk) {{", ktiles_));
      e_.line("const int kg = kt;");
    } else {
      if (!va_) emit_window_corner();
      e_.open(fmt::format("for (int kt = 0; kt < {}; ++kt) {{", kt_count()));
      e_.line("const int gk = kt;");
      e_.line(t_.split > 1 ? "const int kg = kt_first + kt;" : "const int kg = kt;");
    }
    e_.line(fmt::format("const int s = gk % {};", t_.stages));
    e_.line(fmt::format("braze_mbar_wait(empty + 8 * s, ((gk / {}) & 1) ^ 1);", t_.stages));
    e_.line(fmt::format("const braze_saddr sa = smem + s * {}u, sb = sa + {}u, bar = full + 8 * s;",
                        t_.stage_bytes(), t_.a_bytes()));
    e_.line(fmt::format("braze_mbar_arrive_expect(bar, {}u);", t_.stage_bytes()));
    if (va_)
      emit_load("sa", "braze_tmap_a", a_mn_, t_.bm, "i0", ba);
    else
      emit_window_load();
    emit_load("sb", "braze_tmap_b", b_mn_, t_.bn, "j0", bb);
    e_.close();             // kt
    if (t_.pp) e_.close();  // tl
    e_.close();             // thread 0
    // split: the warpgroup takes part in the consumers' two cluster barriers (split_reduce).
    if (t_.split > 1) e_.line("__syncwarp();\n  braze_cluster_sync();\n  braze_cluster_sync();");
    e_.line("return;");
    e_.close();  // producer
  }

  // The k-tiles this block computes: all, or (split) its share.
  std::string kt_count() const { return t_.split > 1 ? "kt_n" : std::to_string(ktiles_); }

  // split: the cluster's partial sums into rank 0, whose consumers go on to the epilogue; the
  // others' are done. Every consumer's wgmma's have retired first (the sums are parked over
  // the stages, which another consumer may still be reading).
  void emit_split_reduce() {
    if (t_.split <= 1) return;
    e_.line(fmt::format("braze_bar_sync(15, {});", 128 * t_.consumers()));
    e_.line(
        "float* const red = reinterpret_cast<float*>(reinterpret_cast<char*>(braze_smem) + (smem "
        "- braze_smem_addr(braze_smem)));");
    e_.line(fmt::format("if (!braze_split_reduce<{}, {}>(&accum[0][0], red)) return;", t_.split,
                        mw_ * t_.bn / 2));
  }

  // The consumers. Cooperative: warpgroup 1 + cons computes rows 64 cw cons .. 64 cw (cons +
  // 1) - 1 of the block's tile. pp: warpgroup 1 + cons computes tiles cons, cons + 2, … of the
  // block's walk, whose k-tiles are the producer's (position in the walk) * KTILES onwards.
  void emit_consumer_start() {
    if (t_.consumers() > 1) e_.line("braze_setmaxnreg_inc<232>();");
    const int regs = t_.bn / 2;
    e_.line("const int cons = wg - 1;");
    if (t_.pp) {
      e_.line(fmt::format("int gk0 = cons * {}, it = 0;", ktiles_));
      e_.open(
          fmt::format("for (int tl = blockIdx.x + cons * gridDim.x; tl < {}; tl += 2 * gridDim.x, "
                      "gk0 += {}, ++it) {{",
                      tiles_, 2 * ktiles_));
      emit_tile("tl");
      emit_res_copies_ahead();  // ca: while the other warpgroup's k-loop runs
      // Mainloops take turns, warpgroup 0 first: a warpgroup starts waiting for its tile's
      // k-tiles only once the other has seen all of its previous tile's land, so that no wait
      // on a stage runs more than one phase ahead of the barrier (parity waits cannot tell
      // phase p from p + 2). Every thread of the warpgroup arrives on the other's turn
      // barrier: were it one thread, a warp still storing its previous tile could find the
      // barrier two phases on when it came to wait, and wait for ever (GPT-2's Q Kᵀ, one
      // k-tile a tile and a mask load in the epilogue, deadlocked so on the H200).
      e_.line(
          "if (cons == 1 || it > 0) braze_mbar_wait(turn + 8 * cons, (cons == 1 ? it : it - 1) & "
          "1);");
    } else {
      e_.line("const int gk0 = 0;");
    }
    e_.line(fmt::format("float accum[{}][{}];", mw_, regs));
    e_.line("#pragma unroll");
    e_.line(fmt::format("for (int r = 0; r < {}; ++r) {{", regs));
    for (int mi = 0; mi < mw_; ++mi) e_.line(fmt::format("  accum[{}][r] = 0.f;", mi));
    e_.line("}");
    if (!t_.pp) emit_res_copies_ahead();
  }

  // rb: this consumer's buffer, and the copies into it of the tile's row-wise inputs. Each
  // thread reads back only what it copied, so that a ping-pong consumer's copies for its next
  // tile may follow its last tile's reads with no barrier.
  void emit_res_copies_ahead() {
    if (res_pre_.empty()) return;
    e_.line(fmt::format(
        "char* const res_ptr = reinterpret_cast<char*>(braze_smem) + ((smem + {}u + cons * {}u) "
        "- braze_smem_addr(braze_smem));",
        t_.staging_offset() + t_.consumers() * t_.staging_bytes(), t_.rb));
    emit_res_copies(false);
  }

  void fence_accum() {
    for (int mi = 0; mi < mw_; ++mi) e_.line(fmt::format("braze_fence_regs(accum[{}]);", mi));
  }

  // The k-loop: wait for a stage, four wgmma k16 steps, release the previous stage.
  void emit_mainloop() {
    // Descriptors: a k16 step is 32 bytes along a k-contiguous row, 16 rows (2048 bytes) down
    // an MN-major box. Each is its stage's descriptor (da / db, made once a k-tile) plus the
    // operand's offset in 16-byte units (the address field's unit; shared addresses are under
    // 2^18, so the field never carries): a 32-bit add a wgmma operand, not the masks, shifts
    // and ORs of making it from the address.
    // Narrow windows (no swizzle): rows of 16 bytes (one unit), a k16 step two taps' blocks of
    // bm rows; core matrices 8 rows (128 bytes) apart down, a block (bm · 16 bytes) across.
    const std::string a_desc =
        narrow_
            ? fmt::format("braze_wgmma_desc_plus(da, ({} + 64 * mi) + kk * {}u)", row0_, 2 * t_.bm)
            : fmt::format("braze_wgmma_desc_plus(da, ({} + 64 * mi) * 8u + kk * {}u)", row0_,
                          a_mn_ ? 128 : 2);
    const std::string b_desc = fmt::format("braze_wgmma_desc_plus(db, kk * {}u)", b_mn_ ? 128 : 2);
    e_.open(fmt::format("for (int kt = 0; kt < {}; ++kt) {{", kt_count()));
    e_.line("const int gk = gk0 + kt;");
    e_.line(fmt::format("const int s = gk % {};", t_.stages));
    e_.line(fmt::format("braze_mbar_wait(full + 8 * s, (gk / {}) & 1);", t_.stages));
    // pp: all of this tile's k-tiles have landed: the other warpgroup's turn begins once all
    // 128 threads have seen them.
    if (t_.pp)
      e_.line(fmt::format("if (kt == {}) braze_mbar_arrive(turn + 8 * (1 - cons));", ktiles_ - 1));
    e_.line(fmt::format("const braze_saddr sa = smem + s * {}u, sb = sa + {}u;", t_.stage_bytes(),
                        t_.a_bytes()));
    e_.line(fmt::format(
        "const unsigned long long da = {}, db = braze_wgmma_desc(sb, {}u, 1024u);",
        narrow_ ? fmt::format("braze_wgmma_desc_unswizzled(sa, {}u, 128u)", t_.bm * 16)
                : fmt::format("braze_wgmma_desc(sa, {}u, 1024u)", a_mn_ ? kBox * 128 : 16),
        b_mn_ ? kBox * 128 : 16));
    fence_accum();
    e_.line("braze_wgmma_fence();");
    e_.line("#pragma unroll");
    e_.open(fmt::format("for (int kk = 0; kk < {}; ++kk) {{", kRowBytes / 32));
    e_.line("#pragma unroll");
    e_.line(fmt::format("for (int mi = 0; mi < {}; ++mi) braze_wgmma_step(accum[mi], {}, {});", mw_,
                        a_desc, b_desc));
    e_.close();
    e_.line("braze_wgmma_commit();");
    fence_accum();
    // The previous k-tile's wgmma's have retired: its stage is free for the producer. The last
    // k-tile waits for all of its own too, inside the loop: with the wait only after the loop,
    // ptxas (CUDA 13.0) was seen to hoist an epilogue read of the accumulators above it — a
    // race that left an 8 x 8 block of each warp's tile short of its last k-tile.
    e_.line(fmt::format("if (kt + 1 < {}) braze_wgmma_wait<1>(); else braze_wgmma_wait<0>();",
                        kt_count()));
    fence_accum();
    e_.line(fmt::format("if (kt > 0 && lane == 0) braze_mbar_arrive(empty + 8 * ((gk - 1) % {}));",
                        t_.stages));
    e_.close();
    e_.line("braze_wgmma_wait<0>();");
    fence_accum();
    // pp: the tile's last stage is released here (the producer goes on to the next tiles).
    if (t_.pp)
      e_.line(fmt::format("if (lane == 0) braze_mbar_arrive(empty + 8 * ((gk0 + {}) % {}));",
                          ktiles_ - 1, t_.stages));
  }

  // The epilogue: accum[mi][4 ni + 2 r + q] is C's element (64 mi + 16 cwarp + lane / 4 +
  // 8 r, 8 ni + 2 (lane % 4) + q) of the warpgroup's rows x BN, cwarp its warp (the m16n8 C
  // fragment, repeated along n).
  void emit_epilogue_setup() {
    e_.line("const int cwarp = ((int)threadIdx.x / 32) % 4;");
    // Tiles inside the output (all but the last row and column of tiles) store without bounds
    // checks: straight-line code the compiler can interleave across elements (and loads it
    // may share between rows, like a bias's).
    if (edges_)
      e_.line(fmt::format("const bool interior = i0 + {} <= {}LL && j0 + {} <= {}LL;", t_.bm, d_.m,
                          t_.bn, d_.nn));
    if (!t_.se) return;
    e_.line(fmt::format("const braze_saddr ebuf = smem + {}u + cons * {}u;", t_.staging_offset(),
                        t_.staging_bytes()));
    // The staged blocks are read by plain loads (not asm), which the compiler can see.
    e_.line(
        "const float* const se_buf = reinterpret_cast<const float*>(braze_smem + (ebuf - "
        "braze_smem_addr(braze_smem)));");
    // A thread's fragment rows, and the rows it reads, are one residue mod 4: one swizzle each.
    e_.line("const int se_t = (int)threadIdx.x % 128, se_wx = ((lane / 4) % 4) * 8;");
    e_.line(fmt::format(
        "const int se_c = (se_t % {0}) * 4, se_rx = se_c ^ (((se_t / {0}) % 4) * 8);", cols_ / 4));
  }

  // se: block (mi, c)'s fragments into the staging buffer.
  void emit_staging_writes(const std::string& mi, const std::string& c) {
    e_.line("#pragma unroll");
    e_.open(fmt::format("for (int nn = 0; nn < {}; ++nn) {{", cols_ / 8));
    e_.line("#pragma unroll");
    e_.open("for (int r = 0; r < 2; ++r) {");
    e_.line(fmt::format(
        "braze_st_shared_v2(ebuf + ((cwarp * 16 + lane / 4 + 8 * r) * {} + ((8 * nn + 2 * (lane % "
        "4)) ^ se_wx)) * 4u, "
        "accum[{}][4 * ({} * {} + nn) + 2 * r], accum[{}][4 * ({} * {} + nn) + 2 * r + 1]);",
        cols_, mi, cols_ / 8, c, mi, cols_ / 8, c));
    e_.close();  // r
    e_.close();  // nn
  }

  // Per 64 x (32 se) block of the warpgroup's rows x BN: fragments into the staging buffer,
  // then 4 adjacent columns a thread out of it (warpgroup barriers 1 + cons around both),
  // unrolled (a loop of 4 elements at a time, rolled, left each thread one load and erf chain
  // at a time: 59.6 us against 52.0 for the fragment epilogue on 4096 x 3072 x 768 + GELU;
  // plain, 39.1 against 46.7).
  void open_staged_unrolled() {
    e_.line("#pragma unroll");
    e_.open(fmt::format("for (int mi = 0; mi < {}; ++mi) {{", mw_));
    e_.line("#pragma unroll");
    e_.open(fmt::format("for (int c = 0; c < {}; ++c) {{", blocks_));
    e_.line("braze_bar_sync(1 + cons, 128);  // the previous block's reads are done");
    emit_staging_writes("mi", "c");
    e_.line("braze_bar_sync(1 + cons, 128);");
    if (t_.sr == 0) {
      e_.line("#pragma unroll");
      e_.open(fmt::format("for (int se_it = 0; se_it < {}; ++se_it) {{", cols_ / 8));
      return;
    }
    // sr = 2: the blocks unrolled (each block's accumulators are dead once staged, which
    // leaves the later blocks' epilogues registers for 32 elements at a time), the elements
    // rolled.
    e_.line("#pragma unroll 1");
    e_.open(fmt::format("for (int se_o = 0; se_o < {}; ++se_o) {{", cols_ / 64));
    e_.line("#pragma unroll");
    e_.open("for (int se_u = 0; se_u < 8; ++se_u) {");
    e_.line("const int se_it = se_o * 8 + se_u;");
  }

  // Rolled: a loop over the blocks (each writing its own accumulators, chosen by a switch)
  // and over 16 elements a thread (4 rows of 4) of a block.
  void open_staged_rolled() {
    e_.line("#pragma unroll 1");
    e_.open(fmt::format("for (int blk = 0; blk < {}; ++blk) {{", mw_ * blocks_));
    e_.line("braze_bar_sync(1 + cons, 128);  // the previous block's reads are done");
    e_.open("switch (blk) {");
    for (int k = 0; k < mw_ * blocks_; ++k) {
      e_.open(fmt::format("case {}: {{", k));
      emit_staging_writes(std::to_string(k / blocks_), std::to_string(k % blocks_));
      e_.line("break;");
      e_.close();
    }
    e_.close();  // switch
    e_.line("braze_bar_sync(1 + cons, 128);");
    e_.line(fmt::format("const int mi = blk / {0}, c = blk % {0};", blocks_));
    e_.line("#pragma unroll 1");
    e_.open(fmt::format("for (int se_o = 0; se_o < {}; ++se_o) {{", cols_ / 32));
    e_.line("#pragma unroll");
    e_.open("for (int se_u = 0; se_u < 4; ++se_u) {");
    e_.line("const int se_it = se_o * 4 + se_u;");
  }

  // The loops over a thread's elements, down to the coordinates (i, jp) of its first column.
  void open_element_loops() {
    if (t_.se && t_.sr != 1)
      open_staged_unrolled();
    else if (t_.se)
      open_staged_rolled();
    if (t_.se) {
      // Thread se_t's rows are se_t / (cols / 4) + (512 / cols) se_it, its columns the same
      // four in each (written so, the compiler sees it).
      e_.line(fmt::format("const int se_r = se_it * {} + se_t / {};", 512 / cols_, cols_ / 4));
      e_.line(fmt::format(
          "const float4 se_f4 = *reinterpret_cast<const float4*>(se_buf + se_r * {} + se_rx);",
          cols_));
      e_.line("const float se_v[4] = {se_f4.x, se_f4.y, se_f4.z, se_f4.w};");
      e_.line(fmt::format("const long long i = i0 + {} + mi * 64 + se_r;", row0_));
      e_.line(fmt::format("const long long jp = j0 + c * {} + se_c;", cols_));
      return;
    }
    e_.line("#pragma unroll");
    e_.open(fmt::format("for (int mi = 0; mi < {}; ++mi) {{", mw_));
    e_.line("#pragma unroll");
    e_.open(fmt::format("for (int ni = 0; ni < {}; ++ni) {{", t_.bn / 8));
    e_.line("#pragma unroll");
    e_.open("for (int r = 0; r < 2; ++r) {");
    e_.line(fmt::format("const long long i = i0 + {} + mi * 64 + cwarp * 16 + lane / 4 + r * 8;",
                        row0_));
    e_.line("const long long jp = j0 + ni * 8 + (lane % 4) * 2;");
  }

  // The epilogue of the interior tiles (in_range) or of the edge tiles.
  void emit_epilogue(bool in_range) {
    if (edges_) e_.open(in_range ? "if (interior) {" : "if (!interior) {");
    if (in_range && !res_pre_.empty()) e_.line("braze_cp_async_wait_all();");
    open_element_loops();
    e_.push_scope();
    if (in_range)
      for (size_t q = 0; q < res_pre_.size(); ++q) {
        const Emitter::Preload& p = res_pre_[q];
        e_.line(
            fmt::format("const braze_vec<{0}, {1}> res{2} = *reinterpret_cast<const braze_vec<{0}, "
                        "{1}>*>(res_ptr + {3} + {4} * {5});",
                        p.storage, p.vec, q, res_base_[q], res_slot_, res_bytes_[q]));
        for (size_t k = 0; k < p.lane_coords.size(); ++k)
          e_.memoize(p.value, p.lane_coords[k], fmt::format("braze_val(res{}.v[{}])", q, k));
      }
    if (t_.se)
      emit_gemm_stores(e_, g_, d_, epi_, 4, "se_v[q]", in_range);
    else
      emit_gemm_stores(e_, g_, d_, epi_, 2, "accum[mi][4 * ni + 2 * r + q]", in_range);
    e_.pop_scope();
    e_.close();                           // r / se_it / se_u
    e_.close();                           // ni / c / se_o
    e_.close();                           // mi / blk / c
    if (t_.se && t_.sr == 2) e_.close();  // mi
    if (edges_) e_.close();
  }

  Kernel finish() {
    const graph::Value& a = g_.value(d_.node->inputs[0]);
    // Blocks: one a tile (split: a cluster of them), batches along z; pp: one an SM (at most),
    // walking the tiles.
    const int64_t grid_x =
        t_.pp ? std::min<int64_t>(tiles_, target_.num_sms) : tiles_m_ * tiles_n_ * t_.split;
    Kernel kern = kernel_record(e_, fusion::GroupKind::Gemm, group_, tunables_of(t_));
    kern.block = {static_cast<unsigned>(t_.threads()), 1, 1};
    kern.grid = {static_cast<unsigned>(grid_x), 1, static_cast<unsigned>(t_.pp ? 1 : d_.batches)};
    kern.shared_bytes = static_cast<unsigned>(t_.shared_bytes());
    auto param_of = [&](graph::ValueId v) {
      for (size_t i = 0; i < kern.params.size(); ++i)
        if (kern.params[i].value == v) return i;
      return kern.params.size();
    };
    // Boxes: a k-tile's elements by the tile's rows (k-contiguous), or 64 x 64 (MN-major).
    auto map_of = [&](const OperandView& v, bool mn, int64_t mn_size, unsigned tile_rows) {
      return mn ? tma_view_map(v, param_of(v.root), a.dtype, mn_size, d_.k, kBox, kBox)
                : tma_view_map(v, param_of(v.root), a.dtype, d_.k, mn_size, ek_, tile_rows);
    };
    if (!va_)
      kern.tensor_maps.push_back(window_map(*d_.window, param_of(d_.window->root), a.dtype, t_.bm,
                                            narrow_ ? static_cast<int>(d_.window->channels) : ek_));
    else
      kern.tensor_maps.push_back(map_of(*va_, a_mn_, d_.m, t_.bm));
    kern.tensor_maps.push_back(map_of(vb_, b_mn_, d_.nn, t_.bn));
    const char* type = a.dtype == DType::Float16    ? "f16"
                       : a.dtype == DType::BFloat16 ? "bf16"
                                                    : "tf32";
    std::string code = wgmma_step_function(t_.bn, type, a_mn_, b_mn_);
    code += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({0}, 1){4} KERNEL_NAME({1}, "
        "const __grid_constant__ braze_tmap braze_tmap_a, "
        "const __grid_constant__ braze_tmap braze_tmap_b) {{\n"
        "  BRAZE_DYNAMIC_SMEM(braze_smem, {2});\n{3}}}\n",
        t_.threads(), e_.signature(), kern.shared_bytes, e_.body(),
        t_.split > 1 ? fmt::format(" __cluster_dims__({}, 1, 1)", t_.split) : "");
    finish_kernel(g_, kern, code,
                  kMmaHelpers | kWgmmaHelpers | (res_pre_.empty() ? 0 : kReduceHelpers));
    return kern;
  }

  const graph::Graph& g_;
  const fusion::Group& group_;
  const GemmDims& d_;
  const GemmEpilogue& epi_;
  const Target& target_;
  WgTile t_;
  Emitter e_;
  const OperandView* va_;  // null where A is d.window's windows
  const OperandView& vb_;
  int64_t tiles_m_ = 0, tiles_n_ = 0, tiles_ = 0, ktiles_ = 0;
  int ek_ = 64;        // a k-tile's elements (k_tile)
  int64_t share_ = 0;  // split: the k-tiles a block computes (the last rank's may be fewer)
  bool a_mn_ = false, b_mn_ = false, edges_ = false;
  bool narrow_ = false;  // A's windows narrow: a k-tile of ek_ / C taps, blocks of 16-byte rows
  int mw_ = 1, cols_ = 0, blocks_ = 0;
  std::string row0_, res_slot_;
  // rb: the epilogue's row-wise inputs copied ahead, each preload's slots' byte offset in a
  // consumer's buffer and the bytes of one vector.
  std::vector<Emitter::Preload> res_pre_;
  std::vector<int64_t> res_base_;
  std::vector<int> res_bytes_;
};

}  // namespace

std::optional<Kernel> gemm_wgmma_kernel(const graph::Graph& g, const fusion::Group& group,
                                        const GemmDims& d, const GemmEpilogue& epi,
                                        const Target& target, const Tunables& tune,
                                        std::string* why_not) {
  std::string why = gemm_wgmma_unsupported(g, group, d, target);
  const WgTile t = tile_of(tune);
  if (why.empty() && !tile_supported(t, d))
    why = fmt::format("wgmma tile {}x{} with {} stages is not supported", t.bm, t.bn, t.stages);
  if (why.empty() && t.split > 1 && !split_shares(k_tiles(d), t.split))
    why = fmt::format("split-K over {} blocks of {} k-tiles leaves a block none", t.split,
                      k_tiles(d));
  if (why.empty()) why = gemm_too_large(d, t.bm, t.bn, k_tile(d));
  const int64_t tiles = (d.m + t.bm - 1) / t.bm * ((d.nn + t.bn - 1) / t.bn) * d.batches;
  if (why.empty() && tiles > 2147483647 / 4) why = "wgmma schedule: too many tiles";
  if (!why.empty()) {
    *why_not = why;
    return std::nullopt;
  }
  return WgmmaBuilder(g, group, d, epi, target, t).build(why_not);
}

}  // namespace braze::codegen
