#include "frontend/tensor_io.h"

#include <braze/error.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "frontend/onnx_proto.h"
#include "graph/host_memory.h"

namespace braze::frontend {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UserError(fmt::format("{}: no such file", path.string()));
  if (fs::is_directory(path, ec))
    throw UserError(fmt::format("{}: is a folder, not a file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open", path.string()));
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw UserError(fmt::format("{}: cannot read its size", path.string()));
  check_host_memory(size, fmt::format("reading {}", path.string()));
  std::string s(size, '\0');
  in.read(s.data(), static_cast<std::streamsize>(size));
  if (!in) throw UserError(fmt::format("{}: read failed", path.string()));
  return s;
}

void write_file(const fs::path& path, const std::vector<std::string_view>& parts) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw UserError(
        fmt::format("{}: cannot open for writing ({})", path.string(), std::strerror(errno)));
  int error = 0;
  for (std::string_view part : parts)
    for (size_t done = 0; !error && done < part.size();) {
      const ssize_t w = ::write(fd, part.data() + done, part.size() - done);
      if (w > 0)
        done += static_cast<size_t>(w);
      else if (w == 0)
        error = EIO;
      else if (errno != EINTR)
        error = errno;
    }
  if (::close(fd) != 0 && !error) error = errno;
  if (error)
    throw UserError(fmt::format("{}: write failed ({})", path.string(), std::strerror(error)));
}

namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};
// bfloat16 has no numpy type: it is written as float32 (exactly).
constexpr NpyType kNpyTypes[] = {
    {"<f4", DType::Float32}, {"<f2", DType::Float16}, {"<f8", DType::Float64},
    {"<i8", DType::Int64},   {"<i4", DType::Int32},   {"<i2", DType::Int16},
    {"|i1", DType::Int8},    {"<u8", DType::UInt64},  {"<u4", DType::UInt32},
    {"<u2", DType::UInt16},  {"|u1", DType::UInt8},   {"|b1", DType::Bool},
};

// The dims of a .npy header's shape tuple, "(2, 16)" without the parentheses: each a
// non-negative decimal (Python 2 wrote a trailing L), separated by commas.
Shape npy_shape(const std::string& tuple, const std::string& what) {
  Shape shape;
  size_t pos = 0;
  while (pos < tuple.size()) {
    size_t comma = tuple.find(',', pos);
    if (comma == std::string::npos) comma = tuple.size();
    std::string item = tuple.substr(pos, comma - pos);
    const size_t first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    if (!item.empty() && item.back() == 'L') item.pop_back();
    const bool is_last = comma == tuple.size();
    if (item.empty() && is_last && !shape.empty())
      break;  // "(4,)": the trailing comma of a 1-tuple
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      throw UserError(fmt::format(
          "{}: .npy shape ({}) has dimension '{}', not a non-negative integer", what, tuple, item));
    try {
      shape.push_back(std::stoll(item));
    } catch (const std::exception&) {
      throw UserError(fmt::format("{}: .npy dimension '{}' is out of range", what, item));
    }
    pos = comma + 1;
  }
  return shape;
}

Tensor read_npy(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    throw UserError(what + ": not a .npy file (bad magic)");
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len =
        static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw UserError(what + ": truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    throw UserError(fmt::format("{}: unsupported .npy version {}", what, major));
  }
  if (bytes.size() < header_start + header_len) throw UserError(what + ": truncated .npy header");
  std::string header = bytes.substr(header_start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    throw UserError(what + ": .npy header lacks descr");
  std::string descr = m[1];
  std::optional<DType> dt;
  if (descr.size() >= 2 && descr[0] != '>')  // byte order '<', '=' or '|' (little-endian host)
    for (const NpyType& t : kNpyTypes)
      if (descr.substr(1) == t.descr + 1) dt = t.dtype;
  if (!dt) throw UnsupportedError(fmt::format("{}: .npy dtype '{}' is not supported", what, descr));
  if (std::regex_search(header, m, std::regex("'fortran_order':\\s*True")))
    throw UnsupportedError(what + ": Fortran-ordered .npy arrays are not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    throw UserError(what + ": .npy header lacks shape");
  const Shape shape = npy_shape(m[1], what);
  uint64_t nbytes = checked_nbytes(*dt, shape, what);
  size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != nbytes)
    throw UserError(fmt::format("{}: .npy data holds {} bytes, shape {} needs {}", what,
                                bytes.size() - data_start, shape_str(shape), nbytes));
  Tensor t(*dt, shape);
  if (nbytes) std::memcpy(t.raw(), bytes.data() + data_start, nbytes);
  return t;
}

}  // namespace

NamedTensor read_tensor_file(const fs::path& path) {
  std::string bytes = read_file(path);
  std::string what = path.string();
  if (path.extension() == ".npy") return {"", read_npy(bytes, what)};
  if (path.extension() != ".pb")
    throw UserError(fmt::format("{}: unknown tensor file type (expected .pb or .npy)", what));
  onnx::TensorProto proto;
  if (bytes.empty() || !proto.ParseFromString(bytes))
    throw UserError(fmt::format("{}: not a valid ONNX TensorProto", what));
  return {proto.name(), tensor_from_proto(proto, {path.parent_path(), path}, what)};
}

void write_npy(const fs::path& path, const Tensor& tensor) {
  const Tensor* t = &tensor;
  Tensor widened;
  if (tensor.dtype() == DType::BFloat16) {
    widened = Tensor(DType::Float32, tensor.shape());
    for (int64_t i = 0; i < tensor.numel(); ++i) widened.set_f64(i, tensor.get_f64(i));
    t = &widened;
  }
  const char* descr = nullptr;
  for (const NpyType& nt : kNpyTypes)
    if (nt.dtype == t->dtype()) descr = nt.descr;
  std::string shape;
  for (int64_t d : t->shape()) shape += std::to_string(d) + ",";
  if (t->rank() > 1) shape.pop_back();
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char preamble[10] = {'\x93',
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             '\x01',
                             '\x00',
                             static_cast<char>(len & 0xff),
                             static_cast<char>(len >> 8)};
  write_file(path, {std::string_view(preamble, sizeof preamble), header,
                    std::string_view(static_cast<const char*>(t->raw()), t->nbytes())});
}

void write_tensor_pb(const fs::path& path, const Tensor& t, const std::string& name) {
  write_file(path, {tensor_to_proto(t, name).SerializeAsString()});
}

}  // namespace braze::frontend
