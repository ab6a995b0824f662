// Loading a model through import and the pass pipeline with the command's options, for the
// commands that still work on the internal graph (inspect, diff, bench, conformance).
#pragma once

#include <map>
#include <string>

#include "api/pipeline.h"
#include "cli/model_options.h"

namespace braze::cli {

using api::at_precision;
using api::LoadedModel;
using api::tf32_gemms;

// Imports (notes to stderr), runs the pass pipeline, and dumps as asked. Shapes given by
// --shapes win over `default_shapes` (e.g. the shapes of given input files).
LoadedModel load_model(const ModelOptions& opts, const std::map<std::string, Shape>& default_shapes = {});

}  // namespace braze::cli
