// What planning needs of device 0 — its arch and SM count — without a CUDA context, and,
// where the NVIDIA driver's /proc files name the machine's GPUs, without the driver at all:
// remembered in the cache directory under the GPUs' UUIDs, the driver's version and the
// CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER that pick device 0. `braze compile` on a GPU
// machine spent 0.1-0.2 s in cuInit and ~0.1 s more in the driver's teardown at exit, a third
// of a warm BERT-base compile (H200 machine, 2026-12-04). Not in the identity: a GPU's MIG
// partitioning (device 0 a MIG instance of fewer SMs); the README says to delete the file
// after changing it (a stale SM count only makes tiles fit the device less well).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "runtime/gpu/nvrtc.h"

namespace braze::gpu {

struct DeviceSummary {
  Arch arch;
  int sms = 0;
  std::string name;
};

// The identity of this machine's GPUs as the driver's /proc files under `proc_root` give it
// (its version line, each GPU's model and UUID in bus order) and the environment choosing
// device 0; "" where there are none (no NVIDIA driver, or it exposes no such files).
std::string device_identity(const std::filesystem::path& proc_root = "/proc/driver/nvidia");

// Device 0's summary: from `cache_dir`/devices.json when it holds the current identity,
// else from the driver (cuInit and attribute queries, no context), then remembered there
// (best effort: an unwritable cache is no error). nullopt where there is no usable GPU.
std::optional<DeviceSummary> device_summary(
    const std::filesystem::path& cache_dir,
    const std::filesystem::path& proc_root = "/proc/driver/nvidia");

}  // namespace braze::gpu
