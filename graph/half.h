// IEEE binary16 and bfloat16 conversions with round-to-nearest-even, NaN kept NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace braze {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp == 0) {
    if (man == 0) return bits_float(sign);
    // Subnormal: value = man * 2^-24.
    float v = static_cast<float>(man) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t float_to_half(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;  // nan
  if (abs >= 0x47800000u) {                      // >= 65536: overflow (after rounding too)
    return sign | 0x7c00u;
  }
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    // Round abs * 2^24 to the nearest integer, ties to even.
    float v = bits_float(abs) * 16777216.0f;
    uint32_t i = static_cast<uint32_t>(v);
    float frac = v - static_cast<float>(i);
    if (frac > 0.5f || (frac == 0.5f && (i & 1u))) ++i;
    return sign | static_cast<uint16_t>(i);
  }
  uint32_t exp = (abs >> 23) - 112;
  uint32_t man = abs & 0x7fffffu;
  uint32_t h = (exp << 10) | (man >> 13);
  uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into exp: correct
  return sign | static_cast<uint16_t>(h);
}

inline float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // nan
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace braze
