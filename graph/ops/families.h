// One registration function per op family; registry.cpp calls each once to build the table.
#pragma once

#include <vector>

#include "graph/registry.h"

namespace braze::graph {

void register_elementwise_ops(std::vector<OpDef>& r);    // ops/elementwise.cpp
void register_reduction_ops(std::vector<OpDef>& r);      // ops/reduction.cpp
void register_normalization_ops(std::vector<OpDef>& r);  // ops/normalization.cpp
void register_matrix_ops(std::vector<OpDef>& r);         // ops/matrix.cpp
void register_movement_ops(std::vector<OpDef>& r);       // ops/movement.cpp
void register_indexing_ops(std::vector<OpDef>& r);       // ops/indexing.cpp
void register_generator_ops(std::vector<OpDef>& r);      // ops/generator.cpp
void register_conv_pool_ops(std::vector<OpDef>& r);      // ops/conv_pool.cpp
void register_resize_ops(std::vector<OpDef>& r);         // ops/resize.cpp
void register_composite_ops(std::vector<OpDef>& r);      // ops/composite.cpp

}  // namespace braze::graph
