// Processes sharing one kernel cache (#21): `braze compile` runs side by side on the same model
// into one cache folder; afterwards every entry is whole (a later compile takes every kernel
// from the cache) and no temporary file is left behind. NVRTC runs without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "tests/cli/cli_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

// Two distinct kernels: a softmax row reduction after a Sigmoid, a matrix product with a Relu.
constexpr const char* kModel = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[8,24] x, float[24,16] w) => (float[8,16] y, float[8,24] s) {
    a = Sigmoid(x)  s = Softmax <axis = 1> (a)  m = MatMul(x, w)  y = Relu(m) })";

std::string compile_cmd(const fs::path& cache, const fs::path& model, const fs::path& engine) {
  return fmt::format("XDG_CACHE_HOME={} {} compile {} -o {} >{}.log 2>&1", cache.string(),
                     BRAZE_BINARY, model.string(), engine.string(), engine.string());
}

TEST(SharedKernelCache, ProcessesCompilingAtOnceLeaveWholeEntries) {
  fs::path d = test::temp_dir("cli_test", "shared_cache");
  fs::path model = test::write_text_model(d / "model.onnx", kModel);
  fs::path cache = d / "cache";
  constexpr int kProcs = 4;
  std::string cmd;
  for (int i = 0; i < kProcs; ++i)
    cmd += compile_cmd(cache, model, d / fmt::format("e{}.braze", i)) + " & ";
  test::Result r = test::shell("(" + cmd + "wait) && cat " + (d / "e*.braze.log").string());
  ASSERT_EQ(r.code, 0) << r.out;
  for (int i = 0; i < kProcs; ++i)
    EXPECT_TRUE(fs::is_regular_file(d / fmt::format("e{}.braze", i))) << r.out;

  size_t entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache)) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
    entries += e.path().extension() == ".cubin";
  }
  EXPECT_EQ(entries, 2u);
  // Every kernel now comes from the cache: no entry is torn or lost.
  r = test::shell(compile_cmd(cache, model, d / "again.braze") + " ; cat " +
                  (d / "again.braze.log").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(fmt::format("(0 compiled, {} from the kernel cache)", entries)),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace braze
