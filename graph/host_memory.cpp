#include "graph/host_memory.h"

#include <braze/error.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace braze {

namespace {

constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();

// MemAvailable + SwapFree from /proc/meminfo (kB lines), kUnknown without it.
uint64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  if (!in) return kUnknown;
  uint64_t available = 0, swap = 0;
  bool seen = false;
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:")
      available = kb * 1024, seen = true;
    else if (key == "SwapFree:")
      swap = kb * 1024;
  }
  return seen ? available + swap : kUnknown;
}

uint64_t read_number(const char* path) {
  std::ifstream in(path);
  uint64_t v = 0;
  return in >> v ? v : kUnknown;  // "max" (no limit) does not parse
}

// The page cache the cgroup holds ("file" in memory.stat): counted in memory.current, but
// given back under pressure.
uint64_t cgroup_page_cache() {
  std::ifstream in("/sys/fs/cgroup/memory.stat");
  std::string key;
  uint64_t v = 0;
  while (in >> key >> v)
    if (key == "file") return v;
  return 0;
}

// cgroup v2's limit less what the group uses now, its page cache not counted.
uint64_t cgroup_available() {
  const uint64_t limit = read_number("/sys/fs/cgroup/memory.max");
  const uint64_t current = read_number("/sys/fs/cgroup/memory.current");
  if (limit == kUnknown || current == kUnknown) return kUnknown;
  const uint64_t used = current - std::min(current, cgroup_page_cache());
  return limit > used ? limit - used : 0;
}

// RLIMIT_AS less the address space mapped now (the first field of /proc/self/statm, in pages).
uint64_t address_space_available() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kUnknown;
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  if (!(statm >> pages)) return kUnknown;
  const uint64_t mapped = pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return rl.rlim_cur > mapped ? rl.rlim_cur - mapped : 0;
}

}  // namespace

uint64_t host_memory_available() {
  return std::min({meminfo_available(), cgroup_available(), address_space_available()});
}

void check_host_memory(uint64_t bytes, const std::string& what) {
  if (bytes < kCheckedHostBytes) return;
  const uint64_t available = host_memory_available();
  if (bytes <= available) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  throw UserError(fmt::format("{} needs {:.2f} GiB of host memory; {:.2f} GiB is available", what,
                              static_cast<double>(bytes) / kGiB,
                              static_cast<double>(available) / kGiB));
}

}  // namespace braze
