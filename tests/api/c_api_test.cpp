// The C API (include/braze/braze_c.h): a bundled model compiled, run on the CPU reference and
// checked against ONNX Runtime's output; engine files; status codes and messages for bad
// arguments, models and inputs.
#include <braze/braze_c.h>
#include <gtest/gtest.h>

#include <braze/braze.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "runtime/compare.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(BRAZE_SOURCE_DIR) / "models" / "bert_tiny_legacy";

std::string data(const std::string& f) { return (kModel / "test_data_set_0" / f).string(); }

braze_engine* compile_bert() {
  braze_compile_options o;
  braze_compile_options_init(&o);
  o.shapes = "input_0:2x16,input_1:2x16";
  braze_engine* e = nullptr;
  EXPECT_EQ(braze_engine_compile((kModel / "model.onnx").string().c_str(), &o, &e), BRAZE_OK)
      << braze_last_error();
  return e;
}

TEST(CApi, CompilesRunsAndMatchesOnnxRuntime) {
  braze_engine* e = compile_bert();
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(braze_engine_num_inputs(e), 2u);
  ASSERT_EQ(braze_engine_num_outputs(e), 1u);
  EXPECT_STREQ(braze_engine_input_name(e, 0), "input_0");
  EXPECT_EQ(braze_engine_input_name(e, 2), nullptr);
  braze_session* s = nullptr;
  ASSERT_EQ(braze_session_create(e, BRAZE_BACKEND_REFERENCE, &s), BRAZE_OK) << braze_last_error();
  braze_tensor *a = nullptr, *b = nullptr, *out = nullptr;
  ASSERT_EQ(braze_tensor_read(data("input_0.pb").c_str(), &a), BRAZE_OK) << braze_last_error();
  ASSERT_EQ(braze_tensor_read(data("input_1.pb").c_str(), &b), BRAZE_OK);
  const braze_tensor* in[] = {a, b};
  ASSERT_EQ(braze_session_run(s, in, 2, &out, 1), BRAZE_OK) << braze_last_error();
  ASSERT_EQ(braze_tensor_dtype(out), BRAZE_FLOAT32);
  ASSERT_EQ(braze_tensor_rank(out), 3u);
  EXPECT_EQ(braze_tensor_shape(out)[2], 128);
  Tensor got(DType::Float32, Shape(braze_tensor_shape(out), braze_tensor_shape(out) + 3));
  ASSERT_EQ(braze_tensor_nbytes(out), got.nbytes());
  std::memcpy(got.raw(), braze_tensor_data(out), got.nbytes());
  const Tensor want = read_tensor(data("output_0.pb"));
  runtime::Comparison c = runtime::compare(got, want, runtime::default_tolerance(want.dtype()));
  EXPECT_TRUE(c.ok) << c.summary(got, want);
  braze_tensor_free(out);
  braze_tensor_free(a);
  braze_tensor_free(b);
  braze_session_free(s);
  braze_engine_free(e);
}

TEST(CApi, EngineFilesAndTensorsRoundTrip) {
  const fs::path dir = test::temp_dir("CApi", "RoundTrip");
  braze_engine* e = compile_bert();
  ASSERT_NE(e, nullptr);
  const std::string path = (dir / "bert.braze").string();
  ASSERT_EQ(braze_engine_save(e, path.c_str()), BRAZE_OK) << braze_last_error();
  braze_engine* loaded = nullptr;
  ASSERT_EQ(braze_engine_load(path.c_str(), &loaded), BRAZE_OK) << braze_last_error();
  EXPECT_STREQ(braze_engine_output_name(loaded, 0), braze_engine_output_name(e, 0));
  const int64_t shape[] = {2, 3};
  const float values[] = {1, 2, 3, 4, 5, 6};
  braze_tensor *t = nullptr, *back = nullptr;
  ASSERT_EQ(braze_tensor_create(BRAZE_FLOAT32, shape, 2, values, &t), BRAZE_OK);
  const std::string npy = (dir / "t.npy").string();
  ASSERT_EQ(braze_tensor_write_npy(t, npy.c_str()), BRAZE_OK) << braze_last_error();
  ASSERT_EQ(braze_tensor_read(npy.c_str(), &back), BRAZE_OK) << braze_last_error();
  ASSERT_EQ(braze_tensor_nbytes(back), sizeof values);
  EXPECT_EQ(std::memcmp(braze_tensor_data(back), values, sizeof values), 0);
  braze_tensor_free(t);
  braze_tensor_free(back);
  braze_engine_free(loaded);
  braze_engine_free(e);
  fs::remove_all(dir);
}

