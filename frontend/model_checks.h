// Checks of a ModelProto that the protobuf parser does not make and ONNX's checker does (every
// name valid UTF-8: engine files and reports are JSON; every attribute one its operator has),
// and braze's own limit on the node count. Each failure is a UserError saying what and where.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "frontend/onnx_proto.h"
#include "graph/registry.h"

namespace braze::frontend {

// Every name of the graph (the graph's, nodes', values', attributes', initializers') and every
// string attribute value valid UTF-8.
void check_names_are_utf8(const onnx::GraphProto& graph);

// The most nodes braze imports, subgraphs' nodes included: far beyond any export seen (a
// 70-billion-parameter decoder's dynamo export has tens of thousands), and where the fusion
// pass's time would already run to hours.
constexpr int64_t kMaxNodes = 200000;

// UserError when the graph and its subgraphs hold more than kMaxNodes nodes.
void check_node_count(const onnx::GraphProto& graph);

// Every attribute of `node` named, once, and one that `op` takes at `opset`: in the registry's
// specs or in ONNX's schema of the op (which knows attributes braze reads nowhere).
void check_attributes(const onnx::NodeProto& node, const graph::OpDef& op, int opset,
                      const std::string& what);

}  // namespace braze::frontend
