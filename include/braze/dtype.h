// Element types braze knows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace braze {

enum class DType : uint8_t {
  Float32,
  Float16,
  BFloat16,
  Float64,
  Int64,
  Int32,
  Int16,
  Int8,
  UInt64,
  UInt32,
  UInt16,
  UInt8,
  Bool,
};
inline constexpr int kNumDTypes = 13;

size_t dtype_size(DType dt);
std::string_view dtype_name(DType dt);  // "float32", "int64", ...
std::optional<DType> dtype_from_name(std::string_view name);
bool is_float(DType dt);         // float16, bfloat16, float32, float64
bool is_signed_int(DType dt);    // int8 .. int64
bool is_unsigned_int(DType dt);  // uint8 .. uint64 (not bool)
inline bool is_integer(DType dt) { return is_signed_int(dt) || is_unsigned_int(dt); }
// float16 or bfloat16: computed in float, stored in 16 bits.
inline bool is_half(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }
// The smallest and largest values an integer dtype holds (0 and 0 for the others).
int64_t int_dtype_min(DType dt);
uint64_t int_dtype_max(DType dt);

// A set of dtypes, for op type constraints.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> dts) {
    for (DType d : dts) bits_ |= bit(d);
  }
  constexpr bool contains(DType d) const { return (bits_ & bit(d)) != 0; }
  constexpr DTypeSet operator|(DTypeSet o) const { return from_bits(bits_ | o.bits_); }
  constexpr bool empty() const { return bits_ == 0; }

 private:
  static constexpr uint32_t bit(DType d) { return 1u << static_cast<unsigned>(d); }
  static constexpr DTypeSet from_bits(uint32_t b) {
    DTypeSet s;
    s.bits_ = b;
    return s;
  }
  uint32_t bits_ = 0;
};

inline constexpr DTypeSet kFloatTypes{DType::Float16, DType::BFloat16, DType::Float32,
                                      DType::Float64};
inline constexpr DTypeSet kSignedTypes{DType::Int8, DType::Int16, DType::Int32, DType::Int64};
inline constexpr DTypeSet kUnsignedTypes{DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};
inline constexpr DTypeSet kIntTypes = kSignedTypes | kUnsignedTypes;
inline constexpr DTypeSet kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr DTypeSet kAllTypes = kNumericTypes | DTypeSet{DType::Bool};
inline constexpr DTypeSet kIndexTypes{DType::Int32, DType::Int64};

}  // namespace braze
