// The pointwise schedule. Each thread computes `vec` consecutive elements of an output per
// step (16-byte vector loads and stores wherever an input is read along the innermost
// dimension, a scalar path otherwise), `unroll` steps apart so several loads are in flight,
// over a grid sized to fill the device and striding over the rest. Element values come from
// the emitter, which inlines the group's element-wise ops and turns its injective ops into
// index arithmetic on the loads; broadcast operands are loaded once per vector. Index
// arithmetic is 32-bit when the output has under 2^31 elements.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "codegen/lowering.h"
#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "codegen/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

namespace {

// The widest vector (up to 16 bytes of the narrowest element, at most 8 lanes) that divides
// the innermost dimension of every output of `shape`.
int default_vec(const graph::Graph& g, const fusion::Group& group, const Shape& shape) {
  size_t narrowest = 8;
  for (graph::ValueId v : group.inputs)
    narrowest = std::min(narrowest, dtype_size(g.value(v).dtype));
  for (graph::ValueId v : group.outputs)
    narrowest = std::min(narrowest, dtype_size(g.value(v).dtype));
  int vec = static_cast<int>(std::min<size_t>(16 / narrowest, 8));
  int64_t last = shape.empty() ? 1 : shape.back();
  while (vec > 1 && last % vec != 0) vec /= 2;
  return vec;
}

// The schedule's choices (as Tunables: vec, threads, unroll, all_blocks).
struct PointwiseTile {
  int vec = 1;              // consecutive elements a thread computes a step (narrowed per shape)
  int threads = 256;        // a block
  int unroll = 1;           // steps in flight, `threads` slots apart
  bool all_blocks = false;  // a block per chunk of work, not a grid that fills the device
  bool operator==(const PointwiseTile& o) const {
    return vec == o.vec && threads == o.threads && unroll == o.unroll && all_blocks == o.all_blocks;
  }
};

PointwiseTile tile_of(const Tunables& t) {
  return {t.at("vec"), t.at("threads"), t.at("unroll"),
          t.count("all_blocks") != 0 && t.at("all_blocks") != 0};
}

Tunables tunables_of(const PointwiseTile& t) {
  return {
      {"vec", t.vec}, {"threads", t.threads}, {"unroll", t.unroll}, {"all_blocks", t.all_blocks}};
}

}  // namespace

std::vector<Tunables> pointwise_candidates(const graph::Graph& g, const fusion::Group& group) {
  Shape shape = g.value(group.outputs.at(0)).shape;
  int vec = default_vec(g, group, shape);
  std::vector<PointwiseTile> c;
  for (int v : {vec, 1})
    for (int t : {256, 128, 512})
      for (int u : {2, 1, 4})
        for (bool all :
             {false, true}) {  // a grid sized to the device (striding), or a block per chunk
          const PointwiseTile tile{v, t, u, all};
          if (std::find(c.begin(), c.end(), tile) == c.end()) c.push_back(tile);
        }
  std::vector<Tunables> out;
  for (const PointwiseTile& t : c) out.push_back(tunables_of(t));
  return out;
}

