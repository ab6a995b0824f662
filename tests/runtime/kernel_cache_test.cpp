// The kernel cache: a second build hits, a changed option misses, a corrupt entry is
// detected and rebuilt. NVRTC runs without a GPU, so this runs on CPU machines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "codegen/lowering.h"
#include "codegen/capabilities.h"
#include "fusion/partition.h"
#include "fusion/plan.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/engine.h"
#include "runtime/gpu/engine_file.h"
#include "runtime/gpu/kernel_cache.h"
#include "runtime/reference_executor.h"
#include "tests/conv_cases.h"
#include "tests/depthwise_cases.h"
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
  fs::path d =
      fs::temp_directory_path() / ("braze_cache_test_" + std::to_string(::getpid())) / name;
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

// Repeated layers give identical kernels: each distinct source is compiled once and every
// step running it gets the CUBIN (three Sigmoid steps of one shape, one compile).
TEST(KernelCache, IdenticalKernelsCompileOnce) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[4,6] a) => (float[4,6] y) { b = Sigmoid(a)  c = Sigmoid(b)  d = Sigmoid(c)  y = Relu(d) })");
  gpu::EngineOptions o = gpu::default_engine_options("sm_90");
  o.use_cache = false;
  gpu::BuildReport r;
  auto e = gpu::Engine::build(g, fusion::plan_unfused(g), o, &r);
  ASSERT_EQ(e->steps().size(), 4u);
  EXPECT_EQ(r.distinct, 2u);
  EXPECT_EQ(r.compiled, 2u);
  for (const gpu::Step& s : e->steps()) EXPECT_FALSE(s.cubin.empty()) << s.kernel->name;
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
  // One flipped bit in the last weight's bytes: the checksum catches it.
  std::string flipped = bytes;
  flipped[flipped.size() - 3] ^= 0x10;
  std::ofstream(dir / "flipped.braze", std::ios::binary) << flipped;
  test::expect_user_error([&] { gpu::load_engine(dir / "flipped.braze"); },
                          {"flipped.braze", "checksum mismatch"});
  std::ofstream(dir / "junk.braze", std::ios::binary) << "BRAZEENG";
  EXPECT_THROW(gpu::load_engine(dir / "junk.braze"), UserError);
}

// kModel's unfused engine for sm_90, its kernels cached in `dir`.
std::shared_ptr<gpu::Engine> model_engine(const fs::path& dir) {
  graph::Graph g = test::graph_from_text(kModel);
  graph::passes::run_pipeline(g);
  gpu::EngineOptions o = gpu::default_engine_options("sm_90");
  o.cache_dir = dir;
  return gpu::Engine::build(g, fusion::plan_unfused(g), o);
}

// Engine files are written by pwrite on a disk's file system and through a shared mapping
// on tmpfs: the same bytes either way, and both load.
TEST(EngineFile, DiskAndMemoryFileSystemsGetTheSameBytes) {
  const fs::path shm = "/dev/shm";
  if (!fs::is_directory(shm)) GTEST_SKIP() << "no /dev/shm here";
  fs::path dir = fresh_dir("engine_fs");
  fs::create_directories(dir);
  auto e = model_engine(dir);
  const fs::path in_memory = shm / ("braze_engine_test_" + std::to_string(::getpid()) + ".braze");
  gpu::save_engine(dir / "m.braze", *e, {"abc", "m.onnx", "0.1.0", "13.0", "sm_90"});
  gpu::save_engine(in_memory, *e, {"abc", "m.onnx", "0.1.0", "13.0", "sm_90"});
  auto bytes_of = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string disk = bytes_of(dir / "m.braze"), memory = bytes_of(in_memory);
  EXPECT_GT(disk.size(), 100u);
  EXPECT_EQ(disk, memory);
  EXPECT_EQ(gpu::load_engine(in_memory).engine->steps().size(), e->steps().size());
  fs::remove(in_memory);
}

