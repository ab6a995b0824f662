#include <braze/error.h>

#include <cstring>
#include <fstream>
#include <utility>

#include <fmt/format.h>

#include "frontend/mapped_file.h"
#include "frontend/onnx_proto.h"
#include "frontend/tensor_io.h"
#include "graph/onnx_dtype.h"

namespace braze::frontend {

namespace fs = std::filesystem;

namespace {

// Resolves an external-data location against the model's folder, rejecting any location
// that leaves it (absolute paths, "..", symlinks pointing outside) or names the model's own
// file (its bytes read as weights).
fs::path resolve_external(const DataScope& scope, const std::string& location,
                          const std::string& what) {
  fs::path loc(location);
  if (location.empty()) throw UserError(what + ": external data has an empty location");
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory())
    throw UserError(fmt::format(
        "{}: external data location '{}' is absolute; it must be relative to the model's folder",
        what, location));
  for (const auto& part : loc)
    if (part == "..")
      throw UserError(
          fmt::format("{}: external data location '{}' leaves the model's folder", what, location));
  std::error_code ec;
  fs::path base = fs::weakly_canonical(scope.dir.empty() ? fs::path(".") : scope.dir, ec);
  fs::path full = fs::weakly_canonical(base / loc, ec);
  if (ec)
    throw UserError(fmt::format("{}: cannot resolve external data location '{}'", what, location));
  auto rel = full.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..")
    throw UserError(fmt::format(
        "{}: external data location '{}' resolves outside the model's folder (through a symlink)",
        what, location));
  if (!scope.self.empty() && fs::equivalent(full, scope.self, ec))
    throw UserError(
        fmt::format("{}: external data location '{}' is the model file itself", what, location));
  return full;
}

// Where t's external data lies: its file and offset, with `expected` bytes there (checked).
struct ExternalData {
  fs::path file;
  uint64_t offset;
};
ExternalData locate_external(const onnx::TensorProto& t, const DataScope& scope,
                             const std::string& what, uint64_t expected) {
  std::string location;
  uint64_t offset = 0;
  int64_t length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoull(kv.value());
      else if (kv.key() == "length")
        length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw UserError(
          fmt::format("{}: external data {} '{}' is not a number", what, kv.key(), kv.value()));
    }
  }
  fs::path file = resolve_external(scope, location, what);
  if (length >= 0 && static_cast<uint64_t>(length) != expected)
    throw UserError(fmt::format("{}: external data length {} disagrees with dims (need {} bytes)",
                                what, length, expected));
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw UserError(fmt::format("{}: cannot open external data file '{}'", what, file.string()));
  uint64_t size = fs::file_size(file, ec);
  if (ec || offset > size || size - offset < expected)
    throw UserError(
        fmt::format("{}: external data file '{}' is too short ({} bytes, need {} at offset {})",
                    what, file.string(), ec ? 0 : size, expected, offset));
  return {file, offset};
}

// Reads `expected` bytes at `at` into dst.
void read_external(const ExternalData& at, const std::string& what, uint64_t expected, void* dst) {
  std::ifstream in(at.file, std::ios::binary);
  if (!in)
    throw UserError(fmt::format("{}: cannot open external data file '{}'", what, at.file.string()));
  in.seekg(static_cast<std::streamoff>(at.offset));
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(expected));
  if (!in)
    throw UserError(
        fmt::format("{}: failed reading external data from '{}'", what, at.file.string()));
}

// Large weights at 64-byte-aligned offsets (as ONNX and PyTorch write them) are tensors over
// the mapped file; the rest are read.
constexpr uint64_t kMapAtLeast = 64 * 1024;

// How many values the typed field that holds `dt` stores, and its name.
std::pair<int64_t, const char*> typed_data_count(const onnx::TensorProto& t, DType dt) {
  switch (dt) {
    case DType::Float32:
      return {t.float_data_size(), "float_data"};
    case DType::Float64:
      return {t.double_data_size(), "double_data"};
    case DType::Int64:
      return {t.int64_data_size(), "int64_data"};
    case DType::UInt64:
    case DType::UInt32:
      return {t.uint64_data_size(), "uint64_data"};
    default:
      return {t.int32_data_size(), "int32_data"};  // float16 / bfloat16 bits, small ints, bool
  }
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& t, const DataScope& scope,
                         const std::string& what) {
  auto dt = graph::dtype_from_onnx(t.data_type());
  if (!dt)
    throw UnsupportedError(
        fmt::format("{}: dtype {} is not supported", what, graph::onnx_dtype_name(t.data_type())));
  if (t.has_segment()) throw UnsupportedError(what + ": segmented tensors are not supported");
  Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      throw UserError(fmt::format("{}: negative dimension in dims {}", what, shape_str(shape)));
  uint64_t nbytes = checked_nbytes(*dt, shape, what);
  int64_t numel = checked_numel(shape, what);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    const ExternalData at = locate_external(t, scope, what, nbytes);
    if (nbytes >= kMapAtLeast && at.offset % 64 == 0)
      if (std::shared_ptr<const MappedFile> f = MappedFile::open(at.file);
          f && f->size() - at.offset >= nbytes)
        return Tensor::over(*dt, shape, f, f->data() + at.offset);
    Tensor out = Tensor::uninitialized(*dt, shape);
    read_external(at, what, nbytes, out.raw());
    return out;
  }
  // The inline data's size against the dims before anything is allocated: dims of billions
  // over two stored values must not cost gigabytes first.
  if (t.has_raw_data()) {
    if (t.raw_data().size() != nbytes)
      throw UserError(fmt::format("{}: raw_data holds {} bytes but dims {} of {} need {}", what,
                                  t.raw_data().size(), shape_str(shape), dtype_name(*dt), nbytes));
    Tensor out = Tensor::uninitialized(*dt, shape);
    if (nbytes) std::memcpy(out.raw(), t.raw_data().data(), nbytes);
    return out;
  }
  const auto [count, field] = typed_data_count(t, *dt);
  if (count != numel)
    throw UserError(
        fmt::format("{}: {} holds {} values but its dims need {}", what, field, count, numel));
  Tensor out = Tensor::uninitialized(*dt, shape);
  switch (*dt) {
    case DType::Float32:
      for (int64_t i = 0; i < numel; ++i) out.data<float>()[i] = t.float_data(static_cast<int>(i));
      break;
    case DType::Float64:
      for (int64_t i = 0; i < numel; ++i)
        out.data<double>()[i] = t.double_data(static_cast<int>(i));
      break;
    case DType::Int64:
      for (int64_t i = 0; i < numel; ++i)
        out.data<int64_t>()[i] = t.int64_data(static_cast<int>(i));
      break;
    case DType::UInt64:
    case DType::UInt32:
      for (int64_t i = 0; i < numel; ++i) out.set_u64(i, t.uint64_data(static_cast<int>(i)));
      break;
    case DType::Float16:
    case DType::BFloat16:  // bit patterns in int32_data
      for (int64_t i = 0; i < numel; ++i)
        out.data<uint16_t>()[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      break;
    default:  // int32, int16, int8, uint16, uint8, bool
      for (int64_t i = 0; i < numel; ++i) out.set_i64(i, t.int32_data(static_cast<int>(i)));
      break;
  }
  return out;
}

onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(graph::dtype_to_onnx(t.dtype())));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  return p;
}

}  // namespace braze::frontend
