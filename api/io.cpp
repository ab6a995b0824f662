// The public API's files and inputs: tensors read and written, model inputs read from files
// or folders and matched by name, seeded random tensors.
#include <braze/braze.h>

#include <filesystem>

#include "frontend/onnx_import.h"
#include "frontend/tensor_io.h"
#include "runtime/inputs.h"

namespace braze {

Tensor read_tensor(const std::string& path) { return frontend::read_tensor_file(path).tensor; }
void write_npy(const std::string& path, const Tensor& tensor) { frontend::write_npy(path, tensor); }
void write_file(const std::string& path, const std::string& contents) {
  frontend::write_file(path, {contents});
}

std::vector<Tensor> read_inputs(const std::vector<std::string>& paths,
                                const std::vector<std::string>& names, const std::string& prefix) {
  const std::vector<std::filesystem::path> p(paths.begin(), paths.end());
  return runtime::match_inputs(names, runtime::read_input_files(p, prefix));
}

std::map<std::string, Shape> parse_shapes(const std::string& spec) {
  return frontend::parse_shape_spec(spec);
}

std::vector<std::string> model_input_names(const std::string& onnx_path) {
  const frontend::ImportResult probe = frontend::import_model_file(onnx_path);
  std::vector<std::string> names;
  for (graph::ValueId v : probe.graph.inputs()) names.push_back(probe.graph.value(v).name);
  return names;
}

Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed, const RandomOptions& o) {
  runtime::RandomSpec spec;
  spec.int_min = o.int_min;
  spec.int_max = o.int_max;
  spec.float_lo = o.float_lo;
  spec.float_hi = o.float_hi;
  return runtime::random_tensor(dtype, shape, seed, spec);
}

}  // namespace braze
