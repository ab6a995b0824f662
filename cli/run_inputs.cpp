#include "cli/run_inputs.h"

#include <braze/error.h>

#include <cstdint>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "frontend/onnx_import.h"

namespace braze::cli {

void InputOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--inputs", inputs, "input files (.pb or .npy), or a folder of them; random when absent");
  cmd.add_option("--seed", seed, "seed for random inputs");
  cmd.add_option("--int-range", int_range, "range LO,HI (inclusive) for random integer inputs (default 0,9)")
      ->delimiter(',');
}

runtime::RandomSpec InputOptions::spec() const {
  runtime::RandomSpec rs;
  rs.seed = seed;
  if (!int_range.empty()) {
    if (int_range.size() != 2) throw UserError("--int-range takes LO,HI");
    if (int_range[1] < int_range[0])
      throw UserError(fmt::format("--int-range {},{} is empty (LO above HI)", int_range[0], int_range[1]));
    rs.int_min = int_range[0];
    rs.int_max = int_range[1];
  }
  return rs;
}

GivenInputs read_given_inputs(const InputOptions& o, const std::vector<std::string>& names) {
  GivenInputs g;
  if (o.inputs.empty()) return g;
  g.tensors = runtime::match_inputs(names, runtime::read_input_files({o.inputs.begin(), o.inputs.end()}));
  for (size_t i = 0; i < names.size(); ++i) g.shapes[names[i]] = g.tensors[i].shape();
  return g;
}

std::vector<std::string> model_input_names(const std::string& model) {
  frontend::ImportResult probe = frontend::import_model_file(model);
  std::vector<std::string> names;
  for (graph::ValueId v : probe.graph.inputs()) names.push_back(probe.graph.value(v).name);
  return names;
}

std::vector<std::string> input_names(const graph::Graph& g) {
  std::vector<std::string> names;
  for (graph::ValueId v : g.inputs()) names.push_back(g.value(v).name);
  return names;
}

namespace {

// numpy has no bfloat16, so braze writes bfloat16 outputs as float32 holding them exactly
// (frontend/tensor_io.cpp); a float32 file given for a bfloat16 input is read back the same
// way, provided every value is an exact bfloat16 (its low 16 bits zero).
Tensor bfloat16_input(const graph::Value& v, const Tensor& t) {
  Tensor out(DType::BFloat16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float f = static_cast<float>(t.get_f64(i));
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if ((bits & 0xffffu) != 0 && f == f)
      throw UserError(fmt::format(
          "input '{}' is float32 and the model expects bfloat16, but element {} ({}) is not a "
          "bfloat16 value: give bfloat16 inputs as float32 files holding exact bfloat16 values",
          v.name, i, f));
    out.set_f64(i, f);
  }
  return out;
}

}  // namespace

std::vector<Tensor> inputs_for(const graph::Graph& g, const InputOptions& o, const GivenInputs& given) {
  if (!given.tensors.empty()) {
    std::vector<Tensor> out = given.tensors;
    for (size_t i = 0; i < out.size() && i < g.inputs().size(); ++i) {
      const graph::Value& v = g.value(g.inputs()[i]);
      if (v.dtype == DType::BFloat16 && out[i].dtype() == DType::Float32) out[i] = bfloat16_input(v, out[i]);
    }
    return out;
  }
  runtime::RandomSpec rs = o.spec();
  std::vector<Tensor> out;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    if (!v.has_shape) throw UserError(fmt::format("input '{}' has no static shape; give it with --shapes", v.name));
    try {
      out.push_back(runtime::random_tensor(v.dtype, v.shape, o.seed * 1000003 + i, rs));
    } catch (const UserError& e) {
      throw UserError(fmt::format("input '{}': --int-range: {}", v.name, e.what()));
    }
    std::cerr << fmt::format("note: input '{}' is random {} (seed {})\n", v.name, graph::value_type_str(v), o.seed);
  }
  return out;
}

}  // namespace braze::cli
