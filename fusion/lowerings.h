// What code generation can generate for each node, as far as grouping needs to know. Codegen
// implements it (codegen/lowering.h, from its per-op lowering table); fusion sees only this
// interface, so it decides from the op's FusionKind and these answers, never from CUDA text,
// and the dependency stays one-way.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/ir.h"

namespace braze::fusion {

class Lowerings {
 public:
  virtual ~Lowerings() = default;
  // An element-wise op codegen inlines as one expression of its operands.
  virtual bool pointwise(const graph::Node& n) const = 0;
  // An op whose output element codegen writes as loads of its inputs at computed coordinates
  // (layout and indexing ops, and loop ops such as pooling).
  virtual bool index_map(const graph::Node& n) const = 0;
  // A layout op that also maps forward (input coordinate to output coordinate), so a kernel
  // computing its elements in the input's order (a GEMM tile) can store them where it puts
  // them.
  virtual bool forward_map(const graph::Node& n) const = 0;
  // A loop op (an index map) with a lane-parallel form: codegen computes a vector of its
  // outputs along one dimension at a time where that is the kernel's innermost (a depthwise
  // convolution's or a pooling's channels, channels-last).
  virtual bool lanes(const graph::Node& n) const = 0;
  // A reduction or normalisation codegen runs as passes over rows of input 0.
  virtual bool rows(const graph::Node& n) const = 0;
  // The axes of input 0 (at its own shape) those rows reduce, ascending; nullopt where this
  // node's row program views input 0 as another shape or has no pass over the row.
  virtual std::optional<std::vector<int64_t>> row_axes(const graph::Graph& g,
                                                       const graph::Node& n) const = 0;
};

}  // namespace braze::fusion
