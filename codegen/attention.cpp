// The attention schedule: softmax(Q Kᵀ …) V (fusion/attention.h) as one flash-attention
// kernel on mma.sync (sm_80+, float16 / bfloat16). The device side is braze_flash in
// codegen/device/attention.cuh; this file reads the group's match back, addresses Q, K and V
// as strided views (the layout ops in front of them are read in place, GQA's repeated K and
// V as a zero batch stride), writes the element-wise chain between the product and the
// softmax as the `score` function, and the output through the GEMM epilogue's store map, in
// the layout its consumer reads ([B, S, H, D] for the output projection).
//
//   grid (query tiles, batches)     block: ks groups of BM / 16 warps, 16 query rows each
//   Q [Sq, D] ─▶ smem, registers    K, V [Sk, D] ─▶ two smem buffers a group, tiles of BN keys
//
// Query tiles are launched last first, so that where a causal mask ends the key loop early
// (the tiles it masks entirely are skipped: kt_end) the long tiles start first.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "codegen/attention.h"
#include "codegen/attention_parts.h"
#include "codegen/lowering.h"
#include "codegen/codegen.h"
#include "codegen/cuda_hooks.h"
#include "graph/registry.h"
#include "graph/scalar.h"

namespace braze::codegen {

namespace {

using flash::kMaxSharedBytes;

fusion::Group without(const fusion::Group& group, graph::NodeId drop) {
  fusion::Group sub;
  sub.kind = fusion::GroupKind::Gemm;
  for (graph::NodeId id : group.nodes)
    if (id != drop) sub.nodes.push_back(id);
  return sub;
}

// The group's nodes the output passes through after P V (its epilogue), with P V first.
fusion::Group epilogue_group(const graph::Graph& g, const fusion::Group& group, graph::NodeId pv,
                             const std::vector<std::vector<graph::NodeId>>& users) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  fusion::Group epi;
  epi.kind = fusion::GroupKind::Gemm;
  epi.nodes = {pv};
  epi.outputs = group.outputs;
  for (graph::ValueId v = g.node(pv).outputs[0];;) {
    graph::NodeId next = graph::kNoNode;
    for (graph::NodeId u : users[v])
      if (members.count(u)) next = u;
    if (next == graph::kNoNode) break;
    epi.nodes.push_back(next);
    v = g.node(next).outputs[0];
  }
  return epi;
}

// Rows copied in 16-byte chunks: `per_chunk` elements (8 of a half type, 4 floats).
std::string view_problem(const OperandView& v, bool want_kcontig, const char* what,
                         int64_t per_chunk) {
  if (v.kcontig != want_kcontig) return fmt::format("{}'s head dim is not contiguous", what);
  bool aligned = v.ld % per_chunk == 0 && v.offset % per_chunk == 0;
  for (const graph::StridedDim& f : v.batch) aligned = aligned && f.stride % per_chunk == 0;
  return aligned ? ""
                 : fmt::format(
                       "{}'s row stride, offset and batch strides must be multiples of {} elements",
                       what, per_chunk);
}

// bm query rows a block, bn keys a tile, ks groups of warps sharing the key tiles, mt mma
// row tiles of 16 a warp (sharing each K and V fragment it loads). As braze_flash lays out
// its shared memory for head dim d and elements of `elem` bytes (4: the float32 path, which
// also stages each warp's P tile).
struct FlashTile {
  int bm = 64, bn = 64, ks = 1, mt = 1;
  int threads() const { return bm / (16 * mt) * 32 * ks; }
  int64_t shared_bytes(int64_t d, size_t elem) const {
    const int64_t chunks = d * static_cast<int64_t>(elem) / 16,
                  row = (chunks % 2 ? chunks : chunks + 1) * 16;
    const int64_t p = elem == 4 ? int64_t{ks} * (bm / (16 * mt)) * 16 * mt * (bn + 1) * 4 : 0;
    return (bm + 4 * int64_t{bn} * ks) * row + p;
  }
  bool operator==(const FlashTile&) const = default;
};

// The chain's inputs other than the scores and scalars (masks, biases), in order.
std::vector<graph::ValueId> chain_inputs(const graph::Graph& g, const AttentionDims& a) {
  std::set<graph::ValueId> inside = {a.qk.node->outputs[0]};
  for (graph::NodeId id : a.match.chain) inside.insert(g.node(id).outputs[0]);
  std::vector<graph::ValueId> r;
  for (graph::NodeId id : a.match.chain)
    for (graph::ValueId v : g.node(id).inputs)
      if (v != graph::kNoValue && !inside.count(v) && checked_numel(g.value(v).shape) > 1)
        r.push_back(v);
  return r;
}

// "j <= i + off ? live : dead" (and off, and dead) when `mask` is a constant [B…, Sq, Sk] of
// two values above and on or below a diagonal, the same in every [Sq, Sk] slice (GPT-2's mask
// at batch 8 is [8, 1, S, S]): numbers whose dead value is at most -1e30 (exp takes it to 0),
// or booleans (a Where's condition, either way round); else empty.
std::string causal_expr(const graph::Value& mask, const AttentionDims& a, int64_t* off_out,
                        double* dead_out, std::string* live_out, double* live_value) {
  if (!mask.constant || mask.shape.size() < 2 || mask.shape.back() != a.sk ||
      mask.shape[mask.shape.size() - 2] != a.sq || a.sq * a.sk == 0)
    return "";
  const Tensor& c = *mask.constant;
  const bool boolean = c.dtype() == DType::Bool;
  const double live = c.get_f64(0);
  int64_t off = 0;
  while (off + 1 < a.sk && c.get_f64(off + 1) == live) ++off;
  const double dead = off + 1 < a.sk ? c.get_f64(off + 1) : boolean ? 1 - live : -INFINITY;
  if (!boolean && (!(dead <= -1e30) || live <= -1e30)) return "";
  // Every element, compared as bit patterns (a 2048 x 2048 mask is 4M of them).
  const size_t es = dtype_size(c.dtype());
  if (es != 1 && es != 2 && es != 4) return "";
  const unsigned char* raw = static_cast<const unsigned char*>(c.raw());
  auto bits = [&](int64_t i) {
    uint32_t x = 0;
    std::memcpy(&x, raw + static_cast<size_t>(i) * es, es);
    return x;
  };
  const uint32_t live_bits = bits(0),
                 dead_bits = off + 1 < a.sk ? bits(off + 1) : (boolean ? !live_bits : 0);
  // Row by row against a row of live and a row of dead elements (memcmp; element by element
  // this scan was 9% of a warm GPT-2 b1 s1024 compile, 12 masks of 1024 x 1024).
  const size_t row_bytes = static_cast<size_t>(a.sk) * es;
  std::vector<unsigned char> live_row(row_bytes), dead_row(row_bytes);
  for (int64_t j = 0; j < a.sk; ++j) {
    std::memcpy(live_row.data() + static_cast<size_t>(j) * es, &live_bits, es);
    std::memcpy(dead_row.data() + static_cast<size_t>(j) * es, &dead_bits, es);
  }
  const int64_t rows = c.numel() / a.sk;  // of every slice
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % a.sq;
    const unsigned char* row = raw + static_cast<size_t>(r) * row_bytes;
    const size_t live_bytes =
        static_cast<size_t>(std::min(a.sk, i + off + 1)) * es;  // j <= i + off
    if (std::memcmp(row, live_row.data(), live_bytes) != 0 ||
        std::memcmp(row + live_bytes, dead_row.data(), row_bytes - live_bytes) != 0)
      return "";
  }
  *off_out = off;
  *dead_out = dead;
  *live_value = live;
  *live_out = boolean ? (live != 0 ? "true" : "false") : cuda_literal(ComputeType::Float, live);
  if (boolean) return fmt::format("(j <= i + {}) == {}", off, live != 0 ? "true" : "false");
  return fmt::format("(j <= i + {} ? {} : {})", off, cuda_literal(ComputeType::Float, live),
                     cuda_literal(ComputeType::Float, dead));
}

