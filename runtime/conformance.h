// The conformance runner over cases in the ONNX backend-test layout:
//   <case>/model.onnx, <case>/test_data_set_N/input_K.pb, output_K.pb
// Each case is imported, specialised to its inputs' shapes (and its shape-argument inputs'
// values, as a static-shape compiler must), optimised by the pass pipeline, run on the
// chosen backend and compared with the expected outputs (runtime/compare.h).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <braze/tensor.h>

#include "graph/ir.h"

namespace braze::runtime {

// What a backend returns: the graph outputs, and the groups it ran on the CPU reference
// instead of the device ("node 'x' (TopK): no GPU kernel"), so no fallback is silent.
struct BackendRun {
  std::vector<Tensor> outputs;
  std::vector<std::string> fallbacks;
};
// Runs a prepared graph on inputs (graph-input order).
using BackendFn = std::function<BackendRun(const graph::Graph&, const std::vector<Tensor>&)>;

struct CaseResult {
  enum class Status { Pass, Fail, Skip };
  std::string name;
  Status status = Status::Pass;
  std::string detail;                  // why it failed or was skipped; notes for a pass
  std::vector<std::string> fallbacks;  // groups run on the CPU instead of the backend
  double seconds = 0;
};

// Folders that are cases (hold model.onnx), found in each of `roots` (a case itself or a
// folder of cases, searched one level down), sorted by name within each root.
std::vector<std::filesystem::path> find_cases(const std::vector<std::filesystem::path>& roots);

CaseResult run_case(const std::filesystem::path& dir, const BackendFn& backend);

// One data set of a case made ready to run: the graph imported with the data's shapes,
// shape-argument inputs bound, passes run; the remaining inputs and the expected outputs.
struct PreparedSet {
  graph::Graph graph;
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;
  std::string notes;  // "specialised on …"
};
PreparedSet prepare_data_set(const std::filesystem::path& model, const std::filesystem::path& set);

std::string_view status_name(CaseResult::Status s);

}  // namespace braze::runtime
