// What the two GEMM schedules share (internal to codegen/): the product's sizes, the
// epilogue chain after it, the code that finishes output elements, the block raster.
// gemm.cpp holds these and dispatches; gemm_simt.cpp is the register-blocked SIMT schedule,
// gemm_tc.cpp the tensor-core one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/emitter.h"
#include "codegen/kernel.h"
#include "fusion/plan.h"
#include "graph/ir.h"
#include "graph/layout.h"
#include "graph/ops/conv_pool.h"

namespace braze::codegen {

// An operand of the product read in place, as a strided view of the kernel input `root`
// (graph/layout.h): matrix element (r, c) of output batch b — A's (i, p), B's (p, j) — sits
// at root[offset + Σ_f digit_f(b) · stride_f + r · stride_r + c · stride_c], the digits of b
// in the mixed radix of `batch` (whose sizes multiply to the output's batch count; stride 0
// broadcasts). One of the two matrix dims has stride 1: k when `kcontig`, else m (A) or n
// (B); `ld` is the other one's stride. A plain input [batch…, rows, cols] is the trivial view;
// a Reshape, Transpose, Expand, Slice … chain in the group in front of the product is read
// through, so that no copy is made.
struct OperandView {
  graph::ValueId root = graph::kNoValue;
  int64_t offset = 0;
  bool kcontig = true;
  int64_t ld = 0;
  std::vector<graph::StridedDim> batch;
  std::vector<graph::NodeId> chain;  // the layout ops read through, nearest the product first
};

// Operand A as an implicit-GEMM convolution's windows: a channels-last Im2Col (no padded
// columns) then a Reshape to [N·P, K·C], both in the group, in front of A. Row n·P + p is
// window p of image n of `root` [N, D1 … Dr, C] (a kernel input), column k·C + c that
// window's tap k at channel c, zero in the padding. The wgmma schedule loads it with TMA's
// im2col mode; the other tensor-core schedules do not read it (the SIMT one gathers it).
struct WindowView {
  graph::ValueId root = graph::kNoValue;
  int64_t images = 0, channels = 0;
  graph::WindowGeometry geometry;    // spatial dims outermost first
  std::vector<graph::NodeId> chain;  // the Reshape, the Im2Col
};

// The product's node and sizes: C[b] (m x nn) = op(A[b]) (m x k) * op(B[b]) (k x nn).
struct GemmDims {
  const graph::Node* node = nullptr;
  bool ta = false, tb = false, a_vec = false, b_vec = false;
  double alpha = 1, beta = 1;
  int64_t m = 0, k = 0, nn = 0, batches = 1;
  int elem_bytes = 4;  // A's element size
  Shape out_batch;
  // The operands as views (A, B), or why one is none: computed in the group by other than
  // layout ops, a vector, or no view with a contiguous matrix dim.
  std::optional<OperandView> view[2];
  std::string no_view[2];
  std::optional<WindowView> window;  // A's windows, where A has no view
};
std::optional<GemmDims> gemm_dims(const graph::Graph& g, const fusion::Group& group,
                                  std::string* why_not);

// Operand i (0: A, 1: B) of d's product as a view (see OperandView), or nullopt and why not.
// `in_group(n)`: node n is computed in the kernel.
std::optional<OperandView> gemm_operand_view(const graph::Graph& g,
                                             const std::function<bool(graph::NodeId)>& in_group,
                                             const GemmDims& d, int i, std::string* why_not);
// A's windows (see WindowView), or nullopt and why not (empty where A is no Im2Col's windows).
std::optional<WindowView> gemm_window_view(const graph::Graph& g,
                                           const std::function<bool(graph::NodeId)>& in_group,
                                           const GemmDims& d, std::string* why_not);
// The element offset of batch "b" (a long long in scope) of a view, as an expression.
std::string operand_view_offset(const OperandView& v);

// Coordinates of an operand with batch dims `in_batch` (aligned right to the output's
// batch shape `out_batch`) for output batch index "b", followed by `tail`.
std::vector<std::string> operand_coords(const Shape& out_batch, const Shape& in_batch,
                                        std::vector<std::string> tail);

// Offset of a batch's matrix in an operand of `shape` (its last two dims the matrix) for
// output batch index "b".
std::string gemm_batch_offset(const Shape& out_batch, const Shape& shape);

// The group's output at the end of the epilogue chain from the product, and the
// coordinates (over "b", "i", "j") where product element (b, i, j) lands in it.
// Where product element (b, i, j) lands in the output buffer, when the epilogue's layout ops
// (Reshape, Transpose …) only permute it: offset = Σ digit(x) · out_stride over the terms,
// digit(x) = (x / div) % size for x one of b, i, j. A GEMM writing [B·S, H·D] as [B, H, S, D]
// has i = (b', s) and j = (h, d) split into two terms each.
struct StoreTerm {
  char var;  // 'b', 'i' or 'j'
  int64_t div = 1, size = 1, out_stride = 1;
  // The outermost digit of its variable (div · size reaches the variable's extent): stores
  // happen only with the variable in range, so the digit needs no modulo.
  bool top = false;
};
struct StoreMap {
  std::vector<StoreTerm> terms;
  bool fits_32_bits = false;  // every index and offset below 2^31
};

struct GemmEpilogue {
  graph::ValueId out = graph::kNoValue;
  std::vector<std::string> out_coords;
  std::optional<StoreMap> store;  // nullopt: the output coordinates' own linearisation
  // A column pair (graph/column_pairs.h) after the product: the values of its even and odd
  // Slices, which the epilogue reads as product columns 2j and 2j + 1; "j" in out_coords and
  // the store map is then the pair's index, below `cols` = nn / 2 (else nn).
  graph::ValueId pair[2] = {graph::kNoValue, graph::kNoValue};
  int64_t cols = 0;
  bool paired() const { return pair[0] != graph::kNoValue; }
  // The outputs of the epilogue's SwapPairs (graph/ops/swap_pairs.cpp), each of a view of the
  // product that keeps its adjacent pairs (graph::keeps_pairs): at element (b, i, j) they read
  // product element (b, i, j ^ 1), the partner sum the store code hands on (emit_gemm_stores).
  std::vector<graph::ValueId> swaps;
  // The last value the epilogue computes (an element-wise op's) and its coordinates at
  // product element (b, i, j), where only layout ops follow it to `out`: the store code
  // computes it there rather than at the output's coordinates mapped back through the
  // layout ops (index arithmetic that goes out and back). kNoValue: none.
  graph::ValueId value = graph::kNoValue;
  std::vector<std::string> value_coords;
};
// The output offset of element (b, i, j) (all in scope) as an expression.
std::string gemm_store_offset(const GemmEpilogue& epi, const graph::Graph& g);
std::optional<GemmEpilogue> gemm_epilogue(const graph::Graph& g, const fusion::Group& group,
                                          const GemmDims& d, std::string* why_not);

// An emitter for the group whose product reads as the local "acc".
Emitter gemm_emitter(const graph::Graph& g, const fusion::Group& group, const GemmDims& d);

// Emits the statements finishing output element (b, i, j) from `sum`, the float/double
// product before alpha: alpha and Gemm's beta * C, the epilogue chain, the store. "b",
// "i" and "j" are in scope, in range. May throw CudaUnsupported.
// `partner`: the sum of product element (b, i, j ^ 1), for an epilogue with SwapPairs (else
// CudaUnsupported).
void emit_gemm_store(Emitter& e, const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                     const std::string& sum, const std::string& partner = "");
// The same without the store: returns the output's value (in its compute type).
std::string emit_gemm_value(Emitter& e, const graph::Graph& g, const GemmDims& d,
                            const GemmEpilogue& epi, const std::string& sum,
                            const std::string& partner = "");

// Emits the statements finishing the `width` adjacent output elements (b, i, jp + q),
// q < width, from `sum_q` (an expression in q): those in range, as one vector store when
// they are adjacent and aligned in the output (gemm_vector_store_ok). "b", "i" and "jp" are
// in scope; jp is a multiple of `width` (even). With a column pair (GemmEpilogue::pair) the
// width / 2 output elements (b, i, jp / 2 + q) from sums 2q and 2q + 1. `in_range`: the caller
// knows all `width` elements are in range (a tile inside the output), so no bounds checks — and no
// branches keeping the compiler from overlapping one element's loads and math with the next's.
void emit_gemm_stores(Emitter& e, const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                      int width, const std::string& sum_q, bool in_range = false);
// (`width` output elements: with a column pair, half the product columns.)
bool gemm_vector_store_ok(const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                          int width);
// The loads of emit_gemm_stores(…, width, …) at (b, i, jp) whose index moves with the row (a
// residual's), emitted ahead as `stmt(…)` (Emitter::set_preload); returns them with each
// lane's coordinates, for the later emit_gemm_stores to find memoised (Emitter::memoize).
// None where the stores are not vector stores, or the epilogue reads a column pair.
std::vector<Emitter::Preload> emit_gemm_preloads(Emitter& e, const graph::Graph& g,
                                                 const GemmDims& d, const GemmEpilogue& epi,
                                                 int width, const Emitter::PreloadStmt& stmt);

// Why a product is too large for the tiled schedules' 32-bit block, row, column and k
// indices and batch count with tiles of bm x bn x bk, or empty.
std::string gemm_too_large(const GemmDims& d, int bm, int bn, int bk, int split = 1);

// Emits "i0" and "j0" (int: see gemm_too_large), the origin of this block's bm x bn tile of
// the tiles_m x tiles_n grid, from the tile index `tile` (an int expression: blockIdx.x, or
// its quotient by a split-K cluster's size): blocks walk the grid in groups of a few
// block-rows (raster_rows, 8 unless a schedule tunes it), down a group's columns first, so
// blocks running together share A rows and B columns in L2.
void emit_gemm_tile_origin(Emitter& e, int64_t tiles_m, int64_t tiles_n, int bm, int bn,
                           const std::string& tile = "(int)blockIdx.x", int raster_rows = 8);

// The SIMT schedule (gemm_simt.cpp): any product; its search space, heuristic default first.
std::vector<Tunables> gemm_simt_candidates(const graph::Graph& g, const GemmDims& d,
                                           const Target& target);
std::optional<Kernel> gemm_simt_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const GemmDims& d, const GemmEpilogue& epi,
                                       const Target& target, const Tunables& tune,
                                       std::string* why_not);