// True when the scores' last op takes a dead element of the causal mask `r` to -inf
// (at most -1e30), which nothing after it changes: it adds the mask, or it is a Where on the
// mask whose branch for a dead element is such a constant.
bool dead_scores_vanish(const graph::Graph& g, const AttentionDims& a, const flash::MaskRead& r) {
  const graph::Node& last = g.node(a.match.chain.back());
  if (last.op_type() == "Add") return last.inputs[0] == r.value || last.inputs[1] == r.value;
  if (last.op_type() != "Where" || last.inputs[0] != r.value) return false;
  const graph::Value& fill = g.value(last.inputs[r.causal_dead != 0 ? 1 : 2]);
  return fill.constant && fill.constant->numel() == 1 && fill.constant->get_f64(0) <= -1e30;
}

}  // namespace

namespace flash {

MaskRead mask_read(const graph::Graph& g, const AttentionDims& a, bool scan_constants) {
  MaskRead r;
  const std::vector<graph::ValueId> in = chain_inputs(g, a);
  if (in.empty()) return r;
  r.value = in[0];
  const graph::Value& m = g.value(r.value);
  if (scan_constants)
    r.causal =
        causal_expr(m, a, &r.causal_off, &r.causal_dead, &r.causal_live, &r.causal_live_value);
  if (!r.causal.empty()) return r;
  // Pairs: keys contiguous and an even count (every pair 4-byte aligned), the mask's type the
  // kernel's.
  const Shape& ms = m.shape;
  if (m.dtype != a.dtype || ms.back() != a.sk || a.sk % 2 != 0) return r;
  const size_t rank = a.qk.out_batch.size() + 2;
  Shape strides(ms.size());
  int64_t run = 1;
  for (size_t k = ms.size(); k-- > 0;) {
    strides[k] = ms[k] == 1 ? 0 : run;
    run *= ms[k];
  }
  auto stride_of = [&](size_t dim) -> int64_t {  // of scores dim `dim`
    const size_t lead = rank - ms.size();
    return dim < lead ? 0 : strides[dim - lead];
  };
  r.row_stride = stride_of(rank - 2);
  for (size_t f = 0; f < a.qk.out_batch.size(); ++f) r.batch_stride.push_back(stride_of(f));
  r.pairs = true;
  return r;
}

// Every row has a live key (key 0: off >= 0).
std::vector<int> key_tile_ends(const graph::Graph& g, const AttentionDims& a, int bm, int bn,
                               const MaskRead& r) {
  if (r.causal.empty() || !dead_scores_vanish(g, a, r)) return {};
  const int64_t q_tiles = (a.sq + bm - 1) / bm, k_tiles = (a.sk + bn - 1) / bn;
  std::vector<int> ends(static_cast<size_t>(q_tiles));
  bool any = false;
  for (int64_t qt = 0; qt < q_tiles; ++qt) {
    const int64_t last_row = std::min(a.sq, (qt + 1) * bm) - 1;
    ends[static_cast<size_t>(qt)] =
        static_cast<int>(std::min(k_tiles, (last_row + r.causal_off) / bn + 1));
    any = any || ends[static_cast<size_t>(qt)] < k_tiles;
  }
  return any ? ends : std::vector<int>{};
}

bool safe_score(const graph::Graph& g, const AttentionDims& a, const MaskRead& r) {
  for (graph::ValueId v : chain_inputs(g, a))
    if (v != r.value || (!r.pairs && r.causal.empty())) return false;
  return true;
}

std::string mask_batch_offset(const MaskRead& r, const Shape& out_batch) {
  std::string off;
  int64_t inner = 1;
  for (size_t f = out_batch.size(); f-- > 0;) {
    if (r.batch_stride[f] != 0 && out_batch[f] != 1)
      off += fmt::format("{}((b / {}LL) % {}LL) * {}LL", off.empty() ? "" : " + ", inner,
                         out_batch[f], r.batch_stride[f]);
    inner *= out_batch[f];
  }
  return off.empty() ? "0LL" : off;
}

}  // namespace flash

