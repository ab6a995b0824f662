// Index maps (graph/index_map.h) as CUDA: the only code that turns a data-movement op's map into
// kernel text. A fused kernel reads the op's output element through render_index_map (loads of
// its inputs at the map's coordinates, branches only where the map has regions); a GEMM
// epilogue stores through an op by the map's inverse (forward_coords), which exists for maps
// that permute dims or keep elements in order.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda_hooks.h"
#include "graph/index_map.h"

namespace braze::codegen {

// What ctx's node's index map is built from: its inputs' shapes and constant values.
graph::IndexMapArgs index_map_args(const CudaIndexCtx& ctx);

// The value of ctx's node's output ctx.output_index() at the output coordinate, through map m.
std::string render_index_map(CudaIndexCtx& ctx, const graph::IndexMap& m);

// The output coordinates of the element at input-0 coordinates `in` of a node whose map is a
// permutation or keeps the elements in order (InternalError otherwise).
std::vector<std::string> forward_coords(const graph::IndexMap& m,
                                        const std::vector<std::string>& in, const Shape& in_shape,
                                        const Shape& out_shape);

}  // namespace braze::codegen
