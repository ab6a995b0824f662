// The GPU braze runs on (device 0), its primary context, and device memory.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

#include "runtime/gpu/nvrtc.h"

namespace braze::gpu {

struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  size_t memory_bytes = 0;
  int driver_version = 0;  // e.g. 13000
  size_t l2_bytes = 0;
  Arch arch() const;  // sm_XY of the device
};

// The arch braze compiles for on a device of compute capability major.minor (sm_90a on 9.0).
Arch device_arch(int cc_major, int cc_minor);

// Throws DeviceError when there is no usable GPU.
const DeviceInfo& device_info();
// Makes device 0's primary context current on the calling thread (retained once).
void make_current();

// The device memory free now, in bytes.
size_t free_device_memory();
// Throws DeviceError "out of GPU memory: `what` needs N GiB, the GPU has M GiB free" when
// `bytes` is more than the device has free: checked before allocating, so that an engine too
// big for the GPU fails up front with its size, not at the first of its allocations to fail.
void check_device_memory(size_t bytes, const std::string& what);

// An owning device allocation. `what` names it in the error when the device is out of memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes, const std::string& what = "a device buffer");
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr ptr() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t size_ = 0;
};

// An owning allocation of page-locked host memory mapped into the device's address space: the
// device writes it, and the host reads it even after a fault has lost the context.
class MappedHostBuffer {
 public:
  MappedHostBuffer() = default;
  explicit MappedHostBuffer(size_t bytes);
  ~MappedHostBuffer();
  MappedHostBuffer(MappedHostBuffer&& o) noexcept;
  MappedHostBuffer& operator=(MappedHostBuffer&& o) noexcept;
  MappedHostBuffer(const MappedHostBuffer&) = delete;
  MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;
  void* host() const { return host_; }
  CUdeviceptr device() const { return device_; }

 private:
  void* host_ = nullptr;
  CUdeviceptr device_ = 0;
};

}  // namespace braze::gpu
