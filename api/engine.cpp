// braze::Engine: the compile script (api/compile_script.h) behind a handle.

#include <fmt/format.h>

#include "api/engine_impl.h"
#include "api/compile_script.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"

namespace braze {

namespace {

std::shared_ptr<const Engine::Impl> compile_source(const api::ModelSource& src,
                                                   const CompileOptions& o) {
  api::ScriptOptions so;
  so.compile = o;
  api::Script s = api::compile_script(src, so);
  auto impl = std::make_shared<Engine::Impl>();
  impl->notes = std::move(s.notes);
  for (const gpu::Step& st : s.engine->steps())
    if (!st.kernel) impl->notes.push_back("runs on the CPU reference: " + st.fallback_reason);
  impl->info = api::file_info(src, *s.engine, o.precision);
  impl->report = api::report_of(*s.engine, &s.report);
  impl->report.steps = s.log;
  for (const CompileStep& step : s.log)
    (step.name == "import" || step.name == "passes" ? impl->report.import_seconds
                                                    : impl->report.build_seconds) += step.seconds;
  impl->report.model_hash = impl->info.model_hash;
  impl->engine = std::move(s.engine);
  impl->fuse = o.fuse;
  impl->compiled = o.kernels;
  return impl;
}

std::vector<TensorInfo> infos(const graph::Graph& g, const std::vector<graph::ValueId>& ids) {
  std::vector<TensorInfo> out;
  for (graph::ValueId v : ids) {
    const graph::Value& val = g.value(v);
    out.push_back({val.name, val.dtype, val.shape});
  }
  return out;
}

std::vector<std::string> names(const std::vector<TensorInfo>& infos) {
  std::vector<std::string> out;
  for (const TensorInfo& t : infos) out.push_back(t.name);
  return out;
}

}  // namespace

Engine Engine::compile(const std::string& onnx_path, const CompileOptions& options) {
  api::ModelSource src;
  src.path = onnx_path;
  return Engine(compile_source(src, options));
}

Engine Engine::compile_bytes(const std::string& onnx_bytes, const CompileOptions& options,
                             const std::string& model_dir) {
  api::ModelSource src;
  src.bytes = onnx_bytes;
  src.model_dir = model_dir;
  return Engine(compile_source(src, options));
}

Engine Engine::load(const std::string& engine_path) {
  gpu::LoadedEngine le = gpu::load_engine(engine_path);
  auto impl = std::make_shared<Impl>();
  impl->engine = std::move(le.engine);
  impl->info = std::move(le.info);
  impl->report = api::report_of(*impl->engine, nullptr);
  impl->report.model_hash = impl->info.model_hash;
  return Engine(std::move(impl));
}

void Engine::save(const std::string& engine_path) const {
  if (!impl_->compiled)
    throw UserError(
        fmt::format("{}: the engine was compiled without kernels (CompileOptions::kernels false); "
                    "compile it with them to save it",
                    engine_path));
  gpu::save_engine(engine_path, *impl_->engine, impl_->info);
}

std::vector<TensorInfo> Engine::inputs() const {
  const graph::Graph& g = impl_->engine->graph();
  return infos(g, g.inputs());
}

std::vector<TensorInfo> Engine::outputs() const {
  const graph::Graph& g = impl_->engine->graph();
  std::vector<graph::ValueId> ids;
  for (const auto& o : g.outputs()) ids.push_back(o.value);
  std::vector<TensorInfo> out = infos(g, ids);
  for (size_t i = 0; i < out.size(); ++i) out[i].name = g.outputs()[i].name;
  return out;
}

std::vector<std::string> Engine::input_names() const { return names(inputs()); }
std::vector<std::string> Engine::output_names() const { return names(outputs()); }
std::string Engine::model_name() const { return impl_->info.model_name; }
std::string Engine::arch() const { return impl_->engine->arch().name(); }
std::string Engine::precision() const { return impl_->info.precision; }
const std::vector<std::string>& Engine::notes() const { return impl_->notes; }
const CompileReport& Engine::report() const { return impl_->report; }
bool is_engine_file(const std::string& path) { return gpu::is_engine_file(path); }

size_t Engine::kernels() const {
  size_t n = 0;
  for (const gpu::Step& s : impl_->engine->steps()) n += s.kernel ? 1 : 0;
  return n;
}

std::vector<std::string> compile_dump_names() { return api::dump_names(); }
bool gpu_available() { return gpu::gpu_available(); }
std::string gpu_name() { return gpu::gpu_available() ? gpu::device_info().name : ""; }
std::string gpu_unavailable_reason() {
  return gpu::gpu_available() ? "" : gpu::gpu_unavailable_reason();
}
std::string version() { return BRAZE_VERSION; }

}  // namespace braze
