// Options every command that loads a model shares (--shapes, --dump), and loading a model
// through import and the pass pipeline with them.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "graph/passes/pipeline.h"

namespace braze::cli {

struct ModelOptions {
  std::string model;
  std::string shapes;  // "name:1x128,..."
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
  void add_to(CLI::App& cmd);
};

struct LoadedModel {
  frontend::ImportResult imported;
  std::map<std::string, int> imported_ops;  // op counts before the passes
  graph::passes::PipelineReport passes;
};

// Imports (notes to stderr), runs the pass pipeline, and dumps as asked. Shapes given by
// --shapes win over `default_shapes` (e.g. the shapes of given input files).
LoadedModel load_model(const ModelOptions& opts, const std::map<std::string, Shape>& default_shapes = {});

}  // namespace braze::cli
