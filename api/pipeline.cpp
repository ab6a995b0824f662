#include "api/pipeline.h"

#include <braze/error.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "frontend/tensor_io.h"
#include "graph/passes/precision.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/nvrtc.h"

namespace braze::api {

void check_precision(const std::string& precision) {
  if (precision != "fp32" && precision != "tf32" && precision != "fp16" && precision != "bf16")
    throw UserError(fmt::format("precision '{}': expected fp32, tf32, fp16 or bf16", precision));
}

bool tf32_gemms(const std::string& precision) { return precision == "tf32"; }

bool wants_dump(const CompileOptions& o, const char* what) {
  return o.dump_to && std::find(o.dump.begin(), o.dump.end(), what) != o.dump.end();
}

gpu::EngineFileInfo file_info(const ModelSource& src, const gpu::Engine& engine,
                              const std::string& precision) {
  const std::string bytes = src.path.empty() ? std::string() : frontend::read_file(src.path);
  const std::string& hashed = src.path.empty() ? src.bytes : bytes;
  gpu::EngineFileInfo info;
  info.model_hash = fmt::format("{:016x}", XXH64(hashed.data(), hashed.size(), 0));
  info.model_name =
      src.path.empty() ? "(bytes)" : std::filesystem::path(src.path).filename().string();
  info.braze_version = BRAZE_VERSION;
  info.nvrtc_version = gpu::nvrtc_version();
  info.arch = engine.arch().name();
  info.precision = precision;
  return info;
}

CompileReport report_of(const gpu::Engine& engine, const gpu::BuildReport* build) {
  CompileReport r;
  for (const gpu::Step& s : engine.steps()) (s.kernel ? r.kernels : r.cpu_groups)++;
  r.arena_bytes = engine.arena_bytes();
  r.intermediate_bytes = engine.intermediate_bytes();
  r.weights_bytes = engine.weights_bytes();
  if (!build) return r;
  r.distinct = build->distinct;
  r.compiled = build->compiled;
  r.cache_hits = build->cache_hits;
  r.tuned = build->tuned;
  r.tuned_cached = build->tuned_cached;
  r.tuning = build->tuning;
  r.codegen_seconds = build->codegen_seconds;
  r.compile_seconds = build->compile_seconds;
  r.tune_seconds = build->tune_seconds;
  return r;
}

void write_kernel_dumps(const std::vector<gpu::Step>& steps, bool cuda, bool ptx,
                        std::ostream& os) {
  for (const gpu::Step& s : steps) {
    if (!s.kernel) continue;
    if (cuda) {
      const size_t p = s.kernel->source.find("// ---- generated ----");
      os << "== cuda " << s.kernel->name << " ==\n"
         << (p == std::string::npos ? s.kernel->source : s.kernel->source.substr(p)) << "\n";
    }
    if (ptx) os << "== ptx " << s.kernel->name << " ==\n" << s.ptx << "\n";
  }
}

std::shared_ptr<gpu::Engine> for_this_gpu(std::shared_ptr<gpu::Engine> engine, std::string* note) {
  const gpu::Arch dev = gpu::device_info().arch();
  // sm_90 code runs on an sm_90 device as it is; sm_90a code needs that device too.
  if (dev.major == engine->arch().major && dev.minor == engine->arch().minor) return engine;
  if (note)
    *note = fmt::format("the engine was compiled for {}, this GPU is {}: recompiling its kernels",
                        engine->arch().name(), dev.name());
  std::vector<gpu::Step> steps = engine->steps();
  gpu::Engine::compile_steps(steps, dev, gpu::default_engine_options(), nullptr);
  return gpu::Engine::assemble(engine->graph(), std::move(steps), dev);
}

}  // namespace braze::api
