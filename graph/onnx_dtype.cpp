#include "graph/onnx_dtype.h"

#include <array>

namespace braze::graph {

namespace {
// Index = ONNX code.
constexpr std::array<const char*, 24> kNames = {
    "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
    "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
    "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",     "FLOAT4E2M1"};
}  // namespace

std::optional<DType> dtype_from_onnx(int64_t code) {
  switch (code) {
    case 1:
      return DType::Float32;
    case 2:
      return DType::UInt8;
    case 3:
      return DType::Int8;
    case 4:
      return DType::UInt16;
    case 5:
      return DType::Int16;
    case 6:
      return DType::Int32;
    case 7:
      return DType::Int64;
    case 9:
      return DType::Bool;
    case 10:
      return DType::Float16;
    case 11:
      return DType::Float64;
    case 12:
      return DType::UInt32;
    case 13:
      return DType::UInt64;
    case 16:
      return DType::BFloat16;
    default:
      return std::nullopt;
  }
}

int64_t dtype_to_onnx(DType dt) {
  switch (dt) {
    case DType::Float32:
      return 1;
    case DType::UInt8:
      return 2;
    case DType::Int8:
      return 3;
    case DType::UInt16:
      return 4;
    case DType::Int16:
      return 5;
    case DType::Int32:
      return 6;
    case DType::Int64:
      return 7;
    case DType::Bool:
      return 9;
    case DType::Float16:
      return 10;
    case DType::Float64:
      return 11;
    case DType::UInt32:
      return 12;
    case DType::UInt64:
      return 13;
    case DType::BFloat16:
      return 16;
  }
  return 0;
}

std::string onnx_dtype_name(int64_t code) {
  if (code >= 0 && code < static_cast<int64_t>(kNames.size())) return kNames[code];
  return "type code " + std::to_string(code);
}

}  // namespace braze::graph
