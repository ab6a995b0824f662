// What `braze inspect` shows of a fusion plan: each kernel with its kind and ONNX nodes,
// the values crossing kernel boundaries with their bytes, and the merges the partitioner
// refused with the reason — as text, JSON, Graphviz DOT, or a standalone HTML page. Internal
// (braze::inspect).
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "fusion/plan.h"
#include "graph/ir.h"
#include "runtime/gpu/engine.h"

namespace braze::api {

struct PlanView {
  struct Kernel {
    std::string name;
    std::string kind;      // pointwise, reduction, gemm, opaque, fallback
    std::string schedule;  // a GEMM's wgmma, mma or simt, attention's flash, a convolution or
                           // pooling loop's direct; else the kind (codegen::schedule_name)
    std::vector<graph::NodeId> nodes;
    std::string fallback;                 // why it runs on the CPU reference
    std::string split;                    // why codegen split a fused group
    std::map<std::string, int> tunables;  // the schedule's parameters (codegen::Tunables)
    std::array<unsigned, 3> grid{}, block{};
  };
  struct Crossing {
    graph::ValueId value;
    uint64_t bytes;
    int producer;                // kernel index
    std::vector<int> consumers;  // kernel indices
    bool graph_output;
  };
  std::vector<Kernel> kernels;
  std::vector<Crossing> crossings;
  std::vector<std::string> refused;  // "'a' (Exp) -> 'b' (Relu): why"
  std::vector<int> kernel_of;        // by NodeId
};

PlanView make_plan_view(const graph::Graph& g, const fusion::Plan& plan,
                        const std::vector<gpu::Step>& steps);

void print_plan_text(std::ostream& os, const graph::Graph& g, const PlanView& v);
nlohmann::json plan_json(const graph::Graph& g, const PlanView& v);
void write_plan_dot(std::ostream& os, const graph::Graph& g, const PlanView& v);
void write_plan_html(std::ostream& os, const graph::Graph& g, const PlanView& v,
                     const std::string& title);

}  // namespace braze::api
