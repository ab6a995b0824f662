#include "runtime/gpu/nvrtc.h"

#include <braze/error.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace braze::gpu {

std::string Arch::name() const {
  return fmt::format("sm_{}{}{}", major, minor, accelerated ? "a" : "");
}

Arch Arch::parse(const std::string& s) {
  std::string t = s.rfind("sm_", 0) == 0 ? s.substr(3) : s;
  Arch a;
  a.accelerated = !t.empty() && t.back() == 'a';
  if (a.accelerated) t.pop_back();
  if (t.size() < 2 || t.size() > 3 || t.find_first_not_of("0123456789") != std::string::npos)
    throw UserError(fmt::format("--arch '{}' is not an architecture like sm_90 or sm_90a", s));
  a.major = std::stoi(t.substr(0, t.size() - 1));
  a.minor = t.back() - '0';
  if (a.major < 7)
    throw UnsupportedError(fmt::format("--arch {}: braze targets sm_70 and newer", s));
  // What this NVRTC compiles for (sm_72 or sm_91 would fail in every kernel), and the
  // architecture-specific "a" features from sm_90 on.
  int count = 0;
  std::vector<int> known;
  if (nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
    known.resize(static_cast<size_t>(count));
    if (nvrtcGetSupportedArchs(known.data()) != NVRTC_SUCCESS) known.clear();
  }
  const int number = a.major * 10 + a.minor;
  if (!known.empty() && std::find(known.begin(), known.end(), number) == known.end()) {
    std::string list;
    for (int k : known)
      if (k >= 70) list += fmt::format("{}sm_{}", list.empty() ? "" : ", ", k);
    throw UserError(fmt::format("--arch {}: NVRTC {} does not compile for it (it does for {})", s,
                                nvrtc_version(), list));
  }
  if (a.accelerated && a.major < 9)
    throw UserError(fmt::format(
        "--arch {}: architecture-specific features (the 'a' suffix) begin at sm_90a", s));
  return a;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

std::vector<std::string> nvrtc_options(const Arch& arch) {
  return {fmt::format("--gpu-architecture={}", arch.name()), "--std=c++17", "-default-device",
          "--include-path=" BRAZE_CUDA_INCLUDE_DIR};
}

namespace {

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS)
    throw InternalError(fmt::format("NVRTC {} failed: {}", what, nvrtcGetErrorString(r)));
}

std::string generated_part(const std::string& source) {
  size_t p = source.find("// ---- generated ----");
  return p == std::string::npos ? source : source.substr(p);
}

// NVRTC's flow callback: 1 (cancel) once the deadline `payload` points to has passed; NVRTC
// calls it from time to time during a compile (from any thread; it only reads the clock).
int past_deadline(void* payload, void*) {
  return std::chrono::steady_clock::now() >=
         *static_cast<const std::chrono::steady_clock::time_point*>(payload);
}

}  // namespace

Compiled nvrtc_compile(const std::string& source, const std::string& name, const Arch& arch,
                       bool want_ptx, const std::vector<std::string>& extra_options,
                       double limit_seconds) {
  nvrtcProgram prog;
  check(nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
        "create");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(
      &prog, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(std::clamp(limit_seconds, 0.0, 1e9)));
  check(nvrtcSetFlowCallback(prog, past_deadline,
                             const_cast<std::chrono::steady_clock::time_point*>(&deadline)),
        "flow callback");
  std::vector<std::string> opts = nvrtc_options(arch);
  opts.insert(opts.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  if (r == NVRTC_ERROR_CANCELLED)
    throw UserError(fmt::format(
        "NVRTC compiling kernel {} for {} ran past the compile limit of {} s per kernel "
        "(--compile-limit sets it)",
        name, arch.name(), limit_seconds));
  Compiled out;
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  if (log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(prog, out.log.data());
    out.log.resize(log_size - 1);
  }
  if (r != NVRTC_SUCCESS)
    throw InternalError(fmt::format("NVRTC could not compile kernel {} for {}: {}\n{}\n{}", name,
                                    arch.name(), nvrtcGetErrorString(r), out.log,
                                    generated_part(source)));
  size_t size = 0;
  check(nvrtcGetCUBINSize(prog, &size), "CUBIN size");
  out.cubin.resize(size);
  check(nvrtcGetCUBIN(prog, out.cubin.data()), "CUBIN");
  if (want_ptx) {
    check(nvrtcGetPTXSize(prog, &size), "PTX size");
    out.ptx.resize(size);
    check(nvrtcGetPTX(prog, out.ptx.data()), "PTX");
    if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  return out;
}

}  // namespace braze::gpu
