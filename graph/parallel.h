// Independent jobs over a few threads: the passes that touch every weight (precision
// rounding, k-major copies), the importer's reads of external data (on one thread they took
// most of a warm BERT-base compile), the engine's NVRTC compiles and the emulator's builds.
#pragma once

#include <cstddef>
#include <functional>

namespace braze::graph {

// The CPUs this process may use: its affinity mask's (taskset, a container's cpuset), at
// most $BRAZE_THREADS where that is set to a positive number.
unsigned usable_cores();

// Calls job(0) … job(n - 1), each once, on up to min(n, usable_cores(), max_threads) threads
// (max_threads 0: no cap of its own), and returns when all have run; the first exception a
// job throws is rethrown here (the jobs not yet started are skipped). The weight passes stop
// at 16 threads, where memory bandwidth does; NVRTC and the emulator's g++ take every core.
void parallel_for(size_t n, const std::function<void(size_t)>& job, unsigned max_threads = 16);

}  // namespace braze::graph