namespace {

FlashTile tile_of(const Tunables& t) {
  return {t.at("bm"), t.at("bn"), t.count("ks") ? t.at("ks") : 1, t.count("mt") ? t.at("mt") : 1};
}
Tunables tunables_of(const FlashTile& t) {
  Tunables u{{"flash", 1}, {"bm", t.bm}, {"bn", t.bn}};
  if (t.ks > 1) u["ks"] = t.ks;
  if (t.mt > 1) u["mt"] = t.mt;
  return u;
}

}  // namespace

std::optional<AttentionDims> attention_dims(const graph::Graph& g, const fusion::Group& group,
                                            const Target& target, std::string* why_not) {
  auto fail = [&](std::string why) -> std::optional<AttentionDims> {
    *why_not = std::move(why);
    return std::nullopt;
  };
  if (target.sm < 80) return fail("flash attention needs sm_80 or newer");
  const auto shared_users = g.shared_users();
  const graph::Users& users = *shared_users;
  std::optional<fusion::AttentionMatch> m =
      fusion::match_attention_in(g, group.nodes, users, kernel_lowerings(), why_not);
  if (!m) return std::nullopt;
  AttentionDims a;
  a.match = *m;
  std::optional<GemmDims> qk = gemm_dims(g, without(group, m->pv), why_not);
  if (!qk) return std::nullopt;
  std::optional<GemmDims> pv = gemm_dims(g, without(group, m->qk), why_not);
  if (!pv) return std::nullopt;
  a.qk = *qk;
  a.pv = *pv;
  const DType t = g.value(qk->node->inputs[0]).dtype;
  if (t != DType::Float16 && t != DType::BFloat16 && t != DType::Float32)
    return fail("flash attention takes float16, bfloat16 or float32 Q, K and V");
  if (g.value(qk->node->inputs[1]).dtype != t || g.value(pv->node->inputs[1]).dtype != t ||
      g.value(pv->node->outputs[0]).dtype != t)
    return fail("Q, K, V and the output differ in type");
  if (qk->ta || qk->tb || qk->a_vec || qk->b_vec || pv->b_vec)
    return fail("a matrix-vector product");
  a.dtype = t;
  a.d = qk->k;
  a.sq = qk->m;
  a.sk = qk->nn;
  a.batches = qk->batches;
  if (pv->nn != a.d || pv->k != a.sk || pv->m != a.sq || pv->out_batch != qk->out_batch)
    return fail("Q Kᵀ and P V do not share the batch, sequence and head dims");
  if (a.d % 16 != 0 || a.d < 16 || a.d > 128)
    return fail(fmt::format("head dim {} (16 to 128, a multiple of 16)", a.d));
  if (a.sq == 0 || a.sk == 0 || a.batches == 0) return fail("an empty attention");
  if (a.sq >= (int64_t{1} << 31) || a.sk >= (int64_t{1} << 31)) return fail("sequences past 2^31");
  const std::pair<const std::optional<OperandView>*, const std::string*> views[] = {
      {&qk->view[0], &qk->no_view[0]},
      {&qk->view[1], &qk->no_view[1]},
      {&pv->view[1], &pv->no_view[1]}};
  const char* names[] = {"Q", "K", "V"};
  for (int i = 0; i < 3; ++i) {
    if (!*views[i].first)
      return fail(fmt::format("{} is not a strided view: {}", names[i], *views[i].second));
    std::string why =
        view_problem(**views[i].first, i != 2, names[i], 16 / static_cast<int64_t>(dtype_size(t)));
    if (!why.empty()) return fail(why);
  }
  a.epi_group = epilogue_group(g, group, m->pv, users);
  std::optional<GemmEpilogue> epi = gemm_epilogue(g, a.epi_group, *pv, why_not);
  if (!epi) return std::nullopt;
  a.epi = *epi;
  a.dead = m->where != graph::kNoNode ? 0.0 : NAN;
  return a;
}

