// Every kernel generated for the ONNX node tests compiles with NVRTC for sm_90 — no GPU
// needed. (The GPU conformance run checks what they compute; the emulator checks it on CPU.)
#include <gtest/gtest.h>

#include <braze/error.h>

#include <filesystem>

#include "fusion/plan.h"
#include "runtime/conformance.h"
#include "runtime/gpu/engine.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

TEST(ConformanceKernels, AllCompileForSm90) {
  fs::path root = "/usr/share/libonnx-testdata/data/node";
  if (!fs::is_directory(root)) GTEST_SKIP() << "ONNX node tests not installed (libonnx-testdata)";
  std::vector<gpu::Step> steps;
  size_t cases = 0;
  for (const fs::path& dir : runtime::find_cases({root})) {
    try {
      runtime::PreparedSet p =
          runtime::prepare_data_set(dir / "model.onnx", dir / "test_data_set_0");
      for (gpu::Step& s :
           gpu::generate_steps(p.graph, fusion::plan_unfused(p.graph), codegen::Target{}))
        if (s.kernel) steps.push_back(std::move(s));
      ++cases;
    } catch (const UnsupportedError&) {
      // outside the registry: the conformance run skips it too
    }
  }
  gpu::EngineOptions o = gpu::default_engine_options("sm_90");
  o.use_cache = false;
  gpu::BuildReport r;
  ASSERT_NO_THROW(gpu::Engine::compile_steps(steps, gpu::Arch::parse("sm_90"), o, &r));
  // Cases that share a kernel (the _expanded twins, equal shapes) compile it once.
  EXPECT_EQ(r.compiled, r.distinct);
  EXPECT_LT(r.distinct, steps.size());
  for (const gpu::Step& s : steps) EXPECT_FALSE(s.cubin.empty()) << s.kernel->name;
  EXPECT_GT(cases, 700u);
  std::printf("compiled %zu distinct kernels of %zu from %zu cases in %.1f s\n", r.distinct,
              steps.size(), cases, r.compile_seconds);
}

}  // namespace
}  // namespace braze
