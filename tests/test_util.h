// Helpers for tests: graphs from ONNX text syntax, seeded random tensors, running the
// reference executor.
#pragma once

#include <braze/error.h>
#include <braze/tensor.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "graph/ir.h"

namespace braze::test {

// Imports a model written in ONNX's text syntax, e.g.
//   <ir_version: 8, opset_import: ["" : 18]>
//   g (float[2,3] x) => (float[2,3] y) { y = Relu(x) }
frontend::ImportResult import_text(const std::string& text,
                                   const frontend::ImportOptions& opts = {});
graph::Graph graph_from_text(const std::string& text);
// `text` with each `@` replaced by `dtype` (test cases written once for several element types).
std::string with_element_type(std::string text, const std::string& dtype);

// Uniform in [-1, 1) for floats, [0, 10) for integers; never all zeros.
Tensor random(DType dt, const Shape& shape, uint64_t seed = 1);
// One such tensor for each of g's inputs, input i drawn with seed `seed` + i.
std::vector<Tensor> random_inputs(const graph::Graph& g, uint64_t seed);
Tensor floats(const Shape& shape, std::vector<float> v);
Tensor int64s(const Shape& shape, std::vector<int64_t> v);

// Runs the graph on the reference executor.
std::vector<Tensor> run(const graph::Graph& g, const std::vector<Tensor>& inputs);

// Element-wise closeness (ONNX backend-test tolerances).
::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected);

// A float32 tensor of `shape` close to `want`; an int64 tensor of `shape` equal to `want`.
void expect_floats(const Tensor& t, const Shape& shape, const std::vector<float>& want);
void expect_int64s(const Tensor& t, const Shape& shape, const std::vector<int64_t>& want);

// 1, 2, 3, … in row-major order, float32.
Tensor iota(const Shape& shape);

// Runs `f` and expects a UserError whose message contains every one of `parts`.
template <class F>
void expect_user_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "missing '" << p << "' in: " << e.what();
  }
}

// Imports `model` (ONNX text syntax) and expects a UserError containing every one of `parts`.
void expect_import_error(const std::string& model, const std::vector<std::string>& parts);

// An empty folder <temp>/braze_<suite>_<pid>/<name> (made anew: what was there is removed).
std::filesystem::path temp_dir(const std::string& suite, const std::string& name);

// Runs body(t) for t = 0 … threads - 1, each on a thread of its own, all at once; returns
// each one's exception message ("" where it threw none).
std::vector<std::string> on_threads(int threads, const std::function<void(int)>& body);

// Same dtype, shape and bytes.
bool same_bytes(const Tensor& a, const Tensor& b);

// A graph rewrite keeps what the graph computes: `before` and `after` run on the reference
// executor with the same random inputs (from `seed`) give outputs that are close
// (tensors_close), or the same bytes where `exact`.
enum class Match { Close, Exact };
void expect_same_outputs(const graph::Graph& before, const graph::Graph& after, uint64_t seed,
                         Match match = Match::Close);

}  // namespace braze::test
