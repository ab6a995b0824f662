// graph::parallel_for: every job once, on no more threads than the process may use.
#include "graph/parallel.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

namespace braze::graph {
namespace {

TEST(ParallelFor, EveryJobOnceOnAtMostTheUsableCores) {
  const unsigned cores = usable_cores();
  ASSERT_GE(cores, 1u);
#ifdef __linux__
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_LE(cores, static_cast<unsigned>(CPU_COUNT(&set)))
      << "the affinity mask bounds the threads";
#endif
  std::vector<int> runs(200, 0);
  std::set<std::thread::id> threads;
  std::mutex m;
  parallel_for(runs.size(), [&](size_t i) {
    std::lock_guard<std::mutex> lock(m);
    ++runs[i];
    threads.insert(std::this_thread::get_id());
  });
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i], 1) << "job " << i;
  EXPECT_LE(threads.size(), std::min(16u, cores));
  threads.clear();
  parallel_for(
      runs.size(),
      [&](size_t) {
        std::lock_guard<std::mutex> lock(m);
        threads.insert(std::this_thread::get_id());
      },
      1);
  EXPECT_EQ(threads.size(), 1u) << "max_threads 1: the caller's thread alone";
}

TEST(ParallelFor, TheFirstExceptionIsRethrown) {
  EXPECT_THROW(parallel_for(50,
                            [](size_t i) {
                              if (i == 7) throw std::runtime_error("job 7");
                            }),
               std::runtime_error);
}

}  // namespace
}  // namespace braze::graph
