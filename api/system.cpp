// braze::check_system: what `braze doctor` reports.
#include <braze/braze.h>

#include <chrono>
#include <filesystem>

#include "runtime/gpu/bench.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/kernel_cache.h"
#include "runtime/gpu/nvrtc.h"

namespace braze {

namespace fs = std::filesystem;

SystemReport check_system(size_t copy_bytes, int copy_runs) {
  SystemReport r;
  r.version = BRAZE_VERSION;
  r.nvrtc_version = gpu::nvrtc_version();
  const fs::path kernels = gpu::default_cache_dir() / "kernels";
  r.kernel_cache = kernels.string();
  std::error_code ec;
  if (fs::is_directory(kernels, ec))
    for (const auto& e : fs::directory_iterator(kernels, ec))
      if (e.path().extension() == ".cubin") ++r.cached_kernels, r.cached_bytes += e.file_size(ec);
  r.gpu = gpu::gpu_available();
  const gpu::Arch arch = r.gpu ? gpu::device_info().arch() : gpu::Arch::parse("sm_90");
  r.compiled_for = arch.name();
  const auto t0 = std::chrono::steady_clock::now();
  const gpu::Compiled copy_kernel = gpu::compile_copy_kernel(arch);
  r.cubin_bytes = copy_kernel.cubin.size();
  r.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!r.gpu) {
    r.gpu_unavailable_reason = gpu::gpu_unavailable_reason();
    return r;
  }
  const gpu::DeviceInfo& d = gpu::device_info();
  r.gpu_name = d.name;
  r.gpu_arch = arch.name();
  r.driver_version = d.driver_version;
  r.sms = d.sms;
  r.memory_bytes = d.memory_bytes;
  r.l2_bytes = d.l2_bytes;
  const gpu::CopyBandwidth c = gpu::measure_copy_bandwidth(copy_bytes, copy_runs, &copy_kernel);
  r.copy_bytes = copy_bytes;
  r.copy_runs = copy_runs;
  r.copy_median_ms = c.median_ms;
  r.copy_gbs = c.gbs;
  r.copy_correct = c.correct;
  return r;
}

}  // namespace braze
