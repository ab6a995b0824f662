// The public API's conformance runner over runtime/conformance on the named backends.
#include <braze/braze.h>

#include <filesystem>

#include "api/backends.h"
#include "runtime/gpu/cuda_driver.h"

namespace braze {

std::vector<std::string> find_conformance_cases(const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  for (const std::filesystem::path& p : runtime::find_cases({roots.begin(), roots.end()}))
    out.push_back(p.string());
  return out;
}

ConformanceResult run_conformance_case(const std::string& case_dir, Backend backend, bool fuse) {
  if (backend == Backend::Auto) backend = gpu::gpu_available() ? Backend::Gpu : Backend::Reference;
  const runtime::CaseResult r = runtime::run_case(case_dir, api::make_backend(backend, fuse));
  return {r.name, std::string(runtime::status_name(r.status)), r.detail, r.fallbacks, r.seconds};
}

}  // namespace braze
