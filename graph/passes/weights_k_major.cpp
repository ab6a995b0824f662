#include "graph/passes/weights_k_major.h"

#include <braze/error.h>

#include <algorithm>
#include <map>
#include <optional>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "graph/op_context.h"
#include "graph/parallel.h"
#include "graph/passes/precision.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

// A 2-D constant of k rows (k a multiple of 8), the B of a product whose A is computed; of a
// half type, or float32 where `store_as` (a half type, or float32 itself at tf32) is what it
// becomes.
bool k_major_candidate(const Graph& g, ValueId a, ValueId b, std::optional<DType> store_as) {
  const Value &av = g.value(a), &bv = g.value(b);
  const bool dtype = store_as ? bv.dtype == DType::Float32 : is_half(bv.dtype);
  return !av.constant && bv.constant && bv.has_shape && bv.shape.size() == 2 && dtype &&
         bv.shape[0] % 8 == 0 && bv.shape[0] > 0 && bv.shape[1] > 0;
}

// An 8 x 8 block of 2-byte elements transposed: src rows `ld_src` apart, dst rows `ld_dst`.
void transpose_8x8(const uint16_t* src, int64_t ld_src, uint16_t* dst, int64_t ld_dst) {
#ifdef __SSE2__
  __m128i r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i)
    r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * ld_src));
  for (int i = 0; i < 4; ++i) {  // pairs of rows interleaved by element, then by pair, then by quad
    t[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 2; ++i) {
      u[4 * h + 2 * i] = _mm_unpacklo_epi32(t[4 * h + i], t[4 * h + i + 2]);
      u[4 * h + 2 * i + 1] = _mm_unpackhi_epi32(t[4 * h + i], t[4 * h + i + 2]);
    }
  for (int c = 0; c < 4; ++c) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * c) * ld_dst),
                     _mm_unpacklo_epi64(u[c], u[c + 4]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * c + 1) * ld_dst),
                     _mm_unpackhi_epi64(u[c], u[c + 4]));
  }
#else
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) dst[j * ld_dst + i] = src[i * ld_src + j];
#endif
}

// [rows, cols] (rows a multiple of 8) as [cols, rows] of 2-byte elements: 8 x 8 blocks in
// 64 x 64 tiles, the last cols % 8 columns one by one. A float32 w is rounded to `store_as`
// on the way, a tile at a time (one pass over the weight, one copy made).
Tensor transposed(const Tensor& w, std::optional<DType> store_as) {
  if (store_as == DType::Float32) return graph::transposed(w, {1, 0});  // 4-byte, kept as it is
  const int64_t rows = w.shape()[0], cols = w.shape()[1];
  const bool round = store_as.has_value();
  Tensor out = Tensor::uninitialized(round ? *store_as : w.dtype(), {cols, rows});
  auto* dst = static_cast<uint16_t*>(out.raw());
  const auto* src = static_cast<const uint16_t*>(w.raw());
  const auto* src32 = static_cast<const float*>(w.raw());
  uint16_t tile[64 * 64];
  auto at = [&](int64_t r, int64_t c) {
    if (!round) return src[r * cols + c];
    uint16_t h;
    passes::round_floats(src32 + r * cols + c, &h, 1, *store_as);
    return h;
  };
  constexpr int64_t kB = 64;
  const int64_t whole = cols / 8 * 8;
  for (int64_t r0 = 0; r0 < rows; r0 += kB)
    for (int64_t c0 = 0; c0 < whole; c0 += kB) {
      const int64_t r1 = std::min(rows, r0 + kB), c1 = std::min(whole, c0 + kB);
      // The tile's rows, rounded into `tile` (64 apart), or read in place.
      const uint16_t* from = src + r0 * cols + c0;
      int64_t ld = cols;
      if (round) {
        for (int64_t r = r0; r < r1; ++r)
          passes::round_floats(src32 + r * cols + c0, tile + (r - r0) * kB, c1 - c0, *store_as);
        from = tile, ld = kB;
      }
      for (int64_t r = r0; r < r1; r += 8)
        for (int64_t c = c0; c < c1; c += 8)
          transpose_8x8(from + (r - r0) * ld + (c - c0), ld, dst + c * rows + r, rows);
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = whole; c < cols; ++c) dst[c * rows + r] = at(r, c);
  return out;
}

bool is_plain(const Node& n, const char* name) {
  return n.op->name == name && n.op->domain.empty();
}

}  // namespace