TEST(CApi, FailuresReturnAStatusAndAMessage) {
  braze_engine* e = nullptr;
  EXPECT_EQ(braze_engine_compile(nullptr, nullptr, &e), BRAZE_USER_ERROR);
  EXPECT_NE(std::string(braze_last_error()).find("onnx_path"), std::string::npos)
      << braze_last_error();
  EXPECT_EQ(braze_engine_compile("/nonexistent/model.onnx", nullptr, &e), BRAZE_USER_ERROR);
  EXPECT_EQ(e, nullptr);
  EXPECT_NE(std::string(braze_last_error()).find("/nonexistent/model.onnx"), std::string::npos)
      << braze_last_error();
  braze_compile_options o;
  braze_compile_options_init(&o);
  o.precision = "fp8";
  EXPECT_EQ(braze_engine_compile((kModel / "model.onnx").string().c_str(), &o, &e),
            BRAZE_USER_ERROR);
  o.precision = "fp32";
  o.shapes = "input_0:2x";
  EXPECT_EQ(braze_engine_compile((kModel / "model.onnx").string().c_str(), &o, &e),
            BRAZE_USER_ERROR);
  braze_tensor* t = nullptr;
  const int64_t shape[] = {2};
  EXPECT_EQ(braze_tensor_create(static_cast<braze_dtype>(99), shape, 1, nullptr, &t),
            BRAZE_USER_ERROR);
  EXPECT_EQ(braze_tensor_create(BRAZE_FLOAT32, nullptr, 1, nullptr, &t), BRAZE_USER_ERROR);

  e = compile_bert();
  ASSERT_NE(e, nullptr);
  braze_session* s = nullptr;
  EXPECT_EQ(braze_session_create(e, static_cast<braze_backend>(7), &s), BRAZE_USER_ERROR);
  if (!braze_gpu_available()) {
    EXPECT_EQ(braze_session_create(e, BRAZE_BACKEND_GPU, &s), BRAZE_DEVICE_ERROR);
  }
  ASSERT_EQ(braze_session_create(e, BRAZE_BACKEND_REFERENCE, &s), BRAZE_OK);
  braze_tensor* a = nullptr;
  ASSERT_EQ(braze_tensor_read(data("input_0.pb").c_str(), &a), BRAZE_OK);
  const braze_tensor* one[] = {a};
  braze_tensor* out = nullptr;
  EXPECT_EQ(braze_session_run(s, one, 1, &out, 1), BRAZE_USER_ERROR) << "one input of two";
  const braze_tensor* two[] = {a, a};
  EXPECT_EQ(braze_session_run(s, two, 2, &out, 2), BRAZE_USER_ERROR)
      << "two output slots for one output";
  EXPECT_NE(std::string(braze_last_error()).find("num_outputs"), std::string::npos)
      << braze_last_error();
  // The device path: a GPU session's; arrays checked before anything runs.
  const int64_t dims[] = {2, 16};
  const braze_device_tensor d[] = {{nullptr, BRAZE_INT64, dims, 2},
                                   {nullptr, BRAZE_INT64, dims, 2}};
  EXPECT_EQ(braze_session_run_device(s, d, 2, d, 1, nullptr), BRAZE_USER_ERROR);
  EXPECT_NE(std::string(braze_last_error()).find("CPU reference"), std::string::npos)
      << braze_last_error();
  EXPECT_EQ(braze_session_run_device(s, nullptr, 2, d, 1, nullptr), BRAZE_USER_ERROR);
  EXPECT_NE(std::string(braze_last_error()).find("inputs is NULL"), std::string::npos)
      << braze_last_error();
  const braze_device_tensor bad[] = {{nullptr, static_cast<braze_dtype>(99), dims, 2}};
  EXPECT_EQ(braze_session_run_device(s, bad, 1, d, 1, nullptr), BRAZE_USER_ERROR);
  EXPECT_NE(std::string(braze_last_error()).find("not a braze_dtype"), std::string::npos)
      << braze_last_error();
  EXPECT_EQ(braze_session_synchronize(s, nullptr), BRAZE_OK);
  EXPECT_EQ(braze_session_synchronize(nullptr, nullptr), BRAZE_USER_ERROR);
  braze_tensor_free(a);
  braze_session_free(s);
  braze_engine_free(e);
  braze_engine_free(nullptr);
}

}  // namespace
}  // namespace braze
