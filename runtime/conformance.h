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

// Runs a prepared graph on inputs (graph-input order) and returns its outputs.
using BackendFn = std::function<std::vector<Tensor>(const graph::Graph&, const std::vector<Tensor>&)>;

struct CaseResult {
  enum class Status { Pass, Fail, Skip };
  std::string name;
  Status status = Status::Pass;
  std::string detail;  // why it failed or was skipped; notes for a pass
  double seconds = 0;
};

// Folders that are cases (hold model.onnx), found in each of `roots` (a case itself or a
// folder of cases, searched one level down), sorted by name within each root.
std::vector<std::filesystem::path> find_cases(const std::vector<std::filesystem::path>& roots);

CaseResult run_case(const std::filesystem::path& dir, const BackendFn& backend);

std::string_view status_name(CaseResult::Status s);

}  // namespace braze::runtime
