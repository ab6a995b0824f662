#include "graph/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

namespace braze::graph {

unsigned usable_cores() {
  static const unsigned cores = [] {
    unsigned c = std::max(1u, std::thread::hardware_concurrency());
#ifdef __linux__
    cpu_set_t set;  // the CPUs this process may run on (taskset, a container's cpuset)
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
      c = static_cast<unsigned>(CPU_COUNT(&set));
#endif
    if (const char* env = std::getenv("BRAZE_THREADS"); env && *env) {
      char* end = nullptr;
      const unsigned long v = std::strtoul(env, &end, 10);
      if (end && *end == '\0' && v > 0) c = static_cast<unsigned>(std::min<unsigned long>(v, 1024));
    }
    return c;
  }();
  return cores;
}

void parallel_for(size_t n, const std::function<void(size_t)>& job, unsigned max_threads) {
  const unsigned cores = usable_cores();
  const size_t threads = std::min<size_t>(n, max_threads ? std::min(max_threads, cores) : cores);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) job(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr failure;
  std::mutex m;
  auto worker = [&] {
    for (size_t i; !failed && (i = next++) < n;) {
      try {
        job(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!failure) failure = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace braze::graph
