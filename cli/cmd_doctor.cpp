// braze doctor: the health check. Reports the driver, the device, NVRTC and the kernel
// cache, then compiles and runs a vector-copy kernel and prints the bandwidth it measured.
// Without a GPU it says so, checks what it can (NVRTC, the cache) and exits 1.
#include <braze/error.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/gpu_build.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/kernel_cache.h"
#include "runtime/gpu/nvrtc.h"

namespace braze::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCopyKernel = R"(
// ---- generated ----
extern "C" __global__ void __launch_bounds__(256) braze_doctor_copy(const float4* __restrict__ in,
                                                                   float4* __restrict__ out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = in[i];
}
)";

struct DoctorOptions {
  size_t megabytes = 1024;
  int iters = 20;
};

int run_doctor(const DoctorOptions& o) {
  std::cout << fmt::format("braze {}\nNVRTC {}\n", BRAZE_VERSION, gpu::nvrtc_version());
  fs::path cache = gpu::default_cache_dir();
  size_t entries = 0, bytes = 0;
  std::error_code ec;
  if (fs::is_directory(cache / "kernels", ec))
    for (const auto& e : fs::directory_iterator(cache / "kernels", ec))
      if (e.path().extension() == ".cubin") ++entries, bytes += e.file_size(ec);
  std::cout << fmt::format("kernel cache {}: {} kernels, {}\n", (cache / "kernels").string(), entries,
                           human_bytes(static_cast<double>(bytes)));
  bool gpu_ok = gpu::gpu_available();
  gpu::Arch arch = gpu_ok ? gpu::device_info().arch() : gpu::Arch::parse("sm_90");
  auto t0 = std::chrono::steady_clock::now();
  gpu::Compiled c = gpu::nvrtc_compile(kCopyKernel, "braze_doctor_copy", arch, false);
  double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("NVRTC compiled the copy kernel for {} in {:.0f} ms ({} bytes of CUBIN)\n", arch.name(),
                           compile_ms, c.cubin.size());
  if (!gpu_ok) {
    std::cout << "GPU: none — " << gpu::gpu_unavailable_reason() << "\n";
    std::cout << "braze can import, compile (braze compile --arch sm_90) and run models on the CPU reference here.\n";
    return 1;
  }
  const gpu::DeviceInfo& d = gpu::device_info();
  std::cout << fmt::format("driver {}.{}\ndevice 0: {}, {} ({} SMs, {} memory, {} L2)\n", d.driver_version / 1000,
                           d.driver_version % 1000 / 10, d.name, arch.name(), d.sms,
                           human_bytes(static_cast<double>(d.memory_bytes)), human_bytes(static_cast<double>(d.l2_bytes)));
  gpu::make_current();
  CUmodule mod;
  CUfunction fn;
  BRAZE_CU(cuModuleLoadData, &mod, c.cubin.data());
  BRAZE_CU(cuModuleGetFunction, &fn, mod, "braze_doctor_copy");
  const size_t size = o.megabytes << 20;
  gpu::DeviceBuffer src(size), dst(size);
  BRAZE_CU(cuMemsetD8, src.ptr(), 0x3C, size);
  BRAZE_CU(cuMemsetD8, dst.ptr(), 0, size);
  long long n = static_cast<long long>(size / 16);
  CUdeviceptr ps = src.ptr(), pd = dst.ptr();
  void* args[] = {&ps, &pd, &n};
  unsigned blocks = static_cast<unsigned>(std::min<long long>((n + 255) / 256, d.sms * 32LL));
  CUevent e0, e1;
  BRAZE_CU(cuEventCreate, &e0, CU_EVENT_DEFAULT);
  BRAZE_CU(cuEventCreate, &e1, CU_EVENT_DEFAULT);
  std::vector<float> ms;
  for (int i = 0; i < o.iters + 3; ++i) {
    BRAZE_CU(cuEventRecord, e0, nullptr);
    BRAZE_CU(cuLaunchKernel, fn, blocks, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr);
    BRAZE_CU(cuEventRecord, e1, nullptr);
    BRAZE_CU(cuEventSynchronize, e1);
    float t = 0;
    BRAZE_CU(cuEventElapsedTime, &t, e0, e1);
    if (i >= 3) ms.push_back(t);  // the first launches are warm-up
  }
  std::vector<unsigned char> check(4096);
  BRAZE_CU(cuMemcpyDtoH, check.data(), dst.ptr() + size - check.size(), check.size());
  bool copied = std::all_of(check.begin(), check.end(), [](unsigned char b) { return b == 0x3C; });
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  double gbs = 2.0 * static_cast<double>(size) / (median * 1e-3) / 1e9;
  std::cout << fmt::format("copy {} (read + write {}): median {:.3f} ms of {} runs -> {:.0f} GB/s{}\n",
                           human_bytes(static_cast<double>(size)), human_bytes(2.0 * static_cast<double>(size)), median,
                           ms.size(), gbs, copied ? "" : "  (WRONG RESULT)");
  gpu::driver().cuEventDestroy(e0);
  gpu::driver().cuEventDestroy(e1);
  gpu::driver().cuModuleUnload(mod);
  return copied ? 0 : 1;
}

}  // namespace

void add_doctor(CLI::App& app, Runner& run) {
  auto o = std::make_shared<DoctorOptions>();
  CLI::App* cmd = app.add_subcommand("doctor", "check the driver, GPU, NVRTC and kernel cache; measure copy bandwidth");
  cmd->add_option("--megabytes", o->megabytes, "size of the copied buffer in MiB (default 1024)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  cmd->add_option("--iters", o->iters, "timed copies (default 20)")->check(CLI::Range(1, 1000000));
  cmd->callback([o, &run] { run = [o] { return run_doctor(*o); }; });
}

}  // namespace braze::cli
