// TMA descriptors for the kernels that ask for them (codegen::Kernel::tensor_maps): encoded
// on the host with the driver's cuTensorMapEncodeTiled (cuTensorMapEncodeIm2col for an
// implicit-GEMM convolution's activations) from the kernel's parameter addresses, then passed
// by value after the pointers and the error flag.
#pragma once

#include <cuda.h>

#include <vector>

#include "codegen/kernel.h"

namespace braze::gpu {

// `m` over the tensor at `base`; throws DeviceError naming what the driver refused (a base
// not 16-byte aligned, a stride not a multiple of 16 …).
CUtensorMap encode_tensor_map(const codegen::TensorMap& m, CUdeviceptr base);

// Kernel k's maps, its parameters at `params` (in Kernel::params order).
std::vector<CUtensorMap> encode_tensor_maps(const codegen::Kernel& k,
                                            const std::vector<CUdeviceptr>& params);

}  // namespace braze::gpu