// Whether the product's operand types run on tensor cores on `target` (float16, bfloat16;
// float32 at tf32; sm_80+).
bool gemm_tensor_core_types(const graph::Graph& g, const GemmDims& d, const Target& target);
// Why operand i's view cannot feed the tensor-core schedules' 16-byte copies (mma.sync) or
// the TMA (wgmma), or empty.
std::string gemm_tc_operand_problem(const graph::Graph& g, const GemmDims& d, int i);
// (For A with no view but windows, d.window: why TMA's im2col mode cannot load them.)
std::string gemm_wgmma_operand_problem(const GemmDims& d, int i);
// The TMA coordinates of output batch "b" along a view's batch dims of non-zero stride, outermost
// first (at least one: a single matrix is one batch of one).
std::vector<std::string> tma_batch_coords(const OperandView& v);
// A view's tensor map over parameter `param`: its contiguous dim (contig elements) first, then
// its rows, then the batch factors TMA walks (one of size 1 when there are none); boxes of
// box_contig x box_rows; the base is the view's first element.
TensorMap tma_view_map(const OperandView& v, size_t param, DType dtype, int64_t contig,
                       int64_t rows, unsigned box_contig, unsigned box_rows);

// Why the product's types and sizes keep it off the tensor cores on `target` (operands
// aside), or empty.
std::string gemm_tc_product_problem(const graph::Graph& g, const GemmDims& d, const Target& target);
// The tensor-core schedule (gemm_tc.cpp): float16 / bfloat16 products, and float32 ones
// when target.tf32. Empty when it applies to the group on `target`, else why not.
std::string gemm_tc_unsupported(const graph::Graph& g, const fusion::Group& group,
                                const GemmDims& d, const Target& target);
