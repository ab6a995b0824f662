// The reduction schedule's search space: threads per row, rows a block, rows held in
// registers, staged in shared memory or streamed, vector width, split rows (clusters), and
// the heuristic default among them. The kernel itself is reduction_kernel.cpp.
#include <braze/error.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "codegen/lowering.h"
#include "codegen/row_tile.h"
#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "codegen/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

std::vector<Tunables> reduction_candidates(const graph::Graph& g, const fusion::Group& group) {
  for (graph::NodeId id : group.nodes) {
    const graph::Node& n = g.node(id);
    if (!lowering(n).row) continue;
    CudaRowInputs ins = cuda_row_inputs(g, n);
    std::optional<CudaRowProgram> p = lowering(n).row(n, ins);
    if (!p || p->passes.empty()) return {};
    Shape x = p->x_view.empty() ? ins.shapes[0] : p->x_view;
    int64_t len = 1;
    for (int64_t a : p->axes) len *= x.at(static_cast<size_t>(a));
    // Vectors only along a single innermost reduced axis, whole vectors per row, of at most
    // 16 bytes of the widest element the group reads or writes along its rows (a float16
    // row cast to float32 inside the group still loads 8 halves at a time).
    int64_t staged = 0;
    size_t widest = 0;
    if (p->x_view.empty()) {
      for (graph::ValueId v : staged_inputs(g, group, ins.shapes[0])) {
        staged += len * dtype_size(g.value(v).dtype);
        widest = std::max(widest, dtype_size(g.value(v).dtype));
      }
      for (graph::ValueId o : group.outputs)
        if (g.value(o).shape == ins.shapes[0])
          widest = std::max(widest, dtype_size(g.value(o).dtype));
    }
    if (widest == 0) widest = dtype_size(ins.dtypes[0]);
    int vec = static_cast<int>(std::min<size_t>(16 / widest, 8));
    bool innermost = p->axes.size() == 1 && p->axes[0] == static_cast<int64_t>(x.size()) - 1;
    while (vec > 1 && (!innermost || len % vec != 0)) vec /= 2;
    int64_t rows = len > 0 ? checked_numel(x) / len : 0;
    return reduction_candidates_for(len, vec, staged, rows);
  }
  return {};
}

// The group inputs a row staged in shared memory holds: those read element by element
// along the rows (input 0's shape), not constants.
std::vector<graph::ValueId> staged_inputs(const graph::Graph& g, const fusion::Group& group,
                                          const Shape& xshape) {
  std::vector<graph::ValueId> out;
  for (graph::ValueId v : group.inputs) {
    const graph::Value& val = g.value(v);
    if (!val.constant && val.has_shape && val.shape == xshape && dtype_size(val.dtype) > 0)
      out.push_back(v);
  }
  return out;
}

// The search space for rows of `len` elements read `vec` at a time, `staged_bytes` of group
// inputs a row: threads per row (a warp taking one or several rows a block, or a block of
// up to 1024); rows held in registers (cache 1, at most 32 elements a thread), staged in
// shared memory (cache 2, when a block's rows fit in 96 KB, so two blocks share an SM) or
// streamed (cache 0); vector width. Heuristic default first: the fewest threads that cache
// at most 16 elements each, else a 512-thread block staging the row, else 1024 threads
// caching up to 32, else streaming. (On bench/run_bench.py's W3, rows of 32000 halves, staging beat
// registers: 1024 threads holding 32 each need 63 registers, so one block an SM, and its load,
// reduce and store phases do not overlap; three staged blocks an SM do. Two row buffers a block,
// the next row's copies in flight during this row's passes, measured slower still: 149 us.)
std::vector<Tunables> reduction_candidates_for(int64_t len, int vec, int64_t staged_bytes,
                                               int64_t rows) {
  using Hold = RowTile::Hold;
  auto per = [&](int tpr, int v) { return (len / v + tpr - 1) / tpr * v; };  // elements a thread
  std::vector<RowTile> c;
  auto add = [&](int tpr, int rpb, Hold hold, int v, int split = 1) {
    const RowTile t{tpr, rpb, hold, v, split};
    if (std::find(c.begin(), c.end(), t) == c.end()) c.push_back(t);
  };
  constexpr int64_t kStageLimit = 96 * 1024;
  const bool stageable = staged_bytes > 0 && staged_bytes <= kStageLimit;
  // Fewer rows than SMs, and long ones: clusters of `split` blocks share a row (sm_90).
  const int64_t sms = Target{}.num_sms;
  if (rows > 0 && rows < sms && len / vec >= 4096) {
    auto mode = [&](int split, int tpr) {
      return per(tpr * split, vec) <= 32                               ? Hold::Registers
             : staged_bytes > 0 && staged_bytes / split <= kStageLimit ? Hold::Shared
                                                                       : Hold::Stream;
    };
    int want = 2;
    while (want < 8 && want * rows < sms) want *= 2;
    add(512, 1, mode(want, 512), vec, want);
    for (int split : {2, 4, 8})
      for (int tpr : {512, 1024}) {
        add(tpr, 1, mode(split, tpr), vec, split);
        add(tpr, 1, Hold::Stream, vec, split);
      }
  }
  int best = 32;
  while (best < 1024 && per(best, vec) > 16) best *= 2;
  if (per(best, vec) <= 16)
    add(best, best == 32 ? 4 : 1, Hold::Registers, vec);
  else if (stageable)
    add(512, 1, Hold::Shared, vec);  // W3 on an H200: 136 us, in registers (1024 x 32) 208 us
  else if (per(1024, vec) <= 32)
    add(1024, 1, Hold::Registers, vec);
  else
    add(512, 1, Hold::Stream, vec);
  if (stageable) {
    for (int tpr : {128, 256, 512, 1024}) add(tpr, 1, Hold::Shared, vec);
    if (staged_bytes * 4 <= kStageLimit) add(32, 4, Hold::Shared, vec);
    add(128, 1, Hold::Shared, 1);
  }
  for (int v : {vec, 1})
    for (int tpr = 32; tpr <= 1024; tpr *= 2)
      for (Hold hold : {Hold::Registers, Hold::Stream}) {
        if (hold == Hold::Registers && per(tpr, v) > 32) continue;
        if (tpr == 32)
          for (int rpb : {1, 4, 8}) add(32, rpb, hold, v);
        else
          add(tpr, 1, hold, v);
      }
  std::vector<Tunables> out;
  for (const RowTile& t : c) out.push_back(tunables_of(t));
  return out;
}

RowTile row_tile_of(const Tunables& t) {
  RowTile r;
  r.tpr = t.at("tpr");
  r.rpb = t.at("rpb");
  r.hold = static_cast<RowTile::Hold>(t.at("cache"));
  r.vec = t.count("vec") ? t.at("vec") : 1;
  r.split = t.count("split") ? t.at("split") : 1;
  return r;
}

Tunables tunables_of(const RowTile& t) {
  Tunables u{{"tpr", t.tpr}, {"rpb", t.rpb}, {"cache", static_cast<int>(t.hold)}, {"vec", t.vec}};
  if (t.split != 1) u["split"] = t.split;
  return u;
}

}  // namespace braze::codegen
