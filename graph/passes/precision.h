// Reduced precision (`--precision fp16|bf16`): a float32 model computed in float16 or
// bfloat16. Float32 graph inputs are cast down on entry and float32 graph outputs cast back
// up on exit, so callers keep the model's own interface; float32 weights and constants are
// converted (not those read as shapes or sizes, e.g. Resize's scales); dtype attributes
// naming float32 (Cast's `to`, EyeLike's `dtype`, ConstantOfShape's `value`) name the
// target; inference then re-derives every value's dtype. Integer and bool values are
// untouched. Reductions, softmax and normalisation statistics stay float32 in braze's
// kernels and the reference executor, which accumulate the half types in float / double.
// Throws UserError naming the node when an op does not take the target dtype.
#pragma once

#include <cstdint>

#include "graph/ir.h"

namespace braze::graph::passes {

// Returns the number of values of the target dtype afterwards.
int convert_precision(Graph& g, DType to);

// A float32 tensor rounded to Float16 or BFloat16 (nearest, ties to even; as float_to_half /
// float_to_bf16 in graph/half.h, in one tight loop: weights are ~10^8 elements).
Tensor round_floats(const Tensor& f32, DType to);
// The same over n floats at src into n half values at dst.
void round_floats(const float* src, uint16_t* dst, int64_t n, DType to);

// The dtype a float32 model computes in at --precision `name`: "fp32" and "tf32" keep
// float32 (tf32 is a codegen choice, not a dtype: float32 GEMMs on tensor cores with
// operands rounded to tf32, codegen::Target::tf32), "fp16" and "bf16" as named; throws
// UserError for anything else.
DType precision_dtype(const std::string& name);

}  // namespace braze::graph::passes
