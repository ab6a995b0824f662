// What the two flash-attention schedules share (attention.cpp: mma.sync; attention_wgmma.cpp:
// wgmma on sm_90a): how the kernel reads the mask, which key tiles a query tile visits, and
// the emitted parts around the device loop (the scores' chain, the mask's arguments, the
// output's stores). Internal to codegen/.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/attention.h"
#include "codegen/emitter.h"

namespace braze::codegen::flash {

constexpr int64_t kMaxSharedBytes = 227 * 1024;

// How the kernel reads the value the scores' chain adds (the mask): an index comparison
// for a constant causal mask, pairs of keys loaded ahead of each tile for a mask stored with
// its keys contiguous, or (neither) through the emitter, element by element.
struct MaskRead {
  graph::ValueId value = graph::kNoValue;
  std::string causal;            // for a causal constant: its value at (i, j)
  int64_t causal_off = 0;        // … live where j <= i + causal_off
  double causal_dead = 0;        // … its value elsewhere
  std::string causal_live;       // … its value where live, as a literal
  double causal_live_value = 0;  // … and as a number (1 or 0 for a boolean mask)
  bool pairs = false;
  std::vector<int64_t> batch_stride;  // per output batch dim, elements (0: broadcast)
  int64_t row_stride = 0;
};

// `scan_constants`: look for a causal pattern in a constant mask (every element read).
MaskRead mask_read(const graph::Graph& g, const AttentionDims& a, bool scan_constants);

// For each query tile of bm rows, one past the last key tile of bn keys it must visit, when the
// scores' chain ends in a causal constant mask (GPT-2's and Llama's): the later key tiles are
// dead for every row of the tile. Empty when every tile visits every key tile.
std::vector<int> key_tile_ends(const graph::Graph& g, const AttentionDims& a, int bm, int bn,
                               const MaskRead& r);

// True when the scores' chain reads nothing past the last key: its inputs besides the
// scores are scalars and the mask the kernel reads itself (by pairs, or a causal constant).
bool safe_score(const graph::Graph& g, const AttentionDims& a, const MaskRead& r);

// The mask's element offset for output batch "b".
std::string mask_batch_offset(const MaskRead& r, const Shape& out_batch);

// The emitter's reads inside the kernel: the scores as `s`, P V's sum as `acc`, the mask as
// `mk` (pairs) or its causal comparison (its live value while *live is set).
void intercept_reads(Emitter& e, const AttentionDims& a, const MaskRead& mr,
                     std::shared_ptr<bool> live);

// The device table braze_key_tile_end of each query tile's key tile end (key_tile_ends).
std::string key_tile_end_table(const std::vector<int>& ends);
// The key tiles of `bn` keys wholly below the causal diagonal for the query tile whose first
// row is q0 (so for all its rows), as an expression in q0.
std::string whole_key_tiles(const AttentionDims& a, const MaskRead& mr, int bn);

// Declares qt (the block's query tile: the last first), q0, kt_end (and kt_live, the key tiles
// whole and live for every row, with `ends`); returns the device table `ends` needs ("" without).
std::string emit_key_range(Emitter& e, const AttentionDims& a, int bm, int bn, const MaskRead& mr,
                           const std::vector<int>& ends);

// The factor c > 0 where the scores' chain, the causal mask at its live value, is c times the
// product (a scale or a Div, the mask's 0 added, a Where choosing the scores: the live tiles'
// chain in every export), found by evaluating the chain (graph/scalar.h) at a few points;
// 0 where it is not (a softcap, a bias or a mask that is not causal read per score). With no
// mask at all, the same of the chain alone.
double live_scale(const graph::Graph& g, const AttentionDims& a, const MaskRead& r);

// Whether the softmax has live key tiles (braze_flash::run's and consume's LIVE): those below
// a causal mask's diagonal (`causal`: key_tile_ends found the mask causal), or, where nothing
// is masked and the chain is a scale, every whole key tile of float16 / bfloat16 — each
// exponent one FMA of the product there (softmax_scaled) where the chain's steps took three.
bool has_live_tiles(const graph::Graph& g, const AttentionDims& a, const MaskRead& r, bool causal);
// run()'s and consume()'s live arguments given has_live_tiles' answer `live`: "live, " and
// `kt_live` below a causal diagonal, "live, sk / bn" where every whole tile is live, else
// "score, 0".
std::string live_args(const AttentionDims& a, bool live, bool causal, int bn,
                      const std::string& kt_live);

// The lambdas `score` (and `live` with_live: the causal mask's live value in place), the
// softmax's input at (b, i, j) from the product's value s and the mask's mk. `live` is a
// braze_live_scale (codegen/device/attention.cuh) where live_scale finds the factor, so that
// the softmax takes each live exponent as one FMA of the product. Throws CudaUnsupported.
void emit_scores(Emitter& e, const graph::Graph& g, const AttentionDims& a, const MaskRead& r,
                 const std::shared_ptr<bool>& live, bool with_live);

// run()'s mask arguments: batch b's mask and its row stride, or nulls.
std::string mask_args(Emitter& e, const AttentionDims& a, const MaskRead& mr);

// The output: o[mt][n][2 r + q] is element (i, 8 n + 2 (lane % 4) + q), i = `row` (of mt, r),
// stored by the threads for which `mine` holds. Throws CudaUnsupported.
void emit_output(Emitter& e, const graph::Graph& g, const AttentionDims& a, int mt,
                 const std::string& row);

// The dead rows' value as a literal.
std::string dead_literal(const AttentionDims& a);

// The wgmma schedule (attention_wgmma.cpp, sm_90a): empty when it applies to `a` on `target`,
// else why not; its candidates ("flash" = 1, "wg" = 1, "bn", "cons", "stages"); its kernel.
std::string wgmma_problem(const AttentionDims& a, const Target& target);
std::vector<Tunables> wgmma_candidates(const AttentionDims& a, const Target& target);
std::optional<Kernel> wgmma_kernel(const graph::Graph& g, const fusion::Group& group,
                                   const AttentionDims& a, const Tunables& t, std::string* why_not,
                                   bool final_code);

}  // namespace braze::codegen::flash
