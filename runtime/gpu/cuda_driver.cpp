#include "runtime/gpu/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

namespace braze::gpu {

namespace {

#define BRAZE_STR2(x) #x
#define BRAZE_STR(x) BRAZE_STR2(x)

struct Loaded {
  DriverApi api;
  std::string error;  // empty when usable
  int devices = 0;
};

const Loaded& loaded() {
  static Loaded l = [] {
    Loaded r;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      r.error = "no CUDA driver on this machine (libcuda.so.1 not found)";
      return r;
    }
#define BRAZE_LOAD_FN(name)                                                    \
  r.api.name = reinterpret_cast<decltype(&::name)>(dlsym(h, BRAZE_STR(name))); \
  if (!r.api.name && r.error.empty())                                          \
    r.error = "the CUDA driver lacks " BRAZE_STR(name) " (driver too old?)";
    BRAZE_CUDA_DRIVER_FUNCTIONS(BRAZE_LOAD_FN)
#undef BRAZE_LOAD_FN
    if (!r.error.empty()) return r;
    CUresult res = r.api.cuInit(0);
    if (res != CUDA_SUCCESS) {
      const char* name = nullptr;
      r.api.cuGetErrorName(res, &name);
      r.error =
          fmt::format("the CUDA driver did not initialise ({})", name ? name : "unknown error");
      return r;
    }
    if (r.api.cuDeviceGetCount(&r.devices) != CUDA_SUCCESS || r.devices == 0)
      r.error = "the CUDA driver reports no GPU";
    return r;
  }();
  return l;
}

}  // namespace

const DriverApi& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw DeviceError(l.error);
  return l.api;
}

bool gpu_available() { return loaded().error.empty(); }

std::string gpu_unavailable_reason() { return loaded().error; }

void throw_cuda_error(CUresult r, const char* call, const char* file, int line) {
  const char* name = nullptr;
  const char* desc = nullptr;
  const DriverApi& api = loaded().api;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(r, &desc);
  throw CudaError(r,
                  fmt::format("CUDA error {} ({}) in {} at {}:{}", name ? name : std::to_string(r),
                              desc ? desc : "no description", call, file, line));
}

bool is_kernel_fault(CUresult code) {
  switch (code) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
      return true;
    default:
      return false;
  }
}

}  // namespace braze::gpu
