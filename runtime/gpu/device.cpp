#include "runtime/gpu/device.h"

#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "runtime/gpu/cuda_driver.h"

namespace braze::gpu {

namespace {

struct Context {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  DeviceInfo info;
};

const Context& context() {
  static const Context c = [] {
    Context r;
    BRAZE_CU(cuDeviceGet, &r.dev, 0);
    BRAZE_CU(cuDevicePrimaryCtxRetain, &r.ctx, r.dev);
    char name[256] = {};
    BRAZE_CU(cuDeviceGetName, name, sizeof name, r.dev);
    r.info.name = name;
    BRAZE_CU(cuDeviceGetAttribute, &r.info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
             r.dev);
    BRAZE_CU(cuDeviceGetAttribute, &r.info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
             r.dev);
    BRAZE_CU(cuDeviceGetAttribute, &r.info.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, r.dev);
    int l2 = 0;
    BRAZE_CU(cuDeviceGetAttribute, &l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, r.dev);
    r.info.l2_bytes = static_cast<size_t>(l2);
    BRAZE_CU(cuDeviceTotalMem, &r.info.memory_bytes, r.dev);
    BRAZE_CU(cuDriverGetVersion, &r.info.driver_version);
    return r;
  }();
  return c;
}

}  // namespace

Arch device_arch(int cc_major, int cc_minor) {
  Arch a;
  a.major = cc_major;
  a.minor = cc_minor;
  // Kernels for the device itself: on sm_90 with its architecture-specific features (wgmma,
  // TMA, setmaxnreg), which sm_90a code may use and runs only there.
  a.accelerated = cc_major == 9 && cc_minor == 0;
  return a;
}

Arch DeviceInfo::arch() const { return device_arch(cc_major, cc_minor); }

const DeviceInfo& device_info() { return context().info; }

void make_current() { BRAZE_CU(cuCtxSetCurrent, context().ctx); }

size_t free_device_memory() {
  make_current();
  size_t free = 0, total = 0;
  BRAZE_CU(cuMemGetInfo, &free, &total);
  return free;
}

namespace {

std::string out_of_memory(size_t bytes, size_t free, const std::string& what) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  return fmt::format(
      "out of GPU memory: {} needs {:.2f} GiB, the GPU ({}) has {:.2f} GiB free of {:.2f} GiB",
      what, static_cast<double>(bytes) / kGiB, device_info().name, static_cast<double>(free) / kGiB,
      static_cast<double>(device_info().memory_bytes) / kGiB);
}

}  // namespace

void check_device_memory(size_t bytes, const std::string& what) {
  const size_t free = free_device_memory();
  if (bytes > free) throw DeviceError(out_of_memory(bytes, free, what));
}

DeviceBuffer::DeviceBuffer(size_t bytes, const std::string& what) : size_(bytes) {
  if (bytes == 0) return;
  make_current();
  const CUresult r = driver().cuMemAlloc(&ptr_, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    ptr_ = 0;
    throw DeviceError(out_of_memory(bytes, free_device_memory(), what));
  }
  if (r != CUDA_SUCCESS) throw_cuda_error(r, "cuMemAlloc", __FILE__, __LINE__);
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver().cuMemFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_) {
  o.ptr_ = 0;
  o.size_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().cuMemFree(ptr_);
    ptr_ = o.ptr_;
    size_ = o.size_;
    o.ptr_ = 0;
    o.size_ = 0;
  }
  return *this;
}

MappedHostBuffer::MappedHostBuffer(size_t bytes) {
  make_current();
  BRAZE_CU(cuMemHostAlloc, &host_, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
  std::memset(host_, 0, bytes);
  const CUresult r = driver().cuMemHostGetDevicePointer(&device_, host_, 0);
  if (r != CUDA_SUCCESS) {
    driver().cuMemFreeHost(host_);
    host_ = nullptr;
    throw_cuda_error(r, "cuMemHostGetDevicePointer", __FILE__, __LINE__);
  }
}

MappedHostBuffer::~MappedHostBuffer() {
  if (host_) driver().cuMemFreeHost(host_);
}

MappedHostBuffer::MappedHostBuffer(MappedHostBuffer&& o) noexcept
    : host_(o.host_), device_(o.device_) {
  o.host_ = nullptr;
  o.device_ = 0;
}

MappedHostBuffer& MappedHostBuffer::operator=(MappedHostBuffer&& o) noexcept {
  if (this != &o) {
    if (host_) driver().cuMemFreeHost(host_);
    host_ = o.host_;
    device_ = o.device_;
    o.host_ = nullptr;
    o.device_ = 0;
  }
  return *this;
}

}  // namespace braze::gpu
