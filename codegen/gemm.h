// What the two GEMM schedules share (internal to codegen/): the product's sizes, the
// epilogue chain after it, and the code that finishes one output element. gemm.cpp holds
// the register-blocked SIMT schedule and dispatches; gemm_tc.cpp the tensor-core one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/emitter.h"
#include "codegen/kernel.h"
#include "fusion/plan.h"
#include "graph/ir.h"

namespace braze::codegen {

// The product's node and sizes: C[b] (m x nn) = op(A[b]) (m x k) * op(B[b]) (k x nn).
struct GemmDims {
  const graph::Node* node = nullptr;
  bool ta = false, tb = false, a_vec = false, b_vec = false;
  double alpha = 1, beta = 1;
  int64_t m = 0, k = 0, nn = 0, batches = 1;
  Shape out_batch;
};
std::optional<GemmDims> gemm_dims(const graph::Graph& g, const fusion::Group& group,
                                  std::string* why_not);

// Coordinates of an operand with batch dims `in_batch` (aligned right to the output's
// batch shape `out_batch`) for output batch index "b", followed by `tail`.
std::vector<std::string> operand_coords(const Shape& out_batch, const Shape& in_batch,
                                        std::vector<std::string> tail);

// The group's output at the end of the epilogue chain from the product, and the
// coordinates (over "b", "i", "j") where product element (b, i, j) lands in it.
struct GemmEpilogue {
  graph::ValueId out = graph::kNoValue;
  std::vector<std::string> out_coords;
};
std::optional<GemmEpilogue> gemm_epilogue(const graph::Graph& g, const fusion::Group& group,
                                          const GemmDims& d, std::string* why_not);

// An emitter for the group whose product reads as the local "acc".
Emitter gemm_emitter(const graph::Graph& g, const fusion::Group& group, const GemmDims& d);

// Emits the statements finishing output element (b, i, j) from `sum`, the float/double
// product before alpha: alpha and Gemm's beta * C, the epilogue chain, the store. "b",
// "i" and "j" are in scope, in range. May throw graph::CudaUnsupported.
void emit_gemm_store(Emitter& e, const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                     const std::string& sum);
// The same without the store: returns the output's value (in its compute type).
std::string emit_gemm_value(Emitter& e, const graph::Graph& g, const GemmDims& d,
                            const GemmEpilogue& epi, const std::string& sum);

// The tensor-core schedule (gemm_tc.cpp): float16 / bfloat16 products, and float32 ones
// when target.tf32. Empty when it applies to the group on `target`, else why not.
std::string gemm_tc_unsupported(const graph::Graph& g, const fusion::Group& group,
                                const GemmDims& d, const Target& target);
// Its search space ("tc" = 1), heuristic default first.
std::vector<Tunables> gemm_tc_candidates(const graph::Graph& g, const GemmDims& d,
                                         const Target& target);
std::optional<Kernel> gemm_tc_kernel(const graph::Graph& g, const fusion::Group& group,
                                     const GemmDims& d, const GemmEpilogue& epi,
                                     const Target& target, const Tunables& tune,
                                     std::string* why_not);

}  // namespace braze::codegen
