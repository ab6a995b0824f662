#include "runtime/gpu/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace braze::gpu {

namespace {
size_t align_up(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }
}  // namespace

MemoryPlan plan_memory(const std::vector<LiveRange>& ranges) {
  MemoryPlan p;
  p.offsets.assign(ranges.size(), 0);
  std::vector<size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ranges[a].bytes > ranges[b].bytes; });
  struct Placed {
    size_t begin, end;
    int first, last;
  };
  std::vector<Placed> placed;
  for (size_t i : order) {
    const LiveRange& r = ranges[i];
    size_t size = align_up(std::max<size_t>(r.bytes, 1));
    p.total_bytes += r.bytes;
    // Address ranges of values alive at the same time, sorted; take the first gap that fits.
    std::vector<std::pair<size_t, size_t>> busy;
    for (const Placed& q : placed)
      if (q.first <= r.last && r.first <= q.last) busy.emplace_back(q.begin, q.end);
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + size <= b) break;
      offset = std::max(offset, e);
    }
    p.offsets[i] = offset;
    placed.push_back({offset, offset + size, r.first, r.last});
    p.arena_bytes = std::max(p.arena_bytes, offset + size);
  }
  return p;
}

}  // namespace braze::gpu
