// Run-time compilation of generated CUDA C++ with NVRTC, to CUBIN for one architecture.
// Works without a GPU: the architecture comes from the device or from --arch.
#pragma once

#include <string>
#include <vector>

namespace braze::gpu {

struct Arch {
  int major = 9;
  int minor = 0;
  bool accelerated = false;                 // sm_90a features (wgmma, setmaxnreg)
  std::string name() const;                 // "sm_90" / "sm_90a"
  static Arch parse(const std::string& s);  // "sm_90", "sm_90a", "90" (UserError otherwise)
};

struct Compiled {
  std::string cubin;
  std::string ptx;  // only when asked for
  std::string log;  // NVRTC's log (warnings)
};

// "13.0"
std::string nvrtc_version();
// The options NVRTC gets for `arch` (part of the kernel cache key).
std::vector<std::string> nvrtc_options(const Arch& arch);
// How long one kernel's compile may run by default (--compile-limit): far beyond any kernel
// braze generates (seconds), short of a build that seems to hang.
inline constexpr double kDefaultCompileLimitSeconds = 600;

// Compiles `source` (one translation unit) for `arch`. On failure throws InternalError with
// the NVRTC log and the generated part of the source (after "// ---- generated ----").
// `extra_options` follow nvrtc_options(arch) (tests: "--ptxas-options=-v" puts ptxas's
// register and spill report in the log). A compile still running after `limit_seconds` is
// cancelled (NVRTC's flow callback) and is a UserError naming the kernel and the limit.
Compiled nvrtc_compile(const std::string& source, const std::string& name, const Arch& arch,
                       bool want_ptx, const std::vector<std::string>& extra_options = {},
                       double limit_seconds = kDefaultCompileLimitSeconds);

}  // namespace braze::gpu
