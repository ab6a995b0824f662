// The lowering table's families: each adds the entries of one group of registry ops
// (graph/ops/<family>.cpp holds what those ops mean, codegen/lower/<family>.cpp how they
// become CUDA).
#pragma once

#include "codegen/lowering.h"

namespace braze::codegen {

void lower_elementwise_ops(LoweringTable& t);
void lower_movement_ops(LoweringTable& t);
void lower_indexing_ops(LoweringTable& t);
void lower_generator_ops(LoweringTable& t);
void lower_matrix_ops(LoweringTable& t);
void lower_conv_pool_ops(LoweringTable& t);
void lower_resize_ops(LoweringTable& t);
void lower_reduction_ops(LoweringTable& t);
void lower_normalization_ops(LoweringTable& t);

}  // namespace braze::codegen
