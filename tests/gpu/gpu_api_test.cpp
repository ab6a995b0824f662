// The public API on the GPU: a bundled model's Session::run against ONNX Runtime's outputs,
// and eight threads, each with its own GPU Session on one shared Engine, giving outputs
// identical to one thread's. Skips without a GPU.
#include <braze/braze.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/compare.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(BRAZE_SOURCE_DIR) / "models" / "bert_tiny_legacy";

TEST(GpuApi, EightThreadsEachWithASessionOnOneEngine) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  CompileOptions o;
  o.shapes = {{"input_0", {2, 16}}, {"input_1", {2, 16}}};
  const Engine e = Engine::compile((kModel / "model.onnx").string(), o);
  const fs::path data = kModel / "test_data_set_0";
  const std::vector<Tensor> in = {read_tensor((data / "input_0.pb").string()), read_tensor((data / "input_1.pb").string())};
  Session one(e, Backend::Gpu);
  ASSERT_EQ(one.backend(), Backend::Gpu);
  const Tensor want = one.run(in)[0];
  const Tensor ort = read_tensor((data / "output_0.pb").string());
  runtime::Comparison c = runtime::compare(want, ort, runtime::default_tolerance(ort.dtype()));
  EXPECT_TRUE(c.ok) << c.summary(want, ort);
  std::vector<Tensor> got(8);
  const std::vector<std::string> errors = test::on_threads(8, [&](int t) {
    Session s(e, Backend::Gpu);
    for (int r = 0; r < 20; ++r) got[t] = s.run(in)[0];
  });
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_TRUE(test::same_bytes(got[t], want)) << "thread " << t;
  }
}

}  // namespace
}  // namespace braze
