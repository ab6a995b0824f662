#include "tests/test_util.h"

#include <unistd.h>

#include <cstring>
#include <thread>

#include "frontend/onnx_proto.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"

namespace braze::test {

frontend::ImportResult import_text(const std::string& text, const frontend::ImportOptions& opts) {
  return frontend::import_model_proto(frontend::parse_model_text(text), opts);
}

std::string with_element_type(std::string text, const std::string& dtype) {
  for (size_t at = 0; (at = text.find('@', at)) != std::string::npos; at += dtype.size())
    text.replace(at, 1, dtype);
  return text;
}

graph::Graph graph_from_text(const std::string& text) { return std::move(import_text(text).graph); }

Tensor random(DType dt, const Shape& shape, uint64_t seed) {
  return runtime::random_tensor(dt, shape, seed, runtime::RandomSpec{});
}

std::vector<Tensor> random_inputs(const graph::Graph& g, uint64_t seed) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    in.push_back(random(v.dtype, v.shape, seed + i));
  }
  return in;
}

Tensor floats(const Shape& shape, std::vector<float> v) { return Tensor::from_floats(v, shape); }
Tensor int64s(const Shape& shape, std::vector<int64_t> v) { return Tensor::from_int64s(v, shape); }

std::vector<Tensor> run(const graph::Graph& g, const std::vector<Tensor>& inputs) {
  return runtime::run_reference(g, inputs);
}

::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected) {
  runtime::Comparison c =
      runtime::compare(actual, expected, runtime::default_tolerance(expected.dtype()));
  if (c.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << c.summary(actual, expected);
}

void expect_floats(const Tensor& t, const Shape& shape, const std::vector<float>& want) {
  ASSERT_EQ(t.dtype(), DType::Float32);
  ASSERT_EQ(t.shape(), shape) << shape_str(t.shape());
  EXPECT_TRUE(tensors_close(t, floats(shape, want)));
}

void expect_int64s(const Tensor& t, const Shape& shape, const std::vector<int64_t>& want) {
  ASSERT_EQ(t.dtype(), DType::Int64);
  ASSERT_EQ(t.shape(), shape) << shape_str(t.shape());
  ASSERT_EQ(static_cast<size_t>(t.numel()), want.size());
  for (int64_t i = 0; i < t.numel(); ++i)
    EXPECT_EQ(t.get_i64(i), want[static_cast<size_t>(i)]) << "at " << i;
}

Tensor iota(const Shape& shape) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, static_cast<double>(i + 1));
  return t;
}

void expect_import_error(const std::string& model, const std::vector<std::string>& parts) {
  expect_user_error([&] { graph_from_text(model); }, parts);
}

std::filesystem::path temp_dir(const std::string& suite, const std::string& name) {
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            ("braze_" + suite + "_" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

std::vector<std::string> on_threads(int threads, const std::function<void(int)>& body) {
  std::vector<std::string> errors(static_cast<size_t>(threads));
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
      }
    });
  for (std::thread& th : running) th.join();
  return errors;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

void expect_same_outputs(const graph::Graph& before, const graph::Graph& after, uint64_t seed,
                         Match match) {
  std::vector<Tensor> in = random_inputs(before, seed);
  std::vector<Tensor> a = run(before, in), b = run(after, in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (match == Match::Exact)
      EXPECT_TRUE(same_bytes(b[i], a[i])) << "output " << i;
    else
      EXPECT_TRUE(tensors_close(b[i], a[i])) << "output " << i;
  }
}

}  // namespace braze::test
