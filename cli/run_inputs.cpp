#include "cli/run_inputs.h"

#include <braze/error.h>

#include <cstdint>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

namespace braze::cli {

void InputOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--inputs", inputs,
                 "input files (.pb or .npy), or a folder of them; random when absent");
  cmd.add_option("--seed", seed, "seed for random inputs");
  cmd.add_option("--int-range", int_range,
                 "range LO,HI (inclusive) for random integer inputs (default 0,9)")
      ->delimiter(',');
}

RandomOptions InputOptions::random() const {
  RandomOptions r;
  if (!int_range.empty()) {
    if (int_range.size() != 2) throw UserError("--int-range takes LO,HI");
    if (int_range[1] < int_range[0])
      throw UserError(
          fmt::format("--int-range {},{} is empty (LO above HI)", int_range[0], int_range[1]));
    r.int_min = int_range[0];
    r.int_max = int_range[1];
  }
  return r;
}

GivenInputs read_given_inputs(const InputOptions& o, const std::vector<std::string>& names) {
  GivenInputs g;
  if (o.inputs.empty()) return g;
  g.tensors = read_inputs(o.inputs, names);
  for (size_t i = 0; i < names.size(); ++i) g.shapes[names[i]] = g.tensors[i].shape();
  return g;
}

std::vector<std::string> names_of(const std::vector<TensorInfo>& infos) {
  std::vector<std::string> names;
  for (const TensorInfo& t : infos) names.push_back(t.name);
  return names;
}

namespace {

// numpy has no bfloat16, so braze writes bfloat16 outputs as float32 holding them exactly
// (frontend/tensor_io.cpp); a float32 file given for a bfloat16 input is read back the same
// way, provided every value is an exact bfloat16 (its low 16 bits zero).
Tensor bfloat16_input(const TensorInfo& v, const Tensor& t) {
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

std::vector<Tensor> inputs_for(const std::vector<TensorInfo>& inputs, const InputOptions& o,
                               const GivenInputs& given) {
  if (!given.tensors.empty()) {
    std::vector<Tensor> out = given.tensors;
    for (size_t i = 0; i < out.size() && i < inputs.size(); ++i)
      if (inputs[i].dtype == DType::BFloat16 && out[i].dtype() == DType::Float32)
        out[i] = bfloat16_input(inputs[i], out[i]);
    return out;
  }
  const RandomOptions r = o.random();
  std::vector<Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& v = inputs[i];
    try {
      out.push_back(random_tensor(v.dtype, v.shape, o.seed * 1000003 + i, r));
    } catch (const UserError& e) {
      throw UserError(fmt::format("input '{}': --int-range: {}", v.name, e.what()));
    }
    std::cerr << fmt::format("note: input '{}' is random {}{} (seed {})\n", v.name,
                             dtype_name(v.dtype), shape_str(v.shape), o.seed);
  }
  return out;
}

}  // namespace braze::cli