// An implicit-GEMM convolution's im2col map (its corners, traversal strides, channels and
// pixels a copy) survives the engine file.
// Both convolutions' windows, the stem's narrow ones (8 padded channels a copy, unswizzled)
// among them.
TEST(EngineFile, RoundTripKeepsIm2colMaps) {
  for (const char* name : {"Dilation2AsymmetricPads", "ThreeChannelStem"}) {
    fs::path dir = fresh_dir("engine_im2col");
    fs::create_directories(dir);
    const test::ConvCase* c = nullptr;
    for (const test::ConvCase& x : test::conv_cases())
      if (std::string(x.name) == name) c = &x;
    ASSERT_NE(c, nullptr) << name;
    const graph::Graph g = test::conv_case_graph(*c, DType::Float16);
    gpu::EngineOptions o = gpu::default_engine_options("sm_90a");
    o.cache_dir = dir;
    auto e = gpu::Engine::build(g, codegen::plan_for(g, true, o.target), o);
    gpu::save_engine(dir / "c.braze", *e, {"abc", "c.onnx", "0.1.0", "13.0", "sm_90a"});
    gpu::LoadedEngine le = gpu::load_engine(dir / "c.braze");
    ASSERT_EQ(le.engine->steps().size(), e->steps().size());
    int im2col = 0, unswizzled = 0;
    for (size_t s = 0; s < e->steps().size(); ++s) {
      if (!e->steps()[s].kernel) continue;
      const auto &maps = e->steps()[s].kernel->tensor_maps,
                 &back = le.engine->steps()[s].kernel->tensor_maps;
      ASSERT_EQ(back.size(), maps.size());
      for (size_t i = 0; i < maps.size(); ++i) {
        EXPECT_EQ(back[i].swizzle, maps[i].swizzle);
        if (!maps[i].im2col()) continue;
        ++im2col;
        unswizzled += !maps[i].swizzle;
        EXPECT_TRUE(back[i].im2col());
        EXPECT_EQ(back[i].dims, maps[i].dims);
        EXPECT_EQ(back[i].strides, maps[i].strides);
        EXPECT_EQ(back[i].lower, maps[i].lower);
        EXPECT_EQ(back[i].upper, maps[i].upper);
        EXPECT_EQ(back[i].element_strides, maps[i].element_strides);
        EXPECT_EQ(back[i].channels, maps[i].channels);
        EXPECT_EQ(back[i].pixels, maps[i].pixels);
        EXPECT_TRUE(back[i].box.empty());
      }
    }
    EXPECT_EQ(im2col, 2) << name;  // both convolutions' windows
    EXPECT_EQ(unswizzled, std::string(name) == "ThreeChannelStem" ? 1 : 0) << name;
    fs::remove_all(dir);
  }
}

// A depthwise convolution's kernel names its schedule in the record (Kernel::schedule), which
// the engine file keeps, so that `braze bench ENGINE` reports it as the compile did.
TEST(EngineFile, RoundTripKeepsKernelSchedules) {
  fs::path dir = fresh_dir("engine_schedules");
  fs::create_directories(dir);
  const graph::Graph g = test::depthwise_case_graph(test::depthwise_cases()[0], DType::Float16);
  gpu::EngineOptions o = gpu::default_engine_options("sm_90a");
  o.cache_dir = dir;
  auto e = gpu::Engine::build(g, codegen::plan_for(g, true, o.target), o);
  gpu::save_engine(dir / "d.braze", *e, {"abc", "d.onnx", "0.1.0", "13.0", "sm_90a"});
  gpu::LoadedEngine le = gpu::load_engine(dir / "d.braze");
  ASSERT_EQ(le.engine->steps().size(), e->steps().size());
  int depthwise = 0;
  for (size_t s = 0; s < e->steps().size(); ++s) {
    if (!e->steps()[s].kernel) continue;
    EXPECT_EQ(le.engine->steps()[s].kernel->schedule, e->steps()[s].kernel->schedule);
    depthwise += e->steps()[s].kernel->schedule == "depthwise";
  }
  EXPECT_EQ(depthwise, 1);
  fs::remove_all(dir);
}

