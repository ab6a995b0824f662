// The Hopper flash-attention schedule (sm_90a): the attention group's kernel on wgmma, Q, K
// and V tiles streamed by TMA from the same strided views the mma.sync schedule reads
// (attention.cpp), one producer warpgroup and one or two consumer warpgroups of 64 query rows
// each. The device side is braze_flash_wg in codegen/device/attention_wgmma.cuh; the scores'
// chain, the mask's reads and the output's stores are attention.cpp's (attention_parts.h).
//
//   grid: a block an SM, each     block: warpgroup 0 loads, 1 .. CONS compute 64 rows each
//   taking items (query tile,     Q [BM, D] ─▶ smem once an item
//   batch) in turn                K, V [BN, D] ─▶ STAGES smem stages, each on its own barrier
//
// Items are numbered heaviest first (a causal mask's last query tiles visit the most key
// tiles); a block's next item's Q and first tiles load while it finishes the last.
//
// TMA maps: the head dim first (boxes of 64, one 128-byte swizzled row), the sequence, then
// the view's batch factors (GQA's repeated K and V: a stride-0 factor TMA does not walk).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "codegen/attention_parts.h"
#include "codegen/codegen.h"
#include "codegen/cuda_hooks.h"

namespace braze::codegen::flash {

namespace {

// bn keys a tile, cons consumer warpgroups of 64 query rows, stages K / V stages; blocks: at
// most that many blocks, each taking items in turn (0: a block an item); grp: the items go in
// groups of that many batches, one group's before the next's (0: one group).
struct WgFlash {
  int bn = 128, cons = 2, stages = 2;
  int pp = 1;  // two consumer warpgroups take turns to issue their products
  int blocks = 0;
  int grp = 0;
  int bm() const { return 64 * cons; }
  int threads() const { return 128 * (cons + 1); }
  int64_t shared_bytes(int64_t d) const {
    return (bm() + 2 * int64_t{stages} * bn) * d * 2 + 8 * (2 + 3 * int64_t{stages}) + 1024;
  }
  bool operator==(const WgFlash&) const = default;
};

Tunables tunables_of(const WgFlash& t) {
  Tunables u{{"flash", 1}, {"wg", 1}, {"bn", t.bn}, {"cons", t.cons}, {"stages", t.stages}};
  if (t.cons == 2) u["pp"] = t.pp;
  if (t.blocks > 0) u["blocks"] = t.blocks;
  if (t.grp > 0) u["grp"] = t.grp;
  return u;
}
WgFlash tile_of(const Tunables& t) {
  return {t.count("bn") ? t.at("bn") : 128,       t.count("cons") ? t.at("cons") : 2,
          t.count("stages") ? t.at("stages") : 2, t.count("pp") ? t.at("pp") : 0,
          t.count("blocks") ? t.at("blocks") : 0, t.count("grp") ? t.at("grp") : 0};
}

// The items: query tiles times batches.
int64_t items_of(const AttentionDims& a, const WgFlash& t) {
  return (a.sq + t.bm() - 1) / t.bm() * a.batches;
}

// The operands' list of one wgmma's n / 2 accumulators of a thread, d[i / 4][i % 4].
std::pair<std::string, std::string> accumulators(int n) {
  std::string list, outs;
  for (int r = 0; r < n / 2; ++r) {
    list += fmt::format("{}%{}", r ? ", " : "", r);
    outs += fmt::format("{}\"+f\"(d[{}][{}])", r ? ", " : "", r / 4, r % 4);
  }
  return {list, outs};
}

// braze_flash_wg's OPS: qk, S (64 x bn) = or += Q Kᵀ, both from shared memory (K-major);
// pv, O (64 x d) += P V, P's A fragment from registers, V MN-major.
std::string wgmma_ops(int bn, int d, const char* type) {
  const auto [ql, qo] = accumulators(bn);
  const auto [pl, po] = accumulators(d);
  const int qr = bn / 2, pr = d / 2;
  return fmt::format(
      "struct braze_wg_ops {{\n"
      "  static BRAZE_DEV void qk(float (&d)[{0}][4], unsigned long long da, unsigned long long "
      "db, bool acc) {{\n"
      "    asm volatile(\"{{\\n .reg .pred p;\\n setp.ne.b32 p, %{1}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{2}k16.f32.{3}.{3} {{{4}}}, %{5}, %{6}, p, 1, 1, 0, "
      "0;\\n}}\\n\"\n"
      "                 : {7}\n"
      "                 : \"r\"((int)acc), \"l\"(da), \"l\"(db));\n"
      "  }}\n"
      "  static BRAZE_DEV void pv(float (&d)[{8}][4], const unsigned (&a)[4], unsigned long long "
      "db) {{\n"
      "    asm volatile(\"wgmma.mma_async.sync.aligned.m64n{9}k16.f32.{3}.{3} {{{10}}}, {{%{11}, "
      "%{12}, %{13}, %{14}}}, %{15}, 1, 1, 1, 1;\\n\"\n"
      "                 : {16}\n"
      "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(db));\n"
      "  }}\n"
      "}};\n",
      bn / 8, qr, bn, type, ql, qr + 1, qr + 2, qo, d / 8, d, pl, pr, pr + 1, pr + 2, pr + 3,
      pr + 4, po);
}

}  // namespace

std::string wgmma_problem(const AttentionDims& a, const Target& target) {
  if (!target.sm90a || target.emulated) return "wgmma needs sm_90a";
  if (a.dtype != DType::Float16 && a.dtype != DType::BFloat16)
    return "wgmma flash attention takes float16 or bfloat16";
  if (a.d != 64 && a.d != 128)
    return fmt::format("wgmma flash attention: head dim {} (64 or 128)", a.d);
  if (a.batches > 65535) return "wgmma flash attention: more than 65535 batches";
  if ((a.sq + 63) / 64 * a.batches >= (int64_t{1} << 31))
    return "wgmma flash attention: 2^31 query tiles or more";
  const std::pair<const GemmDims*, int> views[] = {{&a.qk, 0}, {&a.qk, 1}, {&a.pv, 1}};
  for (const auto& [d, i] : views) {
    std::string why = gemm_wgmma_operand_problem(*d, i);
    if (!why.empty()) return why;
  }
  return "";
}

namespace {

// Batches (batch x head) whose K and V together fill at most this much of L2 go in one group
// of items (WgFlash::grp). Ordered by query tile alone, the 132 items in flight would read
// every head's K and V at once: at A5 (4, 16, 4096, 128) that is 128 MB through a 50 MB L2,
// and Nsight Compute (H100, 2026-12-07) measured DRAM 75.6% busy and L2 96%, against cuDNN's
// 9.3% and 39% (bench/RESULTS.md). 0 where all batches fit.
constexpr int64_t kL2GroupBytes = int64_t{16} << 20;

int batches_a_group(const AttentionDims& a) {
  const int64_t kv_bytes = 2 * a.sk * a.d * static_cast<int64_t>(dtype_size(a.dtype));
  const int64_t g = std::max<int64_t>(kL2GroupBytes / std::max<int64_t>(kv_bytes, 1), 1);
  return g >= a.batches ? 0 : static_cast<int>(g);
}

}  // namespace

std::vector<Tunables> wgmma_candidates(const AttentionDims& a, const Target& target) {
  if (!wgmma_problem(a, target).empty()) return {};
  // Each consumer thread holds (D + bn) / 2 fp32 accumulators and bn / 4 registers of P in the
  // 232 registers setmaxnreg gives it (no spills up to 176-key tiles at D = 128, 256 at D = 64,
  // by ptxas's report). Three stages where they fit: a stage's V is read a phase after its K.
  // Each a block an SM (one fits: 168 registers a thread) taking items in turn, and the
  // first also a block an item.
  const std::initializer_list<WgFlash> d128 = {{128, 2, 3}, {128, 2, 2}, {176, 2, 2},
                                               {96, 2, 3},  {64, 2, 4},  {128, 2, 2, 0},
                                               {128, 1, 2}, {64, 1, 3}};
  const std::initializer_list<WgFlash> d64 = {{128, 2, 3}, {192, 2, 3},    {256, 2, 2}, {128, 2, 4},
                                              {64, 2, 4},  {128, 2, 3, 0}, {128, 1, 3}, {64, 1, 3}};
  std::vector<Tunables> c;
  for (WgFlash t : a.d == 128 ? d128 : d64) {
    t.blocks = target.num_sms;
    t.grp = batches_a_group(a);
    if (t.shared_bytes(a.d) <= kMaxSharedBytes) c.push_back(tunables_of(t));
  }
  if (!c.empty() && items_of(a, tile_of(c[0])) > target.num_sms) {
    WgFlash t = tile_of(c[0]);
    t.blocks = 0;
    c.push_back(tunables_of(t));
  }
  // The first in smaller groups (the last one short where they do not divide the batches).
  if (!c.empty() && a.batches > 1) {
    WgFlash t = tile_of(c[0]);
    t.grp = static_cast<int>(std::min<int64_t>(t.grp > 0 ? t.grp / 2 : a.batches, a.batches) - 1);
    if (t.grp >= 1) c.push_back(tunables_of(t));
  }
  return c;
}

namespace {

// Key tiles the busiest block takes when `blocks` blocks walk the items in rounds
// (braze_flash_slot: every other round in reverse) in emit_items' order, the batches in groups
// of `group`; ends[qt] the key tiles of query tile qt.
int64_t busiest_block(int64_t batches, const std::vector<int>& ends, int64_t group,
                      int64_t blocks) {
  const int64_t q_tiles = static_cast<int64_t>(ends.size()), items = batches * q_tiles;
  std::vector<int64_t> load(static_cast<size_t>(blocks), 0);
  for (int64_t slot = 0; slot < items; ++slot) {
    const int64_t r = slot / blocks, k = slot % blocks, block = (r & 1) ? blocks - 1 - k : k;
    const int64_t in_g = std::min(group, batches - slot / (group * q_tiles) * group);
    const int64_t qt = q_tiles - 1 - (slot % (group * q_tiles)) / in_g;
    load[static_cast<size_t>(block)] += ends[static_cast<size_t>(qt)];
  }
  return *std::max_element(load.begin(), load.end());
}

// The batches a group of items (emit_items): t.grp where the items weigh the same or each is
// a block's; where a causal mask makes them differ (ends) and blocks take them in rounds, the
// smallest size up to t.grp whose rounds load the busiest block within 1% of the best size's
// (A4 (1, 32, 8192, 128) in groups of 4: the busiest block 855 key tiles where an even share
// is 504; in groups of 1, 520; H100, 2026-12-07: 408 TFLOP/s in groups of 4, 567 tuned).
int64_t group_size(const AttentionDims& a, const WgFlash& t, const std::vector<int>& ends) {
  const int64_t q_tiles = (a.sq + t.bm() - 1) / t.bm(), items = q_tiles * a.batches;
  if (t.grp <= 0 || t.grp >= a.batches || ends.empty() || t.blocks <= 0 || items <= t.blocks ||
      items > (int64_t{1} << 18))
    return t.grp;
  // Sizes 1 to 32 and t.grp itself (at most 33 walks of 2^18 items).
  std::vector<std::pair<int64_t, int64_t>> busiest;  // (size, busiest block's key tiles)
  for (int64_t g = 1; g <= t.grp; g = g < 32 ? g + 1 : std::max<int64_t>(g + 1, t.grp))
    busiest.emplace_back(g, busiest_block(a.batches, ends, g, t.blocks));
  int64_t best = busiest.front().second;
  for (const auto& [g, load] : busiest) best = std::min(best, load);
  for (const auto& [g, load] : busiest)
    if (load * 100 <= best * 101) return g;
  return t.grp;
}

// `b` and the lambda `item`: slot → braze_flash_item, b set to the item's batch. The batches
// go in groups (group_size); within a group the last query tile first (a causal mask's
// longest), the group's batches in turn. Returns the device table of each query tile's key
// tile end (key_tile_ends) where `ends` has one.
std::string emit_items(Emitter& e, const AttentionDims& a, const WgFlash& t, const MaskRead& mr,
                       const std::vector<int>& ends) {
  const int64_t q_tiles = (a.sq + t.bm() - 1) / t.bm();
  const int64_t group = group_size(a, t, ends);
  e.line("long long b = 0;");
  e.open("auto item = [&](int slot) -> braze_flash_item {");
  if (group <= 0 || group >= a.batches) {
    e.line(fmt::format("const int qt = {} - slot / {};", q_tiles - 1, a.batches));
    e.line(fmt::format("b = slot % {};", a.batches));
  } else {
    e.line(fmt::format("const int g = slot / {};", group * q_tiles));
    e.line(fmt::format("const int r = slot - g * {};", group * q_tiles));
    e.line(fmt::format("const int in_g = {} - g * {} < {} ? {} - g * {} : {};", a.batches, group,
                       group, a.batches, group, group));
    e.line(fmt::format("const int qt = {} - r / in_g;", q_tiles - 1));
    e.line(fmt::format("b = (long long)g * {} + r % in_g;", group));
  }
  e.line(fmt::format("const int q0 = qt * {};", t.bm()));
  if (ends.empty()) {
    e.line(fmt::format("return {{q0, {}, 0}};", (a.sk + t.bn - 1) / t.bn));
    e.close(";");
    return "";
  }
  e.line("const int kt_end = braze_key_tile_end[qt];");
  e.line(fmt::format("const int kt_whole = {};", whole_key_tiles(a, mr, t.bn)));
  e.line("return {q0, kt_end, kt_whole < kt_end ? kt_whole : kt_end};");
  e.close(";");
  return key_tile_end_table(ends);
}

// The kernel of a generated body: launch shape, the Q, K and V tensor maps and the text around
// the body.
Kernel wgmma_record(const graph::Graph& g, const fusion::Group& group, const AttentionDims& a,
                    const WgFlash& t, Emitter& e, std::string code) {
  Kernel kern = kernel_record(e, fusion::GroupKind::Attention, group, tunables_of(t));
  kern.block = {static_cast<unsigned>(t.threads()), 1, 1};
  const int64_t items = items_of(a, t);
  kern.grid = {static_cast<unsigned>(t.blocks > 0 ? std::min<int64_t>(items, t.blocks) : items), 1,
               1};
  kern.shared_bytes = static_cast<unsigned>(t.shared_bytes(a.d));
  auto param_of = [&](graph::ValueId v) {
    for (size_t i = 0; i < kern.params.size(); ++i)
      if (kern.params[i].value == v) return i;
    return kern.params.size();
  };
  const OperandView &vq = *a.qk.view[0], &vk = *a.qk.view[1], &vv = *a.pv.view[1];
  kern.tensor_maps.push_back(tma_view_map(vq, param_of(vq.root), a.dtype, a.d, a.sq, 64, t.bm()));
  kern.tensor_maps.push_back(tma_view_map(vk, param_of(vk.root), a.dtype, a.d, a.sk, 64, t.bn));
  kern.tensor_maps.push_back(tma_view_map(vv, param_of(vv.root), a.dtype, a.d, a.sk, 64, t.bn));
  const char* type = a.dtype == DType::Float16 ? "f16" : "bf16";
  code += wgmma_ops(t.bn, static_cast<int>(a.d), type);
  code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({0}, 1) KERNEL_NAME({1}, "
      "const __grid_constant__ braze_tmap braze_tmap_q, const __grid_constant__ braze_tmap "
      "braze_tmap_k, "
      "const __grid_constant__ braze_tmap braze_tmap_v) {{\n"
      "  typedef braze_flash_wg<{2}, {3}, {4}, {5}, {6}, {9}, braze_wg_ops> flash;\n"
      "  static_assert(flash::kSharedBytes <= {7}, \"the launch's shared memory\");\n"
      "  BRAZE_DYNAMIC_SMEM(braze_smem, {7});\n{8}}}\n",
      t.threads(), e.signature(), cuda_storage_type(a.dtype), a.d, t.bn, t.cons, t.stages,
      kern.shared_bytes, e.body(), t.pp && t.cons == 2 ? "true" : "false");
  finish_kernel(g, kern, code,
                kMmaHelpers | kWgmmaHelpers | kAttentionHelpers | kAttentionWgmmaHelpers);
  return kern;
}

}  // namespace

std::optional<Kernel> wgmma_kernel(const graph::Graph& g, const fusion::Group& group,
                                   const AttentionDims& a, const Tunables& tune,
                                   std::string* why_not, bool final_code) {
  const WgFlash t = tile_of(tune);
  if (t.bn % 16 || t.bn < 16 || t.bn > 256 || (t.cons != 1 && t.cons != 2) || t.stages < 2 ||
      t.stages > 4 || t.shared_bytes(a.d) > kMaxSharedBytes) {
    *why_not = fmt::format(
        "wgmma flash attention: {}-key tiles, {} consumer warpgroups, {} stages is not supported",
        t.bn, t.cons, t.stages);
    return std::nullopt;
  }
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  Emitter e(g, [members](graph::NodeId id) { return members.count(id) != 0; });
  const MaskRead mr = mask_read(g, a, final_code);
  auto live_mask = std::make_shared<bool>(false);
  intercept_reads(e, a, mr, live_mask);
  const OperandView &vq = *a.qk.view[0], &vk = *a.qk.view[1], &vv = *a.pv.view[1];
  e.input_param(vq.root);
  e.input_param(vk.root);
  e.input_param(vv.root);
  // Consumer warp w (0 .. 4 cons - 1) holds rows 16 w ..; the producer's warps store nothing.
  e.line("const int warp = (int)threadIdx.x / 32 - 4, lane = (int)threadIdx.x % 32;");
  const std::vector<int> ends = key_tile_ends(g, a, t.bm(), t.bn, mr);
  std::string code = emit_items(e, a, t, mr, ends);
  const bool live = has_live_tiles(g, a, mr, !ends.empty());
  try {
    emit_scores(e, g, a, mr, live_mask, live);
  } catch (const CudaUnsupported& u) {
    *why_not = "the scores' element-wise chain: " + u.why;
    return std::nullopt;
  }
  // The loads of this batch's boxes: (destination, head-dim column, row, barrier).
  auto emit_load = [&](const char* name, const OperandView& v, const char* map) {
    const std::vector<std::string> bc = tma_batch_coords(v);
    e.line(
        fmt::format("auto {} = [&](braze_saddr dst, int c0, int row, braze_saddr bar) {{ "
                    "braze_tma_load_{}d(dst, {}, c0, row, {}, bar); }};",
                    name, 2 + bc.size(), map, fmt::join(bc, ", ")));
  };
  emit_load("load_q", vq, "braze_tmap_q");
  emit_load("load_k", vk, "braze_tmap_k");
  emit_load("load_v", vv, "braze_tmap_v");
  const int64_t items = items_of(a, t);
  e.line("flash::init(braze_smem);");
  e.open("if (threadIdx.x < 128) {");
  e.line(fmt::format("flash::produce(item, {}, load_q, load_k, load_v, braze_smem);", items));
  e.line("return;");
  e.close();
  e.line("flash::consumer_begin();");
  e.line("int tile0 = 0;");
  e.open("for (int round = 0;; ++round) {");
  e.line("const int slot = braze_flash_slot(round);");
  e.line(fmt::format("if (slot >= {}) break;", items));
  e.line("const braze_flash_item it = item(slot);");
  e.line("const int q0 = it.q0;");
  e.line(fmt::format("float o[1][{}][4];", a.d / 8));
  e.line(
      fmt::format("flash::consume<{}, {}, {}>(o, {}, q0, {}, {}, it.kt_end, {}, score, {}, "
                  "round, tile0, braze_smem);",
                  mr.pairs ? "true" : "false", safe_score(g, a, mr) ? "true" : "false",
                  live ? "true" : "false", mask_args(e, a, mr), a.sq, a.sk, dead_literal(a),
                  live_args(a, live, !ends.empty(), t.bn, "it.kt_live")));
  e.line("tile0 += it.kt_end;");
  e.line("const bool mine = true;");
  try {
    emit_output(e, g, a, 1, "q0 + warp * 16 + lane / 4 + r * 8");
  } catch (const CudaUnsupported& u) {
    *why_not = u.why;
    return std::nullopt;
  }
  e.close();  // round

  return wgmma_record(g, group, a, t, e, std::move(code));
}

}  // namespace braze::codegen::flash
