// What the schedules that compute a row program (codegen/cuda_hooks.h: a reduction or
// normalisation's passes and outputs) share: its templates' fields filled in, and each
// pass's identity and combining function as CUDA text. The reduction schedule
// (reduction_kernel.cpp) and the wgmma GEMM's row epilogue (gemm_wgmma.cpp) use them.
#pragma once

#include <map>
#include <string>

#include "codegen/cuda_hooks.h"
#include "graph/ir.h"

namespace braze::codegen {

// `templ` with its {name} fields replaced from `fields` (InternalError naming node n for an
// unclosed or unknown field).
std::string substitute(const std::string& templ, const std::map<std::string, std::string>& fields,
                       const graph::Node& n);

// A pass's starting value and its combining function (a lambda of two `type` values).
std::string identity_of(Combine combine, ComputeType type);
std::string combiner(Combine combine, ComputeType type);

// Whether a pass map or an output expression of p uses the field {name}.
bool uses_field(const CudaRowProgram& p, const std::string& name);

}  // namespace braze::codegen
