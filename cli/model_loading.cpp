#include "cli/model_loading.h"

#include <iostream>

#include <fmt/format.h>

#include "frontend/onnx_import.h"
#include "runtime/gpu/engine_file.h"

namespace braze::cli {

LoadedModel load_model(const ModelOptions& opts, const std::map<std::string, Shape>& default_shapes) {
  std::map<std::string, Shape> shapes = default_shapes;
  for (auto& [k, v] : frontend::parse_shape_spec(opts.shapes)) shapes[k] = v;
  // bench and run take engines before they get here; the other commands take models only.
  if (gpu::is_engine_file(opts.model))
    throw UserError(fmt::format("{} is a braze engine file; this command takes the ONNX model it was compiled from",
                                opts.model));
  api::ModelSource src;
  src.path = opts.model;
  api::Dumps dumps;
  if (opts.dumps("graph")) dumps.graph = &std::cout;
  if (opts.dumps("passes")) dumps.passes = &std::cout;
  LoadedModel m = api::load_model(src, shapes, dumps);
  for (const std::string& n : m.imported.notes) std::cerr << "note: " << n << "\n";
  return m;
}

}  // namespace braze::cli
