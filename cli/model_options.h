// Options every command that loads a model shares (--shapes, --dump, and how kernels are
// built), as the public API's CompileOptions.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include <braze/braze.h>

namespace braze::cli {

struct ModelOptions {
  std::string model;
  std::string shapes;             // "name:1x128,..."
  std::vector<std::string> dump;  // graph, passes, cuda, ptx

  // `what` names the positional argument ("ONNX model file" …).
  void add_to(CLI::App& cmd, const std::string& what = "ONNX model file");
  bool dumps(const std::string& what) const;
};

// How kernels are built for the GPU: --arch, --no-cache, --no-fuse.
struct BuildOptions {
  std::string arch;  // empty: the device's, else sm_90
  bool no_cache = false;
  bool no_fuse = false;
  bool tune = false;
  std::string tuning_cache;
  double compile_limit = CompileOptions{}.compile_limit_seconds;  // --compile-limit
  // fp32, tf32 (tensor-core float32 GEMMs: codegen::Target::tf32), fp16 or bf16
  // (graph::passes::convert_precision)
  std::string precision = "fp32";
  bool precision_given = false;  // --precision on the command line (fp32 included)
  void add_to(CLI::App& cmd);
};

// The public API's options for `m.model` built as `b` asks (dumps to stdout); shapes from
// --shapes win over `default_shapes` (those of given input files).
CompileOptions compile_options(const ModelOptions& m, const BuildOptions& b,
                               const std::map<std::string, Shape>& default_shapes = {});

// UserError when `m.model` is an engine file, for the commands that take ONNX models only.
void refuse_engine_file(const ModelOptions& m);

// UserError when options that only shape how a model is compiled (--shapes, --arch,
// --no-fuse, --tune, --tuning-cache, a --precision other than the engine's, fp32 too) are given for
// `m.model`, an engine compiled at `engine_precision`: they used to be ignored silently.
void refuse_build_options_for_engine(const ModelOptions& m, const BuildOptions& b,
                                     const std::string& engine_precision);

CLI::Option* add_precision_option(CLI::App& cmd, std::string& precision);

// Names of the backends a command can run a model on (run, diff, conformance): reference,
// gpu, gpu-unfused, emulator, emulator-unfused.
std::vector<std::string> backend_names();
struct BackendChoice {
  Backend backend;
  bool fuse;
};
BackendChoice backend_choice(
    const std::string& name);  // UserError for a name not in backend_names()

}  // namespace braze::cli
