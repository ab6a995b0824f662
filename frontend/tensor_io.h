// Reading and writing tensors in files: ONNX TensorProto (.pb) and numpy (.npy).
#pragma once

#include <braze/tensor.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace braze::frontend {

struct NamedTensor {
  std::string name;  // empty when the file carries none (.npy)
  Tensor tensor;
};

// By extension: .pb (TensorProto) or .npy. UserError on anything malformed.
NamedTensor read_tensor_file(const std::filesystem::path& path);
void write_npy(const std::filesystem::path& path, const Tensor& t);
void write_tensor_pb(const std::filesystem::path& path, const Tensor& t, const std::string& name);

// Reads a whole file (UserError if missing or unreadable, with the path).
std::string read_file(const std::filesystem::path& path);
// Writes `parts` one after another into `path` (created or truncated); a UserError with the
// path and the system's reason when any byte cannot be written or the file cannot be closed
// (a full disk, /dev/full, a closed pipe).
void write_file(const std::filesystem::path& path, const std::vector<std::string_view>& parts);

}  // namespace braze::frontend