namespace {

// One output's `vec` lanes at `coords` (the lane-0 innermost coordinate `lane_var`), stored at
// flat index `i`: one store, or a vector of them packed.
void store_output(Emitter& e, const graph::Graph& g, graph::ValueId o,
                  const std::vector<std::string>& coords, const std::string& lane_var,
                  const std::string& i, int vec) {
  const graph::Value& v = g.value(o);
  std::string ct = cuda_compute_type(v.dtype), st = cuda_storage_type(v.dtype);
  std::vector<std::string> lanes;
  for (int k = 0; k < vec; ++k) {
    std::vector<std::string> ck = coords;
    if (!ck.empty()) ck.back() = Emitter::lane_expr(lane_var, k);
    lanes.push_back(e.value_at(o, ck));
  }
  std::string out = e.output_param(o);
  if (vec == 1) {
    e.line(fmt::format("braze_store({}, {}, ({}){});", out, i, ct, lanes[0]));
    return;
  }
  std::string pk = e.fresh("pk");
  e.line(fmt::format("braze_vec<{}, {}> {};", st, vec, pk));
  for (int k = 0; k < vec; ++k)
    e.line(
        fmt::format("{}.v[{}] = braze_pack(braze_tag<{}>{{}}, ({}){});", pk, k, st, ct, lanes[k]));
  e.line(fmt::format("braze_vstore<{}>({}, {}, {});", vec, out, i, pk));
}

// Output pixels a window op's loop takes as one patch: th rows of tw, in the order of a
// [lead…, H / th, W / tw, th, tw, C] view of its [lead…, H, W, C] output, so that a block's
// consecutive slots cover a patch and the rows its windows share are read through its L1 (a
// row of pixels a block, a 3x3 window's other two rows come from L2 for every output). Where
// every window op of the group slides by 1 over 64 channels or more: on the H100 (2026-12-06,
// MobileNetV2 b32 fp16, kernel by kernel against row-major in the same call) the patches took
// 41.5 us for the 56 x 56 x 144 depthwise 3x3 (48.9 before), 18.1 for 28 x 28 x 192 (20.0),
// 11.9 for 14 x 14 x 384 (12.2), but 43.9 for 112 x 112 x 32 (37.5) and 1-2 us more on two of
// the four stride-2 ones. {1, 1}: row-major.
struct Patch {
  int64_t th = 1, tw = 1;
};

bool slides_by_one(const graph::Node& n) {
  if (!n.has_attr("strides")) return true;
  for (int64_t s : n.attr_ints("strides"))
    if (s != 1) return false;
  return true;
}

Patch window_patch(const graph::Graph& g, const fusion::Group& group, const Shape& shape) {
  bool windows = false;
  for (graph::NodeId id : group.nodes) {
    const graph::Node& n = g.node(id);
    if (!lowering(n).lanes) continue;
    if (!slides_by_one(n)) return {};
    windows = true;
  }
  if (!windows || shape.size() < 3 || shape.back() < 64) return {};
  const int64_t h = shape[shape.size() - 3], w = shape[shape.size() - 2];
  Patch p;
  for (int64_t th : {4, 2})
    if (h % th == 0 && h > th) {
      p.th = th;
      break;
    }
  for (int64_t tw : {8, 7, 4})
    if (w % tw == 0 && w >= tw) {
      p.tw = tw;
      break;
    }
  return p.th > 1 && p.tw > 1 ? p : Patch{};
}

// The coordinates of element `i` (32-bit) of `shape` walked patch by patch; `flat` receives
// its row-major offset.
std::vector<std::string> unravel_patches(Emitter& e, const std::string& i, const Shape& shape,
                                         const Patch& p, std::string* flat) {
  const size_t r = shape.size();
  const int64_t c = shape[r - 1], w = shape[r - 2], h = shape[r - 3];
  const std::string u = e.fresh("u");
  e.line(fmt::format("const unsigned {} = (unsigned){};", u, i));
  auto let = [&](const std::string& expr) { return e.let("unsigned", expr); };
  const std::string px = let(fmt::format("{} / {}u", u, c));
  const std::string rest = let(fmt::format("{} / {}u", px, p.th * p.tw));
  const std::string wt = let(fmt::format("{} % {}u", rest, w / p.tw));
  const std::string rows = let(fmt::format("{} / {}u", rest, w / p.tw));
  const std::string lead = let(fmt::format("{} / {}u", rows, h / p.th));
  std::vector<std::string> coords;
  if (r > 3) {
    const Shape lead_shape(shape.begin(), shape.end() - 3);
    for (std::string& lc : e.unravel32(lead, lead_shape)) coords.push_back(lc);
  }
  auto coord = [&](const std::string& expr) {
    std::string name = e.fresh("c");
    e.line(fmt::format("const long long {} = (long long)({});", name, expr));
    coords.push_back(name);
  };
  coord(fmt::format("({} % {}u) * {}u + ({} / {}u) % {}u", rows, h / p.th, p.th, px, p.tw, p.th));
  coord(fmt::format("{} * {}u + {} % {}u", wt, p.tw, px, p.tw));
  coord(fmt::format("{} % {}u", u, c));
  *flat =
      e.let("long long", fmt::format("(long long)((({} * {}u + (unsigned){}) * {}u + "
                                     "(unsigned){}) * {}u + (unsigned){})",
                                     lead, h, coords[r - 3], w, coords[r - 2], c, coords[r - 1]));
  return coords;
}

// The loop computing the outputs of one shape (`loop`); returns its slots (vectors) in all.
int64_t emit_output_loop(Emitter& e, const graph::Graph& g, const std::vector<graph::ValueId>& loop,
                         const PointwiseTile& t, const Patch& patch) {
  const Shape& shape = g.value(loop[0]).shape;
  const int64_t n = checked_numel(shape);
  if (n == 0) return 0;
  int vec = t.vec;
  while (vec > 1 && (shape.empty() || shape.back() % vec != 0)) vec /= 2;
  const int64_t slots = n / vec;
  const bool index32 = n < (int64_t{1} << 31);
  const bool patches = index32 && patch.th > 1;
  // Steps of `unroll` slots `threads` apart: their loads are independent and in flight
  // together.
  // blockDim rather than the constant, so the CPU emulator may run a block as one thread.
  e.open(
      fmt::format("for (long long base = (long long)blockIdx.x * blockDim.x * {0} + threadIdx.x; "
                  "base < {1}LL; "
                  "base += (long long)gridDim.x * blockDim.x * {0}) {{",
                  t.unroll, slots));
  for (int u = 0; u < t.unroll; ++u) {
    e.open(u == 0 ? std::string("{ const long long s = base;")
                  : fmt::format("{{ const long long s = base + {}LL * blockDim.x;", u));
    e.open(fmt::format("if (s < {}LL) {{", slots));
    e.push_scope();
    std::string i = e.let("long long", vec == 1 ? "s" : fmt::format("s * {}LL", vec));
    std::vector<std::string> coords = patches   ? unravel_patches(e, i, shape, patch, &i)
                                      : index32 ? e.unravel32(i, shape)
                                                : e.unravel(i, shape);
    std::string lane_var = coords.empty() ? "0LL" : coords.back();
    if (vec > 1) e.set_lanes(lane_var, vec);
    for (graph::ValueId o : loop) store_output(e, g, o, coords, lane_var, i, vec);
    e.set_lanes("", 1);
    e.pop_scope();
    e.close();
    e.close();
  }
  e.close();
  e.clear_memo();
  return slots;
}

}  // namespace

