// What the compile script (api/compile_script.h) and the public API around it share: where a
// model comes from, the precision's checks, an engine's file record and report, its kernels
// as text. Internal (not installed): the public API is include/braze/braze.h.
#pragma once

#include <braze/braze.h>

#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "runtime/gpu/engine.h"
#include "runtime/gpu/engine_file.h"

namespace braze::api {

struct ModelSource {
  std::string path;                     // an ONNX file, or
  std::string bytes;                    // a serialized ModelProto (path empty), or
  std::string model_dir;                // bytes: where external data lies
  const graph::Graph* graph = nullptr;  // a graph imported already (conformance, tests)
};

// Whether CompileOptions::dump asks for `what` (api::dump_names()) and has a stream.
bool wants_dump(const CompileOptions& o, const char* what);

// UserError unless fp32, tf32, fp16 or bf16.
void check_precision(const std::string& precision);
// Whether `precision` asks codegen for tf32 tensor-core GEMMs (codegen::Target::tf32).
bool tf32_gemms(const std::string& precision);

// What an engine file records about its source and build.
gpu::EngineFileInfo file_info(const ModelSource& src, const gpu::Engine& engine,
                              const std::string& precision);

// The public report of an engine and its build (`build` null for an engine from a file).
CompileReport report_of(const gpu::Engine& engine, const gpu::BuildReport* build);

// --dump cuda / ptx: each kernel's generated source and PTX (the PTX kept by want_ptx).
void write_kernel_dumps(const std::vector<gpu::Step>& steps, bool cuda, bool ptx, std::ostream& os);

// `engine` itself where it was compiled for this GPU's arch, else its kernels recompiled for
// it (`note` says so). Needs a GPU.
std::shared_ptr<gpu::Engine> for_this_gpu(std::shared_ptr<gpu::Engine> engine, std::string* note);

}  // namespace braze::api
