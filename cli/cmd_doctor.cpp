// braze doctor: the health check (braze::check_system). Reports the driver, the device, NVRTC
// and the kernel cache, then compiles and runs a vector-copy kernel and prints the bandwidth
// it measured. Without a GPU it says so, checks what it can (NVRTC, the cache) and exits 1.
#include <braze/braze.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/build_summary.h"
#include "cli/commands.h"

namespace braze::cli {

namespace {

struct DoctorOptions {
  size_t megabytes = 1024;
  int iters = 20;
};

int run_doctor(const DoctorOptions& o) {
  const SystemReport r = check_system(o.megabytes << 20, o.iters);
  std::cout << fmt::format("braze {}\nNVRTC {}\n", r.version, r.nvrtc_version);
  std::cout << fmt::format("kernel cache {}: {} kernels, {}\n", r.kernel_cache, r.cached_kernels,
                           human_bytes(static_cast<double>(r.cached_bytes)));
  std::cout << fmt::format(
      "NVRTC compiled the copy kernel for {} in {:.0f} ms ({} bytes of CUBIN)\n", r.compiled_for,
      r.compile_ms, r.cubin_bytes);
  if (!r.gpu) {
    std::cout << "GPU: none — " << r.gpu_unavailable_reason << "\n";
    std::cout << "braze can import, compile (braze compile --arch sm_90) and run models on the CPU "
                 "reference here.\n";
    return 1;
  }
  std::cout << fmt::format("driver {}.{}\ndevice 0: {}, {} ({} SMs, {} memory, {} L2)\n",
                           r.driver_version / 1000, r.driver_version % 1000 / 10, r.gpu_name,
                           r.gpu_arch, r.sms, human_bytes(static_cast<double>(r.memory_bytes)),
                           human_bytes(static_cast<double>(r.l2_bytes)));
  const double size = static_cast<double>(r.copy_bytes);
  std::cout << fmt::format(
      "copy {} (read + write {}): median {:.3f} ms of {} runs -> {:.0f} GB/s{}\n",
      human_bytes(size), human_bytes(2.0 * size), r.copy_median_ms, r.copy_runs, r.copy_gbs,
      r.copy_correct ? "" : "  (WRONG RESULT)");
  return r.copy_correct ? 0 : 1;
}

}  // namespace

void add_doctor(CLI::App& app, Runner& run) {
  auto o = std::make_shared<DoctorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "doctor", "check the driver, GPU, NVRTC and kernel cache; measure copy bandwidth");
  cmd->add_option("--megabytes", o->megabytes, "size of the copied buffer in MiB (default 1024)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  cmd->add_option("--iters", o->iters, "timed copies (default 20)")->check(CLI::Range(1, 1000000));
  cmd->callback([o, &run] { run = [o] { return run_doctor(*o); }; });
}

}  // namespace braze::cli