std::optional<Kernel> pointwise_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const Target& target, std::string* why_not,
                                       const Tunables* tune) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  for (graph::NodeId id : group.nodes) {
    const graph::Node& n = g.node(id);
    if (!lowering(n).expr && !lowering(n).index) {
      *why_not = fmt::format("{} has no CUDA expression or index map", n.describe());
      return std::nullopt;
    }
  }
  const PointwiseTile t = tile_of(tune ? *tune : pointwise_candidates(g, group).front());
  const unsigned threads = static_cast<unsigned>(t.threads);
  Emitter e(g, [&](graph::NodeId n) { return members.count(n) != 0; });
  // Outputs of one shape share a loop, so what they have in common is computed once.
  std::vector<std::vector<graph::ValueId>> loops;
  for (graph::ValueId o : group.outputs) {
    auto it = std::find_if(loops.begin(), loops.end(),
                           [&](const auto& l) { return g.value(l[0]).shape == g.value(o).shape; });
    if (it == loops.end())
      loops.push_back({o});
    else
      it->push_back(o);
  }
  int64_t max_slots = 0;
  try {
    for (const auto& loop : loops) {
      const Patch patch = window_patch(g, group, g.value(loop[0]).shape);
      max_slots = std::max(max_slots, emit_output_loop(e, g, loop, t, patch));
    }
  } catch (const CudaUnsupported& un) {
    *why_not = un.why;
    return std::nullopt;
  }
  // Outputs of zero size still get a parameter so the argument list stays regular.
  for (graph::ValueId o : group.outputs) e.output_param(o);
  Kernel k = kernel_record(e, fusion::GroupKind::Pointwise, group, tunables_of(t));
  for (graph::NodeId id : e.lane_nodes())
    if (const char* s = lowering(g.node(id)).lanes_schedule) k.schedule = s;
  k.block = {threads, 1, 1};
  // Enough blocks to fill every SM (2048 threads each), never more than the work needs.
  int64_t needed = (max_slots + int64_t{threads} * t.unroll - 1) / (int64_t{threads} * t.unroll);
  int64_t full = t.all_blocks ? int64_t{2147483647} : int64_t{target.num_sms} * (2048 / threads);
  k.grid = {static_cast<unsigned>(std::clamp<int64_t>(needed, 1, full)), 1, 1};
  k.empty_launch = max_slots == 0;
  std::string code =
      fmt::format("extern \"C\" __global__ void __launch_bounds__({}) KERNEL_NAME({}) {{\n{}}}\n",
                  threads, e.signature(), e.body());
  finish_kernel(g, k, code, kNoHelpers);
  return k;
}

}  // namespace braze::codegen