std::vector<Tunables> attention_candidates(const graph::Graph& g, const fusion::Group& group,
                                           const Target& target) {
  std::string why;
  std::optional<AttentionDims> a = attention_dims(g, group, target, &why);
  if (!a) return {};
  std::vector<Tunables> c;
  // Heuristic, from every candidate timed on the H200 at the model rows' sizes
  // (GpuAttentionThroughput; figures in bench/MODELS.md): 64 query rows a block (4 warps of
  // 16) and 64-key tiles, 3 blocks an SM, ahead of 128 rows (one block of 8 warps an SM) and
  // of 32- or 128-key tiles. A warp's rows visit every key tile in turn, so where the query
  // tiles give the SMs fewer than 8 warps each and the keys are long (GPT-2 at batch 1,
  // S = 1024), four groups of warps share the key tiles; with fewer key tiles (Llama at
  // S = 512, BERT at batch 8) their merge costs what they save.
  const int64_t tiles64 = (a->sq + 63) / 64 * a->batches, key_tiles = (a->sk + 63) / 64;
  const FlashTile def = tiles64 * 4 < 8 * int64_t{target.num_sms} && key_tiles >= 16
                            ? FlashTile{64, 64, 4}
                            : FlashTile{64, 64};
  for (FlashTile t :
       {def, FlashTile{64, 64}, FlashTile{64, 64, 2}, FlashTile{128, 64}, FlashTile{64, 32},
        FlashTile{64, 32, 2}, FlashTile{128, 32}, FlashTile{64, 128}, FlashTile{128, 128},
        FlashTile{64, 64, 4}, FlashTile{128, 64, 1, 2}, FlashTile{64, 64, 1, 2},
        FlashTile{128, 32, 1, 2}, FlashTile{64, 64, 2, 2}}) {
    // Two row tiles a warp hold twice the scores and outputs: registers enough up to D = 64
    // and 64-key tiles (255 at D = 64; at 128 keys they spill).
    if (t.mt > 1 && a->d > 64) continue;
    Tunables tu = tunables_of(t);
    if (t.shared_bytes(a->d, dtype_size(a->dtype)) <= kMaxSharedBytes &&
        std::find(c.begin(), c.end(), tu) == c.end())
      c.push_back(tu);
  }
  // On sm_90a the wgmma schedule's candidates lead: on the H200 (2026-12-03, every candidate
  // of GpuAttentionThroughput) its 128-row blocks were ahead at every model row's size, also
  // where they do not fill the SMs (GPT-2 at batch 1: 96 blocks, 21 us against 28), and even
  // at BERT's 128 keys (10.8 against 11.0 us).
  // Where 128-row items leave SMs idle and the keys are long, 64-row items (one consumer
  // warpgroup, 128-key tiles) fill them (H100 2026-12-06, blocks taking items in turn: GPT-2
  // b1 S = 1024 15.6 us against 18.7, Llama S = 512 14.2 against 14.5; at BERT b8's one key
  // tile 13.2 against 11.5, so not there).
  std::vector<Tunables> wg = flash::wgmma_candidates(*a, target);
  if (!wg.empty() && (a->sq + 127) / 128 * a->batches < target.num_sms &&
      (a->sk + 127) / 128 >= 4) {
    auto small = std::find_if(wg.begin(), wg.end(), [](const Tunables& t) {
      return t.at("cons") == 1 && t.at("bn") == 128;
    });
    if (small != wg.end()) std::rotate(wg.begin(), small, small + 1);
  }
  c.insert(c.begin(), wg.begin(), wg.end());
  return c;
}

