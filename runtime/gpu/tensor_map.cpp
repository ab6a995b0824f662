#include "runtime/gpu/tensor_map.h"

#include <fmt/format.h>

#include "braze/error.h"
#include "runtime/gpu/cuda_driver.h"

namespace braze::gpu {

CUtensorMap encode_tensor_map(const codegen::TensorMap& m, CUdeviceptr base) {
  if (m.dtype != DType::Float16 && m.dtype != DType::BFloat16)
    throw InternalError(fmt::format("tensor map of {} elements", dtype_name(m.dtype)));
  if (base % 16 != 0 || m.strides[0] % 16 != 0 || m.strides[1] % 16 != 0)
    throw DeviceError(fmt::format(
        "TMA needs 16-byte aligned tensors and strides (address {:#x}, strides {} and {} bytes)",
        base, m.strides[0], m.strides[1]));
  CUtensorMap map;
  const cuuint64_t dims[3] = {m.dims[0], m.dims[1], m.dims[2]};
  const cuuint64_t strides[2] = {m.strides[0], m.strides[1]};
  const cuuint32_t box[3] = {m.box[0], m.box[1], m.box[2]};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  BRAZE_CU(cuTensorMapEncodeTiled, &map,
           m.dtype == DType::Float16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                     : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
           3, reinterpret_cast<void*>(base), dims, strides, box, element_strides,
           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

std::vector<CUtensorMap> encode_tensor_maps(const codegen::Kernel& k,
                                            const std::vector<CUdeviceptr>& params) {
  std::vector<CUtensorMap> maps;
  for (const codegen::TensorMap& m : k.tensor_maps) {
    if (m.param >= params.size())
      throw InternalError(fmt::format("kernel {}: tensor map of parameter {} of {}", k.name, m.param,
                                      params.size()));
    maps.push_back(encode_tensor_map(m, params[m.param]));
  }
  return maps;
}

}  // namespace braze::gpu
