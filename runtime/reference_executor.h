// The reference executor: runs the unfused graph on the CPU through the registry's
// reference implementations (double accumulation where it matters). It is the oracle for
// tests and for `braze diff`, and the fallback for ops without a GPU kernel.
#pragma once

#include <braze/tensor.h>

#include <vector>

#include "graph/ir.h"

namespace braze::runtime {

// Checks `inputs` against the graph's inputs (count, dtype, shape) with a UserError naming
// the input on a mismatch.
void check_inputs(const graph::Graph& g, const std::vector<Tensor>& inputs);

// Runs g on `inputs` (in graph-input order); returns the graph outputs in order. When
// `values` is given, it receives every value computed (indexed by ValueId; constants and
// inputs included) and intermediates are kept alive; otherwise each is freed after its
// last use.
std::vector<Tensor> run_reference(const graph::Graph& g, const std::vector<Tensor>& inputs,
                                  std::vector<Tensor>* values = nullptr);

}  // namespace braze::runtime
