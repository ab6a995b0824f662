#include "runtime/gpu/tensor_map.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "braze/error.h"
#include "runtime/gpu/cuda_driver.h"

namespace braze::gpu {

namespace {

// Why `m` is not a map this runtime encodes, or empty.
std::string map_problem(const codegen::TensorMap& m) {
  if (m.dtype != DType::Float16 && m.dtype != DType::BFloat16 && m.dtype != DType::Float32)
    return fmt::format("tensor map of {} elements", dtype_name(m.dtype));
  const size_t rank = m.dims.size(), spatial = rank >= 2 ? rank - 2 : 0;
  if (rank < 3 || rank > 5 || m.strides.size() != rank - 1)
    return fmt::format("tensor map of rank {} ({} strides)", rank, m.strides.size());
  if (!m.im2col())
    return m.box.size() == rank
               ? ""
               : fmt::format("tiled map of rank {}, {} box dims", rank, m.box.size());
  if (m.lower.size() != spatial || m.upper.size() != spatial || m.element_strides.size() != rank)
    return fmt::format("im2col map of rank {}: {} lower and {} upper corners, {} element strides",
                       rank, m.lower.size(), m.upper.size(), m.element_strides.size());
  return "";
}

// The bytes from a map's first element to just past its last.
uint64_t extent_bytes(const codegen::TensorMap& m) {
  const uint64_t es = dtype_size(m.dtype);
  uint64_t last = (m.dims[0] - 1) * es;
  for (size_t i = 1; i < m.dims.size(); ++i) last += (m.dims[i] - 1) * m.strides[i - 1];
  return last + es;
}

// Drivers up to 13.1 now and then fail a kernel whose map covers under 128 KiB unless bit 21
// of the descriptor's second word is clear; NVIDIA's CUTLASS clears it so for tiled and
// im2col maps alike (its 4.3.4 changelog: "work around a driver bug which will cause
// occasionally errors when executing kernels").
void clear_small_map_bit(CUtensorMap& map, const codegen::TensorMap& m) {
  static const int driver = [] {
    int v = 0;
    BRAZE_CU(cuDriverGetVersion, &v);
    return v;
  }();
  for (uint64_t d : m.dims)
    if (d == 0) return;
  if (driver <= 13010 && extent_bytes(m) < 131072)
    reinterpret_cast<uint64_t*>(&map)[1] &= ~(uint64_t{1} << 21);
}

}  // namespace

CUtensorMap encode_tensor_map(const codegen::TensorMap& m, CUdeviceptr base) {
  const std::string problem = map_problem(m);
  if (!problem.empty()) throw InternalError(problem);
  const size_t rank = m.dims.size();
  const CUdeviceptr at = base + m.offset_bytes;
  bool aligned = at % 16 == 0;
  for (uint64_t s : m.strides) aligned = aligned && s % 16 == 0;
  if (!aligned)
    throw DeviceError(fmt::format(
        "TMA needs 16-byte aligned tensors and strides (address {:#x}, strides {} bytes)", at,
        fmt::join(m.strides, ", ")));
  CUtensorMap map;
  std::vector<cuuint64_t> dims(m.dims.begin(), m.dims.end()),
      strides(m.strides.begin(), m.strides.end());
  // Floats feed tf32 wgmma's only: the map's element type says so (TMA's tf32 type, 4 bytes).
  const CUtensorMapDataType type = m.dtype == DType::Float16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                   : m.dtype == DType::BFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                : CU_TENSOR_MAP_DATA_TYPE_TFLOAT32;
  const CUtensorMapSwizzle swizzle =
      m.swizzle ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
  if (m.im2col()) {
    std::vector<cuuint32_t> element_strides(m.element_strides.begin(), m.element_strides.end());
    std::vector<int> lower(m.lower.begin(), m.lower.end()), upper(m.upper.begin(), m.upper.end());
    BRAZE_CU(cuTensorMapEncodeIm2col, &map, type, static_cast<cuuint32_t>(rank),
             reinterpret_cast<void*>(at), dims.data(), strides.data(), lower.data(), upper.data(),
             m.channels, m.pixels, element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    clear_small_map_bit(map, m);
    return map;
  }
  std::vector<cuuint32_t> box(m.box.begin(), m.box.end()), element_strides(rank, 1);
  BRAZE_CU(cuTensorMapEncodeTiled, &map, type, static_cast<cuuint32_t>(rank),
           reinterpret_cast<void*>(at), dims.data(), strides.data(), box.data(),
           element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  clear_small_map_bit(map, m);
  return map;
}

std::vector<CUtensorMap> encode_tensor_maps(const codegen::Kernel& k,
                                            const std::vector<CUdeviceptr>& params) {
  std::vector<CUtensorMap> maps;
  for (const codegen::TensorMap& m : k.tensor_maps) {
    if (m.param >= params.size())
      throw InternalError(fmt::format("kernel {}: tensor map of parameter {} of {}", k.name,
                                      m.param, params.size()));
    maps.push_back(encode_tensor_map(m, params[m.param]));
  }
  return maps;
}

}  // namespace braze::gpu
