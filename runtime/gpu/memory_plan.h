// The memory plan: every intermediate (and graph input and output) gets an offset in one
// arena, from its live interval over the launch sequence. Values whose intervals overlap
// never share bytes; the rest may. Greedy: largest first, each at the lowest offset that
// clears every placed value it overlaps in time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace braze::gpu {

struct LiveRange {
  int32_t value;  // an id the caller chooses (a ValueId)
  size_t bytes;
  int first;  // first step that writes or reads it
  int last;   // last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // parallel to the ranges given
  size_t arena_bytes = 0;       // the arena's size
  size_t total_bytes = 0;       // the sum of all sizes (what no reuse would need)
};

inline constexpr size_t kArenaAlignment = 256;

MemoryPlan plan_memory(const std::vector<LiveRange>& ranges);

}  // namespace braze::gpu