TEST(EngineFile, RoundTripKeepsTensorMaps) {
  // A float16 product compiled for sm_90a takes the wgmma schedule and its two TMA maps.
  fs::path dir = fresh_dir("engine_tmaps");
  fs::create_directories(dir);
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[2048,128] a, float16[128,2048] b) => (float16[2048,2048] y) { y = MatMul(a, b) })");
  graph::passes::run_pipeline(g);
  gpu::EngineOptions o = gpu::default_engine_options("sm_90a");
  ASSERT_TRUE(o.target.sm90a);
  o.cache_dir = dir;
  auto e = gpu::Engine::build(g, fusion::plan_fused(g, codegen::kernel_lowerings()), o);
  ASSERT_EQ(e->steps().size(), 1u);
  const codegen::Kernel& k = *e->steps()[0].kernel;
  ASSERT_EQ(k.tensor_maps.size(), 2u);
  gpu::save_engine(dir / "m.braze", *e, {"abc", "m.onnx", "0.1.0", "13.0", "sm_90a"});
  gpu::LoadedEngine le = gpu::load_engine(dir / "m.braze");
  EXPECT_EQ(le.engine->arch().name(), "sm_90a");
  const codegen::Kernel& back = *le.engine->steps()[0].kernel;
  ASSERT_EQ(back.tensor_maps.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.tensor_maps[i].param, k.tensor_maps[i].param);
    EXPECT_EQ(back.tensor_maps[i].dtype, k.tensor_maps[i].dtype);
    EXPECT_EQ(back.tensor_maps[i].dims, k.tensor_maps[i].dims);
    EXPECT_EQ(back.tensor_maps[i].strides, k.tensor_maps[i].strides);
    EXPECT_EQ(back.tensor_maps[i].box, k.tensor_maps[i].box);
    EXPECT_EQ(back.tensor_maps[i].offset_bytes, k.tensor_maps[i].offset_bytes);
  }
  // A = [2048, 128]: 128 contiguous, 2048 rows; B = [128, 2048] read n-contiguous.
  EXPECT_EQ(k.tensor_maps[0].dims, (std::vector<uint64_t>{128, 2048, 1}));
  EXPECT_EQ(k.tensor_maps[1].dims, (std::vector<uint64_t>{2048, 128, 1}));
  EXPECT_EQ(k.tensor_maps[1].strides[0], 4096u);
}

TEST(EngineFile, RoundTripKeepsAttentionSteps) {
  // softmax(Q Kᵀ · scale) V in float16: one attention step, its kind and launch kept.
  fs::path dir = fresh_dir("engine_attention");
  fs::create_directories(dir);
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[1,2,48,64] q, float16[1,2,48,64] k, float16[1,2,48,64] v) => (float16[1,2,48,64] y) {
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  s = MatMul(q, kt)  cf = Constant <value = float {0.125}> ()
      c = CastLike(cf, q)  ss = Mul(s, c)  p = Softmax <axis = -1> (ss)  y = MatMul(p, v) })");
  graph::passes::run_pipeline(g);
  gpu::EngineOptions o = gpu::default_engine_options("sm_90");
  o.cache_dir = dir;
  auto e = gpu::Engine::build(g, codegen::plan_for(g, true, o.target), o);
  ASSERT_EQ(e->steps().size(), 1u);
  ASSERT_EQ(e->steps()[0].group.kind, fusion::GroupKind::Attention);
  gpu::save_engine(dir / "m.braze", *e, {"abc", "m.onnx", "0.1.0", "13.0", "sm_90"});
  gpu::LoadedEngine le = gpu::load_engine(dir / "m.braze");
  ASSERT_EQ(le.engine->steps().size(), 1u);
  const gpu::Step& back = le.engine->steps()[0];
  EXPECT_EQ(back.group.kind, fusion::GroupKind::Attention);
  EXPECT_EQ(back.kernel->kind, fusion::GroupKind::Attention);
  EXPECT_EQ(back.kernel->grid, e->steps()[0].kernel->grid);
  EXPECT_EQ(back.kernel->shared_bytes, e->steps()[0].kernel->shared_bytes);
  EXPECT_EQ(codegen::schedule_name(*back.kernel), "flash");
  // On sm_90a the wgmma kernel, with its three tensor maps.
  gpu::EngineOptions oa = gpu::default_engine_options("sm_90a");
  oa.cache_dir = dir;
  auto ea = gpu::Engine::build(g, codegen::plan_for(g, true, oa.target), oa);
  ASSERT_EQ(ea->steps().size(), 1u);
  gpu::save_engine(dir / "ma.braze", *ea, {"abc", "m.onnx", "0.1.0", "13.0", "sm_90a"});
  gpu::LoadedEngine la = gpu::load_engine(dir / "ma.braze");
  const codegen::Kernel& ka = *la.engine->steps()[0].kernel;
  EXPECT_EQ(codegen::schedule_name(ka), "flash-wgmma");
  ASSERT_EQ(ka.tensor_maps.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ka.tensor_maps[i].dims, ea->steps()[0].kernel->tensor_maps[i].dims);
    EXPECT_EQ(ka.tensor_maps[i].box, ea->steps()[0].kernel->tensor_maps[i].box);
    EXPECT_EQ(ka.tensor_maps[i].param, ea->steps()[0].kernel->tensor_maps[i].param);
  }
}

}  // namespace
}  // namespace braze