// Its search space ("tc" = 1), heuristic default first.
std::vector<Tunables> gemm_tc_candidates(const graph::Graph& g, const GemmDims& d,
                                         const Target& target);
// The wgmma schedule (gemm_wgmma.cpp, sm_90a): float16 / bfloat16 products. Empty when it
// applies, else why not; its search space ("tc" = 1, "wg" = 1); its kernel, which takes two
// tensor maps (Kernel::tensor_maps) after its pointers.
std::string gemm_wgmma_unsupported(const graph::Graph& g, const fusion::Group& group,
                                   const GemmDims& d, const Target& target);
// rows_ahead: the epilogue reads a 16-bit input at each element (a residual), which the
// staged tiles can copy into shared memory ahead (gemm_epilogue_reads_rows).
std::vector<Tunables> gemm_wgmma_candidates(const GemmDims& d, const Target& target,
                                            bool rows_ahead = false);
// Whether the product's epilogue reads a 16-bit float input at each element, four adjacent
// ones a vector (what the wgmma schedule's staged tiles copy ahead by cp.async).
bool gemm_epilogue_reads_rows(const graph::Graph& g, const fusion::Group& group, const GemmDims& d);
// Whether the wgmma schedule's staged tiles copy this preload ahead: 16-bit floats, four to a
// copy (8 bytes; what has run on the GPU — a 1-byte mask's 4-byte copies have not).
bool gemm_preload_copies_ahead(const Emitter::Preload& p);
std::optional<Kernel> gemm_wgmma_kernel(const graph::Graph& g, const fusion::Group& group,
                                        const GemmDims& d, const GemmEpilogue& epi,
                                        const Target& target, const Tunables& tune,
                                        std::string* why_not);
std::optional<Kernel> gemm_tc_kernel(const graph::Graph& g, const fusion::Group& group,
                                     const GemmDims& d, const GemmEpilogue& epi,
                                     const Target& target, const Tunables& tune,
                                     std::string* why_not);

}  // namespace braze::codegen
