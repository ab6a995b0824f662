// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that braze builds
// and runs on machines without a GPU or driver (where gpu_available() is false and every
// GPU entry point says so). Every call goes through BRAZE_CU, which throws DeviceError
// naming the call, the CUDA error and the place in the source.
#pragma once

#include <cuda.h>

#include <braze/error.h>

#include <string>

namespace braze::gpu {

// An error reported by the driver or NVRTC (out of memory, launch failure, no device …).
using DeviceError = braze::DeviceError;

// A driver call's failure, with the driver's code (throw_cuda_error).
class CudaError : public DeviceError {
 public:
  CudaError(CUresult code, const std::string& what) : DeviceError(what), code_(code) {}
  CUresult code() const { return code_; }

 private:
  CUresult code_;
};

// True for the errors a kernel raises by faulting (an illegal address or instruction, a trap,
// a misaligned access …): sticky, they leave the context unusable for the rest of the process.
bool is_kernel_fault(CUresult code);

// X-macro of the driver entry points braze uses. Names are the cuda.h macros, which expand
// to the versioned symbols (cuMemAlloc -> cuMemAlloc_v2) that dlsym must look up.
#define BRAZE_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit)                            \
  X(cuDriverGetVersion)                \
  X(cuDeviceGetCount)                  \
  X(cuDeviceGet)                       \
  X(cuDeviceGetName)                   \
  X(cuDeviceGetAttribute)              \
  X(cuDeviceTotalMem)                  \
  X(cuDevicePrimaryCtxRetain)          \
  X(cuDevicePrimaryCtxRelease)         \
  X(cuCtxSetCurrent)                   \
  X(cuCtxSynchronize)                  \
  X(cuGetErrorName)                    \
  X(cuGetErrorString)                  \
  X(cuModuleLoadData)                  \
  X(cuModuleUnload)                    \
  X(cuModuleGetFunction)               \
  X(cuFuncSetAttribute)                \
  X(cuLaunchKernel)                    \
  X(cuMemAlloc)                        \
  X(cuMemFree)                         \
  X(cuMemGetInfo)                      \
  X(cuMemcpyHtoD)                      \
  X(cuMemcpyDtoH)                      \
  X(cuMemcpyDtoD)                      \
  X(cuMemcpyHtoDAsync)                 \
  X(cuMemcpyDtoHAsync)                 \
  X(cuMemcpyDtoDAsync)                 \
  X(cuMemsetD8)                        \
  X(cuMemsetD8Async)                   \
  X(cuMemHostAlloc)                    \
  X(cuMemHostGetDevicePointer)         \
  X(cuMemFreeHost)                     \
  X(cuStreamCreate)                    \
  X(cuStreamDestroy)                   \
  X(cuStreamSynchronize)               \
  X(cuStreamBeginCapture)              \
  X(cuStreamEndCapture)                \
  X(cuGraphInstantiate)                \
  X(cuGraphExecUpdate)                 \
  X(cuGraphLaunch)                     \
  X(cuGraphExecDestroy)                \
  X(cuGraphDestroy)                    \
  X(cuEventCreate)                     \
  X(cuEventRecord)                     \
  X(cuEventSynchronize)                \
  X(cuEventElapsedTime)                \
  X(cuEventDestroy)                    \
  X(cuTensorMapEncodeIm2col)           \
  X(cuTensorMapEncodeTiled)

struct DriverApi {
#define BRAZE_DECLARE_FN(name) decltype(&::name) name = nullptr;
  BRAZE_CUDA_DRIVER_FUNCTIONS(BRAZE_DECLARE_FN)
#undef BRAZE_DECLARE_FN
};

// The loaded driver; throws DeviceError when libcuda.so.1 is absent or cuInit fails.
const DriverApi& driver();
// True when a driver loads, initialises and reports at least one device. Never throws.
bool gpu_available();
// Why gpu_available() is false ("no CUDA driver (libcuda.so.1 not found)" …), else "".
std::string gpu_unavailable_reason();

// Throws CudaError naming the call, the driver's error and the place in the source.
[[noreturn]] void throw_cuda_error(CUresult r, const char* call, const char* file, int line);

}  // namespace braze::gpu

// Calls a driver function through the loaded table, checking its result.
#define BRAZE_CU(fn, ...)                                                        \
  do {                                                                           \
    CUresult braze_cu_result_ = ::braze::gpu::driver().fn(__VA_ARGS__);          \
    if (braze_cu_result_ != CUDA_SUCCESS)                                        \
      ::braze::gpu::throw_cuda_error(braze_cu_result_, #fn, __FILE__, __LINE__); \
  } while (0)
