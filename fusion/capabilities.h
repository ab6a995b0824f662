// What the schedules that will run a group can take at full speed, asked by the partitioner
// before it fuses a producer into a kernel. Codegen implements it (codegen/capabilities.h)
// for a target; fusion sees only this interface, so the dependency stays one-way and the
// decision follows what the schedules report, not op names.
#pragma once

#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::fusion {

class Capabilities {
 public:
  virtual ~Capabilities() = default;
  // Empty when the product `mm`, in a group of `nodes` (mm and the producers in front of its
  // operands), reads operand `operand` (0: A, 1: B) at full speed; else why not, for
  // `braze inspect`.
  virtual std::string gemm_operand(const graph::Graph& g, const std::vector<graph::NodeId>& nodes,
                                   graph::NodeId mm, int operand) const = 0;
  // True when that product runs on a tensor-core schedule and reads operand `operand` through
  // the layout ops among `nodes` as a strided view, as fast as a contiguous operand: a GEMM
  // in front of such a chain then writes its rows and leaves the layout to this view (its own
  // epilogue would store the consumer's layout with strided stores).
  virtual bool gemm_reads_view(const graph::Graph& g, const std::vector<graph::NodeId>& nodes,
                               graph::NodeId mm, int operand) const = 0;
  // Empty when one kernel runs the attention of `nodes` (its match, fusion/attention.h, with
  // the layout ops in front of Q, K and V and after the output) at full speed; else why not.
  virtual std::string attention(const graph::Graph& g,
                                const std::vector<graph::NodeId>& nodes) const {
    (void)g;
    (void)nodes;
    return "no attention schedule";
  }
};

}  // namespace braze::fusion
