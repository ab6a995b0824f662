// The autotuner on the GPU with its persistent cache (runtime/gpu/autotune.h): a second build
// times nothing and picks the same kernels; an entry whose tunables are not among the
// kernel's candidates (another version's search space, a hand edit) is timed again and
// replaced. Skips without a GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<gpu::Engine> tuned_build(const graph::Graph& g, const fs::path& cache,
                                         gpu::BuildReport* r) {
  gpu::EngineOptions opts = gpu::default_engine_options();
  opts.fuse = true;
  opts.tune = true;
  opts.tuning_cache = cache;
  return gpu::Engine::build(g, fusion::plan_fused(g, codegen::kernel_lowerings()), opts, r);
}

TEST(GpuTuning, CacheHitsTimeNothingAndStaleEntriesAreRetimed) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  // A pointwise group and a softmax: two kernels with search spaces.
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[512,1024] x, float[1024] b) => (float[512,1024] y, float[512,1024] s) {
      t = Add(x, b)  y = Relu(t)  s = Softmax <axis = -1> (x) })");
  graph::passes::run_pipeline(g);
  fs::path cache = fs::temp_directory_path() / fmt::format("braze_gpu_tuning_{}.json", ::getpid());
  fs::remove(cache);

  gpu::BuildReport first, second, third;
  std::shared_ptr<gpu::Engine> a = tuned_build(g, cache, &first);
  ASSERT_GE(first.tuned, 2u);
  EXPECT_EQ(first.tuned_cached, 0u);
  std::shared_ptr<gpu::Engine> b = tuned_build(g, cache, &second);
  EXPECT_EQ(second.tuned, 0u);
  EXPECT_EQ(second.tuned_cached, first.tuned);
  ASSERT_EQ(a->steps().size(), b->steps().size());
  for (size_t i = 0; i < a->steps().size(); ++i) {
    ASSERT_EQ(a->steps()[i].kernel.has_value(), b->steps()[i].kernel.has_value());
    if (a->steps()[i].kernel) {
      EXPECT_EQ(a->steps()[i].kernel->source, b->steps()[i].kernel->source);
    }
  }

  // Every entry's tunables replaced by ones no schedule has.
  nlohmann::json j;
  std::ifstream(cache) >> j;
  for (auto& [key, val] : j.at("kernels").items()) val["tunables"] = {{"no_such_tunable", 3}};
  std::ofstream(cache) << j.dump();
  tuned_build(g, cache, &third);
  EXPECT_EQ(third.tuned, first.tuned);
  EXPECT_EQ(third.tuned_cached, 0u);
  std::ifstream(cache) >> j;
  for (auto& [key, val] : j.at("kernels").items())
    EXPECT_FALSE(val.at("tunables").contains("no_such_tunable")) << key;
  fs::remove(cache);
}

}  // namespace
}  // namespace braze