std::string attention_mask_kind(const graph::Graph& g, const AttentionDims& a) {
  const flash::MaskRead r = flash::mask_read(g, a, true);
  return r.value == graph::kNoValue ? "none" : !r.causal.empty() ? "causal" : "additive";
}

namespace flash {

void intercept_reads(Emitter& e, const AttentionDims& a, const MaskRead& mr,
                     std::shared_ptr<bool> live) {
  const graph::ValueId scores = a.qk.node->outputs[0], prod = a.pv.node->outputs[0];
  e.set_intercept(
      [=](graph::ValueId v, const std::vector<std::string>&) -> std::optional<std::string> {
        if (v == scores) return std::string("s");
        if (v == prod) return std::string("acc");
        if (v == mr.value && !mr.causal.empty()) return *live ? mr.causal_live : mr.causal;
        if (v == mr.value && mr.pairs) return std::string("mk");
        return std::nullopt;
      });
}

std::string key_tile_end_table(const std::vector<int>& ends) {
  return fmt::format("__device__ const int braze_key_tile_end[] = {{{}}};\n",
                     fmt::join(ends, ", "));
}

std::string whole_key_tiles(const AttentionDims& a, const MaskRead& mr, int bn) {
  return fmt::format("(q0 + {0} < {1} ? q0 + {0} : {1}) / {2}", mr.causal_off + 1, a.sk, bn);
}

std::string emit_key_range(Emitter& e, const AttentionDims& a, int bm, int bn, const MaskRead& mr,
                           const std::vector<int>& ends) {
  e.line("const int qt = (int)gridDim.x - 1 - (int)blockIdx.x;");
  e.line(fmt::format("const int q0 = qt * {};", bm));
  e.line(ends.empty() ? fmt::format("const int kt_end = {};", (a.sk + bn - 1) / bn)
                      : "const int kt_end = braze_key_tile_end[qt];");
  if (ends.empty()) return "";
  e.line(fmt::format("const int kt_whole = {}, kt_live = kt_whole < kt_end ? kt_whole : kt_end;",
                     whole_key_tiles(a, mr, bn)));
  return key_tile_end_table(ends);
}

namespace {

// The chain's value at the Softmax for scores x, the mask at its live value; nullopt where it
// reads anything else but scalar constants, or a step is no float.
std::optional<double> live_chain_at(const graph::Graph& g, const AttentionDims& a,
                                    const MaskRead& r, double x) {
  std::map<graph::ValueId, double> val = {{a.qk.node->outputs[0], x}};
  for (graph::NodeId id : a.match.chain) {
    const graph::Node& n = g.node(id);
    if (!n.op->scalar) return std::nullopt;
    std::vector<std::optional<DType>> types;
    std::vector<graph::ScalarValue> args;
    for (graph::ValueId v : n.inputs) {
      graph::ScalarValue sv{};
      types.push_back(v == graph::kNoValue ? std::nullopt : std::optional(g.value(v).dtype));
      if (v != graph::kNoValue) {
        const graph::Value& vv = g.value(v);
        double d = 0;
        if (val.count(v))
          d = val.at(v);
        else if (v == r.value)
          d = r.causal_live_value;
        else if (vv.constant && vv.constant->numel() == 1)
          d = vv.constant->get_f64(0);
        else
          return std::nullopt;
        const graph::ComputeType t = graph::compute_type(vv.dtype);
        if (graph::is_floating(t))
          sv.f = d;
        else if (t == graph::ComputeType::UInt)
          sv.u = static_cast<uint64_t>(d);
        else
          sv.i = static_cast<int64_t>(d);
      }
      args.push_back(sv);
    }
    graph::ScalarEvaluator ev(graph::scalar_expr(n, types));
    const graph::ScalarValue out = ev(args.data());
    if (!graph::is_floating(ev.result_type())) return std::nullopt;
    val[n.outputs[0]] = out.f;
  }
  const auto it = val.find(g.node(a.match.softmax).inputs[0]);
  return it == val.end() ? std::nullopt : std::optional(it->second);
}

}  // namespace

double live_scale(const graph::Graph& g, const AttentionDims& a, const MaskRead& r) {
  if (a.match.chain.empty() || (r.causal.empty() && r.value != graph::kNoValue)) return 0;
  for (graph::ValueId v : chain_inputs(g, a))
    if (v != r.value) return 0;
  const std::optional<double> zero = live_chain_at(g, a, r, 0), one = live_chain_at(g, a, r, 1);
  if (!zero || !one || *zero != 0 || !(*one > 0) || !std::isfinite(*one)) return 0;
  for (double x : {2.0, -3.0, 0.5, 100.0, -1e-3}) {
    const std::optional<double> y = live_chain_at(g, a, r, x);
    if (!y || std::abs(*y - *one * x) > 1e-12 * std::abs(*one * x)) return 0;
  }
  return *one;
}

void emit_scores(Emitter& e, const graph::Graph& g, const AttentionDims& a, const MaskRead& r,
                 const std::shared_ptr<bool>& live, bool with_live) {
  std::vector<std::string> coords = cuda_unravel("b", a.qk.out_batch);
  coords.push_back("i");
  coords.push_back("j");
  auto score_lambda = [&](const char* name, bool live_part) {
    *live = live_part;
    e.push_scope();
    e.open(fmt::format("auto {} = [&](int i, int j, float s, float mk) -> float {{", name));
    const std::string x = e.value_at(g.node(a.match.softmax).inputs[0], coords);
    e.line(fmt::format("return (float)({});", x));
    e.close(";");
    e.pop_scope();
    *live = false;
  };
  score_lambda("score", false);
  if (!with_live) return;
  const double c = live_scale(g, a, r);
  if (c > 0)
    e.line(fmt::format("const braze_live_scale live{{{}}};", cuda_literal(ComputeType::Float, c)));
  else
    score_lambda("live", true);
}

bool has_live_tiles(const graph::Graph& g, const AttentionDims& a, const MaskRead& r, bool causal) {
  // float32 keeps its chain's rounding there (the live score would be s · c for s / d).
  return causal ||
         (r.value == graph::kNoValue && a.dtype != DType::Float32 && live_scale(g, a, r) > 0);
}

std::string live_args(const AttentionDims& a, bool live, bool causal, int bn,
                      const std::string& kt_live) {
  if (!live) return "score, 0";
  return causal ? "live, " + kt_live : fmt::format("live, {}", a.sk / bn);
}

std::string mask_args(Emitter& e, const AttentionDims& a, const MaskRead& mr) {
  return mr.pairs ? fmt::format("{} + {}, {}LL", e.input_param(mr.value),
                                mask_batch_offset(mr, a.qk.out_batch), mr.row_stride)
                  : fmt::format("({}*)nullptr, 0LL", cuda_storage_type(a.dtype));
}

void emit_output(Emitter& e, const graph::Graph& g, const AttentionDims& a, int mt,
                 const std::string& row) {
  e.open("if (mine) {");
  e.line("#pragma unroll");
  e.open(fmt::format("for (int mt = 0; mt < {}; ++mt) {{", mt));
  e.line("#pragma unroll");
  e.open(fmt::format("for (int n = 0; n < {}; ++n) {{", a.d / 8));
  e.line("#pragma unroll");
  e.open("for (int r = 0; r < 2; ++r) {");
  e.line(fmt::format("const long long i = {};", row));
  e.line("const long long jp = n * 8 + (lane % 4) * 2;");
  emit_gemm_stores(e, g, a.pv, a.epi, 2, "o[mt][n][2 * r + q]");
  for (int c = 0; c < 4; ++c) e.close();  // r, n, mt, mine
}

std::string dead_literal(const AttentionDims& a) {
  return std::isnan(a.dead) ? "__int_as_float(0x7fc00000)" : "0.f";
}

}  // namespace flash

