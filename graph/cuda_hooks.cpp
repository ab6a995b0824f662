#include "graph/cuda_hooks.h"

#include <cmath>

#include <fmt/format.h>

namespace braze::graph {

std::string cuda_compute_type(DType dt) {
  if (dt == DType::Float64) return "double";
  if (is_float(dt)) return "float";
  if (dt == DType::Bool) return "bool";
  if (is_unsigned_int(dt)) return "unsigned long long";
  return "long long";
}

std::string cuda_storage_type(DType dt) {
  switch (dt) {
    case DType::Float32: return "float";
    case DType::Float16: return "__half";
    case DType::BFloat16: return "__nv_bfloat16";
    case DType::Float64: return "double";
    case DType::Int64: return "long long";
    case DType::Int32: return "int";
    case DType::Int16: return "short";
    case DType::Int8: return "signed char";
    case DType::UInt64: return "unsigned long long";
    case DType::UInt32: return "unsigned int";
    case DType::UInt16: return "unsigned short";
    case DType::UInt8: return "unsigned char";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::string cuda_math(const std::string& type, const std::string& fn) {
  return type == "float" ? fn + "f" : fn;
}

std::string cuda_literal(const std::string& type, double v) {
  if (type == "bool") return v != 0 ? "true" : "false";
  if (type == "long long") return fmt::format("{}LL", static_cast<long long>(v));
  if (type == "unsigned long long") return fmt::format("{}ULL", static_cast<unsigned long long>(v));
  bool f = type == "float";
  if (std::isnan(v)) return f ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v)) {
    std::string inf = f ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
    return v > 0 ? inf : "(-" + inf + ")";
  }
  if (f) return fmt::format("{:.9g}f", static_cast<float>(v));
  std::string s = fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace braze::graph
