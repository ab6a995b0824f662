// The compile script behind braze::Engine::compile and the CLI, one step after another:
// import → graph passes → precision → fusion plan → kernels generated and compiled. Internal
// (not installed): the public API is include/braze/braze.h.
#pragma once

#include <braze/braze.h>

#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/engine.h"
#include "runtime/gpu/engine_file.h"

namespace braze::api {

struct ModelSource {
  std::string path;       // an ONNX file, or
  std::string bytes;      // a serialized ModelProto (path empty)
  std::string model_dir;  // bytes: where external data lies
};

struct LoadedModel {
  frontend::ImportResult imported;
  std::map<std::string, int> imported_ops;  // op counts before the passes
  graph::passes::PipelineReport passes;
};

struct Dumps {
  std::ostream* graph = nullptr;   // the graph as imported
  std::ostream* passes = nullptr;  // after each pass
};

// Imports (UserError for an engine file, naming it) and runs the pass pipeline.
LoadedModel load_model(const ModelSource& src, const std::map<std::string, Shape>& shapes,
                       const Dumps& dumps = {});

// Whether CompileOptions::dump asks for `what` (graph, passes, cuda, ptx) and has a stream.
bool wants_dump(const CompileOptions& o, const char* what);

// UserError unless fp32, tf32, fp16 or bf16.
void check_precision(const std::string& precision);
// The graph the GPU runs at `precision`: `g` itself for fp32 and tf32, else a converted
// copy (float32 interface kept, computed in float16 / bfloat16) through the pass pipeline.
graph::Graph at_precision(const graph::Graph& g, const std::string& precision);
// Whether `precision` asks codegen for tf32 tensor-core GEMMs (codegen::Target::tf32).
bool tf32_gemms(const std::string& precision);

struct BuildRequest {
  std::string arch;  // empty: the device's, else sm_90
  std::string precision = "fp32";
  bool fuse = true;
  bool use_cache = true;
  bool tune = false;
  std::string tuning_cache;
  bool want_ptx = false;
  bool compile = true;  // false: no NVRTC (CompileOptions::kernels)
  double compile_limit_seconds = gpu::kDefaultCompileLimitSeconds;
};

struct Built {
  std::shared_ptr<gpu::Engine> engine;
  gpu::BuildReport report;
  std::vector<std::string> notes;  // --tune without a GPU …
};

// Plans, generates and compiles `g` at the request's precision (no GPU needed).
Built build(const graph::Graph& g, const BuildRequest& request);

// What an engine file records about its source and build.
gpu::EngineFileInfo file_info(const ModelSource& src, const gpu::Engine& engine,
                              const std::string& precision);

// The public report of an engine and its build (`build` null for an engine from a file).
CompileReport report_of(const gpu::Engine& engine, const gpu::BuildReport* build);

// --dump cuda / ptx: each kernel's generated source and PTX (the PTX kept by want_ptx).
void write_kernel_dumps(const gpu::Engine& engine, bool cuda, bool ptx, std::ostream& os);

// `engine` itself where it was compiled for this GPU's arch, else its kernels recompiled for
// it (`note` says so). Needs a GPU.
std::shared_ptr<gpu::Engine> for_this_gpu(std::shared_ptr<gpu::Engine> engine, std::string* note);

}  // namespace braze::api
