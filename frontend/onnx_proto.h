// Proto-level entry points, for the importer's own files and tests. Only frontend/ (and
// its tests) include ONNX protobuf headers.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>

#include "frontend/onnx_import.h"

namespace braze::frontend {

ImportResult import_model_proto(const onnx::ModelProto& model, const ImportOptions& opts);

// TensorProto -> Tensor; external data read relative to model_dir (must stay inside it).
// `what` names the tensor in errors.
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::filesystem::path& model_dir,
                         const std::string& what);
onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name);

// Builds a ModelProto from ONNX's text syntax (onnx::OnnxParser); UserError on a parse error.
onnx::ModelProto parse_model_text(const std::string& text);

}  // namespace braze::frontend
