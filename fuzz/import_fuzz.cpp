// libFuzzer target over the compile path without a GPU: model bytes -> import -> passes ->
// precision -> plan -> codegen (CUDA source generated, NVRTC not run). Each input is compiled at
// fp32 or, with an odd length, at fp16. braze's errors (bad input told apart) are expected
// outcomes; a crash, a sanitizer report, an exception of another type, a hang or a runaway
// allocation is a finding. scripts/fuzz.sh builds and runs it.
#include <braze/braze.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

namespace {

// An empty folder: external data named by a mutated model resolves here and finds nothing.
std::string empty_folder() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "braze_import_fuzz";
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = empty_folder();
  braze::CompileOptions o;
  o.kernels = false;
  o.use_cache = false;
  o.arch = "sm_90";
  o.precision = size % 2 ? "fp16" : "fp32";
  try {
    braze::Engine::compile_bytes(std::string(reinterpret_cast<const char*>(data), size), o, dir);
  } catch (const braze::Error&) {
  } catch (const std::bad_alloc&) {
  }
  return 0;
}
