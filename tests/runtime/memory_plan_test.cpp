// The arena planner (runtime/gpu/memory_plan.h): values alive at the same time never share
// bytes, values that are not may, offsets are aligned, and the arena holds every value.
#include <gtest/gtest.h>

#include <random>

#include "runtime/gpu/memory_plan.h"

namespace braze {
namespace {

using gpu::LiveRange;

bool overlap_in_time(const LiveRange& a, const LiveRange& b) {
  return a.first <= b.last && b.first <= a.last;
}

void expect_valid(const std::vector<LiveRange>& r, const gpu::MemoryPlan& p) {
  ASSERT_EQ(p.offsets.size(), r.size());
  size_t total = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    total += r[i].bytes;
    EXPECT_EQ(p.offsets[i] % gpu::kArenaAlignment, 0u) << "value " << i;
    EXPECT_LE(p.offsets[i] + r[i].bytes, p.arena_bytes) << "value " << i;
    for (size_t j = i + 1; j < r.size(); ++j) {
      if (!overlap_in_time(r[i], r[j])) continue;
      const bool apart =
          p.offsets[i] + r[i].bytes <= p.offsets[j] || p.offsets[j] + r[j].bytes <= p.offsets[i];
      EXPECT_TRUE(apart) << "values " << i << " and " << j << " are alive together and share bytes";
    }
  }
  EXPECT_EQ(p.total_bytes, total);
}

TEST(MemoryPlan, ValuesAliveApartShareAndValuesAliveTogetherDoNot) {
  // a (steps 0-1) and c (steps 2-3) never meet: c reuses a's bytes; b lives across both.
  const std::vector<LiveRange> r = {{0, 1000, 0, 1}, {1, 500, 0, 3}, {2, 1000, 2, 3}};
  const gpu::MemoryPlan p = gpu::plan_memory(r);
  expect_valid(r, p);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
  EXPECT_EQ(p.arena_bytes, 1024u + 512u);  // both rounded up to the 256-byte alignment
  EXPECT_EQ(p.total_bytes, 2500u);
}

TEST(MemoryPlan, EmptyAndZeroSizedValuesTakeAlignedSlots) {
  EXPECT_EQ(gpu::plan_memory({}).arena_bytes, 0u);
  const std::vector<LiveRange> r = {{0, 0, 0, 0}, {1, 0, 0, 0}};
  const gpu::MemoryPlan p = gpu::plan_memory(r);
  expect_valid(r, p);
  EXPECT_NE(p.offsets[0], p.offsets[1]);  // a zero-byte value still has an address of its own
}

TEST(MemoryPlan, RandomLiveRangesNeverCollide) {
  std::mt19937 rng(20261204);
  for (int round = 0; round < 20; ++round) {
    std::vector<LiveRange> r;
    for (int v = 0; v < 200; ++v) {
      const int first = static_cast<int>(rng() % 100);
      r.push_back({v, 1 + rng() % 100000, first, first + static_cast<int>(rng() % 20)});
    }
    const gpu::MemoryPlan p = gpu::plan_memory(r);
    expect_valid(r, p);
    EXPECT_LT(p.arena_bytes, p.total_bytes + r.size() * gpu::kArenaAlignment)
        << "no worse than no reuse";
  }
}

}  // namespace
}  // namespace braze