bool is_k_major_weight(const Graph& g, const std::vector<std::vector<NodeId>>& users, NodeId t) {
  const Node& n = g.node(t);
  if (!is_plain(n, "Transpose") || !n.has_input(0) || n.outputs.empty() || n.outputs[0] == kNoValue)
    return false;
  const Value& w = g.value(n.inputs[0]);
  if (!w.constant || !w.has_shape || w.shape.size() != 2 || !is_half(w.dtype)) return false;
  // Of a 2-D tensor, perm (1, 0) is also the default.
  if (n.attrs.count("perm") && n.attr_ints("perm") != std::vector<int64_t>{1, 0}) return false;
  const ValueId y = n.outputs[0];
  if (g.is_graph_output(y)) return false;
  bool read = false;
  for (NodeId u : users[static_cast<size_t>(y)]) {
    const Node& mm = g.node(u);
    if (mm.dead) continue;
    if (!is_plain(mm, "MatMul") || mm.inputs.size() != 2 || mm.inputs[1] != y ||
        mm.inputs[0] == y || g.value(mm.inputs[0]).constant)
      return false;
    read = true;
  }
  return read;
}

namespace {

// The B of a MatMul / Gemm (transA = transB = 0) that store_weights_k_major transposes.
bool k_major_product(const Graph& g, const Node& n, std::optional<DType> store_as) {
  const bool gemm = is_plain(n, "Gemm");
  if (!gemm && (!is_plain(n, "MatMul") || n.inputs.size() != 2)) return false;
  if (!n.has_input(0) || !n.has_input(1) ||
      !k_major_candidate(g, n.inputs[0], n.inputs[1], store_as))
    return false;
  return !gemm || (n.attr_int("transB") == 0 && n.attr_int("transA") == 0);
}

// Every such weight transposed, on several threads (BERT-base's 170 MB of them took a quarter
// of a warm compile on one).
std::map<ValueId, Tensor> transposed_weights(const Graph& g, std::optional<DType> store_as) {
  std::vector<ValueId> ws;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (k_major_product(g, n, store_as) && std::find(ws.begin(), ws.end(), n.inputs[1]) == ws.end())
      ws.push_back(n.inputs[1]);
  }
  std::vector<Tensor> out(ws.size());
  parallel_for(ws.size(),
               [&](size_t i) { out[i] = transposed(*g.value(ws[i]).constant, store_as); });
  std::map<ValueId, Tensor> by_value;
  for (size_t i = 0; i < ws.size(); ++i) by_value.emplace(ws[i], std::move(out[i]));
  return by_value;
}

int store_k_major(Graph& g, std::optional<DType> store_as) {
  int changed = 0;
  const OpDef& transpose = op("Transpose");
  // One transposed copy of a weight however many products read it (a tied embedding, a
  // weight shared between layers), and one Transpose for its MatMuls.
  std::map<ValueId, ValueId> k_major, view_of;
  std::map<ValueId, Tensor> copies = transposed_weights(g, store_as);
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (!k_major_product(g, n, store_as)) continue;
    const bool gemm = is_plain(n, "Gemm");
    // Copies: adding values and nodes may move the graph's storage.
    const ValueId wid = n.inputs[1];
    const Value w = g.value(wid);
    const std::string node_name = n.name;
    if (!k_major.count(wid))
      k_major[wid] = g.add_constant(g.unique_name(w.name + "_k_major"), std::move(copies.at(wid)));
    const ValueId wt = k_major[wid];
    if (gemm) {
      g.node(id).inputs[1] = wt;
      g.node(id).attrs["transB"] = int64_t{1};
    } else {
      if (!view_of.count(wid)) {
        const ValueId view =
            g.add_value(g.unique_name(w.name + "_view"), g.value(wt).dtype, w.shape);
        const NodeId t = g.add_node(&transpose, node_name + "_weight", {wt}, {view},
                                    {{"perm", std::vector<int64_t>{1, 0}}}, 13);
        infer_node(g, t);
        view_of[wid] = view;
      }
      g.node(id).inputs[1] = view_of[wid];
    }
    ++changed;
  }
  return changed;
}

}  // namespace

int store_weights_k_major(Graph& g) { return store_k_major(g, std::nullopt); }

int store_weights_k_major_as(Graph& g, DType store_as) {
  BRAZE_CHECK(is_half(store_as) || store_as == DType::Float32,
              "store_weights_k_major_as: a half type or float32");
  return store_k_major(g, store_as);
}

}  // namespace braze::graph::passes
