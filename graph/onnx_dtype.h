// ONNX's TensorProto.DataType numbering. Op attributes use it (Cast's "to", EyeLike's
// "dtype"), so it belongs to op semantics; only the numbers live here, not protobuf types.
#pragma once

#include <braze/dtype.h>

#include <cstdint>
#include <optional>
#include <string>

namespace braze::graph {

std::optional<DType> dtype_from_onnx(int64_t code);  // nullopt for types braze lacks
int64_t dtype_to_onnx(DType dt);
std::string onnx_dtype_name(int64_t code);  // "FLOAT", "STRING", ... for messages

}  // namespace braze::graph
