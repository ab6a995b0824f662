// Independent jobs over a few threads: the passes that touch every weight (precision
// rounding, k-major copies) and the importer's reads of external data, which on their own
// thread took most of a warm BERT-base compile.
#pragma once

#include <cstddef>
#include <functional>

namespace braze::graph {

// Calls job(0) … job(n - 1), each once, on up to min(n, hardware threads, 16) threads, and
// returns when all have run; the first exception a job throws is rethrown here (the jobs not
// yet started are skipped).
void parallel_for(size_t n, const std::function<void(size_t)>& job);

}  // namespace braze::graph
