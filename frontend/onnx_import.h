// ONNX importer: ModelProto -> graph::Graph for opsets 1 to 24 (graph::kMinOpset, kMaxOpset; each
// op from its oldest form the registry takes).
//
// Symbolic input dims are specialised to concrete sizes: from ImportOptions::shapes when
// given (--shapes), else 1 with a note. Each node is rewritten into its op's canonical form
// (the registry's upgrade) and its outputs' dtypes and shapes are inferred as it is added.
// Unsupported ops are reported all at once, each with its node names.
#pragma once

#include <braze/tensor.h>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/ir.h"

namespace braze::frontend {

struct ImportOptions {
  std::map<std::string, Shape> shapes;  // input name -> full shape
  std::filesystem::path model_dir;      // folder external data is read relative to
  std::filesystem::path
      model_file;  // the model's file, which external data may not name (empty: bytes)
  // When `shapes` disagrees with a dim the model fixes: false = error, true = the given
  // shape wins with a note (test data is the ground truth in conformance runs).
  bool shapes_override_model = false;
};

struct ImportResult {
  graph::Graph graph;
  std::vector<std::string> notes;  // things the user should know (dims defaulted …)
  int64_t opset = 0;               // default-domain opset
  std::string producer;            // "pytorch 2.11" …
};

// The deepest nesting of protobuf messages a model may have (a subgraph in an If's attribute
// takes three levels): protobuf's own default.
constexpr int kMaxNesting = 100;

// Reads, checks and imports the model at `path` (external data relative to its folder).
ImportResult import_model_file(const std::filesystem::path& path, ImportOptions opts = {});
// Imports a serialized ModelProto.
ImportResult import_model_bytes(std::string_view bytes, ImportOptions opts = {});

// "input_ids:1x128,mask:1x128" -> {input_ids: [1,128], mask: [1,128]}; "x:" is a scalar.
std::map<std::string, Shape> parse_shape_spec(std::string_view spec);

}  // namespace braze::frontend
