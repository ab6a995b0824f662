#include <braze/dtype.h>
#include <braze/error.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>

namespace braze {

namespace {
struct DTypeInfo {
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"float32", 4},
    {"float16", 2},
    {"bfloat16", 2},
    {"float64", 8},
    {"int64", 8},
    {"int32", 4},
    {"int16", 2},
    {"int8", 1},
    {"uint64", 8},
    {"uint32", 4},
    {"uint16", 2},
    {"uint8", 1},
    {"bool", 1},
}};
}  // namespace

size_t dtype_size(DType dt) { return kInfo.at(static_cast<size_t>(dt)).size; }
std::string_view dtype_name(DType dt) { return kInfo.at(static_cast<size_t>(dt)).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  if (name == "float") return DType::Float32;
  if (name == "half") return DType::Float16;
  if (name == "double") return DType::Float64;
  return std::nullopt;
}

bool is_float(DType dt) { return kFloatTypes.contains(dt); }
bool is_signed_int(DType dt) { return kSignedTypes.contains(dt); }
bool is_unsigned_int(DType dt) { return kUnsignedTypes.contains(dt); }

int64_t int_dtype_min(DType dt) {
  switch (dt) {
    case DType::Int8:
      return std::numeric_limits<int8_t>::min();
    case DType::Int16:
      return std::numeric_limits<int16_t>::min();
    case DType::Int32:
      return std::numeric_limits<int32_t>::min();
    case DType::Int64:
      return std::numeric_limits<int64_t>::min();
    default:
      return 0;
  }
}

uint64_t int_dtype_max(DType dt) {
  switch (dt) {
    case DType::Int8:
      return std::numeric_limits<int8_t>::max();
    case DType::Int16:
      return std::numeric_limits<int16_t>::max();
    case DType::Int32:
      return std::numeric_limits<int32_t>::max();
    case DType::Int64:
      return std::numeric_limits<int64_t>::max();
    case DType::UInt8:
      return std::numeric_limits<uint8_t>::max();
    case DType::UInt16:
      return std::numeric_limits<uint16_t>::max();
    case DType::UInt32:
      return std::numeric_limits<uint32_t>::max();
    case DType::UInt64:
      return std::numeric_limits<uint64_t>::max();
    default:
      return 0;
  }
}

void internal_check_failed(const char* cond, const char* file, int line, const std::string& msg) {
  throw InternalError(msg + " (" + cond + " failed at " + file + ":" + std::to_string(line) + ")");
}

}  // namespace braze
