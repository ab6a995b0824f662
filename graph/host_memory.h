// Host memory at hand, checked before a large allocation: a tensor bigger than what the
// machine can give is a clear error naming it, not a std::bad_alloc deep inside a run or the
// kernel's OOM killer once its pages are touched (Linux overcommits, so new[] rarely fails).
#pragma once

#include <cstdint>
#include <string>

namespace braze {

// The least of: MemAvailable + SwapFree (/proc/meminfo), the cgroup's memory.max less its
// memory.current, and RLIMIT_AS less the process's address space. UINT64_MAX where none is known.
uint64_t host_memory_available();

// Allocations from this size on are checked (smaller ones cannot matter and stay cheap).
inline constexpr uint64_t kCheckedHostBytes = uint64_t{64} << 20;

// Throws UserError "`what` needs N GiB of host memory; M GiB is available" when `bytes` (at
// least kCheckedHostBytes) is more than host_memory_available().
void check_host_memory(uint64_t bytes, const std::string& what);

}  // namespace braze
