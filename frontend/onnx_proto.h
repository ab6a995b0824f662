// Proto-level entry points, for the importer's own files and tests. Only frontend/ (and
// its tests) include ONNX protobuf headers.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>

#include "frontend/onnx_import.h"

namespace braze::frontend {

ImportResult import_model_proto(const onnx::ModelProto& model, const ImportOptions& opts);

// Where a TensorProto's external data may be read: files inside `dir`, other than `self`, the
// model or tensor file that holds the proto (empty when it came as bytes).
struct DataScope {
  std::filesystem::path dir;
  std::filesystem::path self;
};

// TensorProto -> Tensor; external data read from within `scope`. `what` names the tensor in
// errors.
Tensor tensor_from_proto(const onnx::TensorProto& t, const DataScope& scope,
                         const std::string& what);
onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name);

// Builds a ModelProto from ONNX's text syntax (onnx::OnnxParser); UserError on a parse error.
onnx::ModelProto parse_model_text(const std::string& text);

}  // namespace braze::frontend
