// braze::Engine: the compile script (api/pipeline.h) behind a handle.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "api/engine_impl.h"
#include "api/pipeline.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"

namespace braze {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::shared_ptr<const Engine::Impl> compile_source(const api::ModelSource& src,
                                                   const CompileOptions& o) {
  api::check_precision(o.precision);
  for (const std::string& d : o.dump)
    if (d != "graph" && d != "passes" && d != "cuda" && d != "ptx")
      throw UserError(fmt::format("dump '{}': expected graph, passes, cuda or ptx", d));
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, Shape> shapes(o.shapes.begin(), o.shapes.end());
  api::Dumps d;
  if (api::wants_dump(o, "graph")) d.graph = o.dump_to;
  if (api::wants_dump(o, "passes")) d.passes = o.dump_to;
  api::LoadedModel m = api::load_model(src, shapes, d);
  const double import_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  api::BuildRequest r;
  r.arch = o.arch;
  r.precision = o.precision;
  r.fuse = o.fuse;
  r.use_cache = o.use_cache;
  r.tune = o.tune;
  r.tuning_cache = o.tuning_cache;
  r.want_ptx = api::wants_dump(o, "ptx");
  r.compile_limit_seconds = o.compile_limit_seconds;
  r.compile = o.kernels;
  api::Built b = api::build(m.imported.graph, r);
  const double build_s = seconds_since(t1);
  if (api::wants_dump(o, "cuda") || api::wants_dump(o, "ptx"))
    api::write_kernel_dumps(*b.engine, api::wants_dump(o, "cuda"), api::wants_dump(o, "ptx"),
                            *o.dump_to);
  auto impl = std::make_shared<Engine::Impl>();
  impl->notes = m.imported.notes;
  impl->notes.insert(impl->notes.end(), b.notes.begin(), b.notes.end());
  for (const gpu::Step& s : b.engine->steps())
    if (!s.kernel) impl->notes.push_back("runs on the CPU reference: " + s.fallback_reason);
  impl->info = api::file_info(src, *b.engine, o.precision);
  impl->report = api::report_of(*b.engine, &b.report);
  impl->report.import_seconds = import_s;
  impl->report.build_seconds = build_s;
  impl->report.model_hash = impl->info.model_hash;
  impl->engine = std::move(b.engine);
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

bool gpu_available() { return gpu::gpu_available(); }
std::string gpu_name() { return gpu::gpu_available() ? gpu::device_info().name : ""; }
std::string gpu_unavailable_reason() {
  return gpu::gpu_available() ? "" : gpu::gpu_unavailable_reason();
}
std::string version() { return BRAZE_VERSION; }

}  // namespace braze
