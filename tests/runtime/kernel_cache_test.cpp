// The kernel cache: a second build hits, a changed option misses, a corrupt entry is
// detected and rebuilt. NVRTC runs without a GPU, so this runs on CPU machines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fusion/plan.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/engine.h"
#include "runtime/gpu/engine_file.h"
#include "runtime/gpu/kernel_cache.h"
#include "runtime/reference_executor.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

const char* kModel = R"(<ir_version: 8, opset_import: ["" : 17]>
  g (float[4,6] a, float[6] b) => (float[4,6] y) { t = Add(a, b)  y = Sigmoid(t) })";

gpu::BuildReport build(const fs::path& dir, const std::string& arch) {
  graph::Graph g = test::graph_from_text(kModel);
  graph::passes::run_pipeline(g);
  gpu::EngineOptions o = gpu::default_engine_options(arch);
  o.cache_dir = dir;
  gpu::BuildReport r;
  gpu::Engine::build(g, fusion::plan_unfused(g), o, &r);
  return r;
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("braze_cache_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  return d;
}

TEST(KernelCache, HitMissAndCorruptEntry) {
  fs::path dir = fresh_dir("cache");
  gpu::BuildReport cold = build(dir, "sm_90");
  EXPECT_EQ(cold.compiled, 2u);
  EXPECT_EQ(cold.cache_hits, 0u);
  gpu::BuildReport warm = build(dir, "sm_90");
  EXPECT_EQ(warm.compiled, 0u);
  EXPECT_EQ(warm.cache_hits, 2u);
  gpu::BuildReport other = build(dir, "sm_80");  // the arch is part of the key
  EXPECT_EQ(other.compiled, 2u);
  // Corrupt every entry: truncate one, flip a payload byte of the others.
  bool first = true;
  for (const auto& e : fs::directory_iterator(dir / "kernels")) {
    if (first) {
      fs::resize_file(e.path(), 20);
      first = false;
      continue;
    }
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x5a;
    f.seekp(40);
    f.write(&c, 1);
  }
  gpu::BuildReport rebuilt = build(dir, "sm_90");
  EXPECT_EQ(rebuilt.compiled, 2u);  // both damaged entries were detected and rebuilt
  EXPECT_EQ(build(dir, "sm_90").cache_hits, 2u);
}

TEST(KernelCache, DisabledCacheNeverHits) {
  graph::Graph g = test::graph_from_text(kModel);
  gpu::EngineOptions o = gpu::default_engine_options("sm_90");
  o.use_cache = false;
  gpu::BuildReport r;
  gpu::Engine::build(g, fusion::plan_unfused(g), o, &r);
  EXPECT_EQ(r.cache_hits, 0u);
  EXPECT_EQ(r.compiled, 2u);
}

TEST(EngineFile, RoundTripKeepsGraphKernelsAndWeights) {
  fs::path dir = fresh_dir("engine");
  fs::create_directories(dir);
  graph::Graph g = test::graph_from_text(kModel);
  graph::passes::run_pipeline(g);
  gpu::EngineOptions o = gpu::default_engine_options("sm_90");
  o.cache_dir = dir;
  auto e = gpu::Engine::build(g, fusion::plan_unfused(g), o);
  gpu::save_engine(dir / "m.braze", *e, {"abc", "m.onnx", "0.1.0", "13.0", "sm_90"});
  EXPECT_TRUE(gpu::is_engine_file(dir / "m.braze"));
  gpu::LoadedEngine le = gpu::load_engine(dir / "m.braze");
  EXPECT_EQ(le.info.model_hash, "abc");
  ASSERT_EQ(le.engine->steps().size(), e->steps().size());
  for (size_t i = 0; i < e->steps().size(); ++i) {
    EXPECT_EQ(le.engine->steps()[i].cubin, e->steps()[i].cubin);
    EXPECT_EQ(le.engine->steps()[i].kernel->source, e->steps()[i].kernel->source);
  }
  // The stored graph computes what the original does.
  Tensor a = test::random(DType::Float32, {4, 6}, 3), b = test::random(DType::Float32, {6}, 4);
  EXPECT_TRUE(test::tensors_close(runtime::run_reference(le.engine->graph(), {a, b})[0],
                                  runtime::run_reference(g, {a, b})[0]));
  // A damaged file is a clear error.
  std::string bytes;
  {
    std::ifstream in(dir / "m.braze", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ofstream(dir / "cut.braze", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_THROW(gpu::load_engine(dir / "cut.braze"), UserError);
  std::ofstream(dir / "junk.braze", std::ios::binary) << "BRAZEENG";
  EXPECT_THROW(gpu::load_engine(dir / "junk.braze"), UserError);
}

}  // namespace
}  // namespace braze