namespace {

// The kernel; `final_code`: with a constant mask's structure used (a causal mask as an index
// comparison, its dead key tiles skipped), which reads every element of it. Without, the
// code is only written to see that it can be (the partitioner's question).
std::optional<Kernel> flash_kernel(const graph::Graph& g, const fusion::Group& group,
                                   const AttentionDims& a, const FlashTile& t, std::string* why_not,
                                   bool final_code) {
  if (t.mt < 1 || t.mt > 2 || t.bm % (16 * t.mt) || t.bn % 16 || t.bm < 16 || t.bm > 256 ||
      t.bn < 16 || t.bn > 128 || t.ks < 1 || t.ks > 4 || t.threads() > 1024 ||
      t.shared_bytes(a.d, dtype_size(a.dtype)) > kMaxSharedBytes) {
    *why_not = fmt::format(
        "flash attention tile {}x{} over {} warp groups of {}-row warps is not supported", t.bm,
        t.bn, t.ks, 16 * t.mt);
    return std::nullopt;
  }
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  Emitter e(g, [members](graph::NodeId id) { return members.count(id) != 0; });
  const flash::MaskRead mr = flash::mask_read(g, a, final_code);
  auto live_mask = std::make_shared<bool>(false);  // writing the chain below the diagonal
  flash::intercept_reads(e, a, mr, live_mask);
  const OperandView &vq = *a.qk.view[0], &vk = *a.qk.view[1], &vv = *a.pv.view[1];
  const std::string pq = e.input_param(vq.root), pk = e.input_param(vk.root),
                    pv = e.input_param(vv.root);
  const int64_t q_tiles = (a.sq + t.bm - 1) / t.bm;
  e.line("const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;");
  const std::vector<int> ends = flash::key_tile_ends(g, a, t.bm, t.bn, mr);
  std::string code = flash::emit_key_range(e, a, t.bm, t.bn, mr, ends);
  const bool live = flash::has_live_tiles(g, a, mr, !ends.empty());
  e.open(fmt::format("for (long long b = blockIdx.y; b < {}LL; b += gridDim.y) {{", a.batches));
  try {
    flash::emit_scores(e, g, a, mr, live_mask, live);
  } catch (const CudaUnsupported& u) {
    *why_not = "the scores' element-wise chain: " + u.why;
    return std::nullopt;
  }
  e.line(fmt::format("float o[{}][{}][4];", t.mt, a.d / 8));
  e.line(fmt::format(
      "const bool mine = flash::run<{}, {}, {}>(o, {} + {}, {}LL, {} + {}, {}LL, {} + "
      "{}, {}LL, {}, q0, {}, {}, kt_end, {}, "
      "score, {}, braze_smem);",
      mr.pairs ? "true" : "false", flash::safe_score(g, a, mr) ? "true" : "false",
      live ? "true" : "false", pq, operand_view_offset(vq), vq.ld, pk, operand_view_offset(vk),
      vk.ld, pv, operand_view_offset(vv), vv.ld, flash::mask_args(e, a, mr), a.sq, a.sk,
      flash::dead_literal(a), flash::live_args(a, live, !ends.empty(), t.bn, "kt_live")));
  // Group 0's warps hold the output: row i = q0 + 16 (MT warp + mt) + g + 8 r.
  try {
    flash::emit_output(e, g, a, t.mt,
                       fmt::format("q0 + (warp % {}) * {} + mt * 16 + lane / 4 + r * 8",
                                   t.bm / (16 * t.mt), 16 * t.mt));
  } catch (const CudaUnsupported& u) {
    *why_not = u.why;
    return std::nullopt;
  }
  e.close();  // b

  Kernel kern = kernel_record(e, fusion::GroupKind::Attention, group, tunables_of(t));
  kern.block = {static_cast<unsigned>(t.threads()), 1, 1};
  kern.grid = {static_cast<unsigned>(q_tiles),
               static_cast<unsigned>(std::clamp<int64_t>(a.batches, 1, 65535)), 1};
  kern.shared_bytes = static_cast<unsigned>(t.shared_bytes(a.d, dtype_size(a.dtype)));
  code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({0}{9}) KERNEL_NAME({1}) {{\n"
      "  typedef braze_flash<{2}, {3}, {4}, {5}, {8}, {10}> flash;\n"
      "  static_assert(flash::kSharedBytes <= {6}, \"the launch's shared memory\");\n"
      "  BRAZE_DYNAMIC_SMEM(braze_smem, {6});\n{7}}}\n",
      t.threads(), e.signature(), cuda_storage_type(a.dtype), a.d, t.bm, t.bn, kern.shared_bytes,
      e.body(), t.ks, t.threads() == 256 ? ", 2" : "",
      t.mt);  // two blocks an SM: at most 128 registers
  finish_kernel(g, kern, code, kMmaHelpers | kAttentionHelpers);
  return kern;
}

// The kernel of tunables `tune` (else the heuristic's), on wgmma where they say so.
std::optional<Kernel> any_flash_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const Target& target, std::string* why_not,
                                       const Tunables* tune, bool final_code) {
  std::optional<AttentionDims> a = attention_dims(g, group, target, why_not);
  if (!a) return std::nullopt;
  const Tunables t = tune ? *tune : attention_candidates(g, group, target).front();
  if (t.count("wg")) return flash::wgmma_kernel(g, group, *a, t, why_not, final_code);
  return flash_kernel(g, group, *a, tile_of(t), why_not, final_code);
}

}  // namespace

std::string attention_unsupported(const graph::Graph& g, const fusion::Group& group,
                                  const Target& target) {
  std::string why;
  if (!attention_dims(g, group, target, &why)) return why;
  // The element-wise chain and the epilogue are written by the emitter: try it.
  if (!any_flash_kernel(g, group, target, &why, nullptr, false)) return why;
  return "";
}

std::optional<Kernel> attention_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const Target& target, std::string* why_not,
                                       const Tunables* tune) {
  return any_flash_kernel(g, group, target, why_not, tune, true);
}

}  // namespace braze::codegen
