// Inputs for commands that run a model (run, diff): --inputs files or seeded random ones.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "runtime/inputs.h"

namespace braze::cli {

struct InputOptions {
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  std::vector<int64_t> int_range;

  void add_to(CLI::App& cmd);
  runtime::RandomSpec spec() const;
};

// The given input files ordered to match `names`, with their shapes by name (to specialise
// symbolic dims); empty when none were given.
struct GivenInputs {
  std::vector<Tensor> tensors;
  std::map<std::string, Shape> shapes;
};
GivenInputs read_given_inputs(const InputOptions& o, const std::vector<std::string>& names);

// Input names of an ONNX model, from a quick import.
std::vector<std::string> model_input_names(const std::string& model);
// Input names of a graph (an engine's).
std::vector<std::string> input_names(const graph::Graph& g);

// The given tensors, or random ones for g's inputs (with a note each on stderr).
std::vector<Tensor> inputs_for(const graph::Graph& g, const InputOptions& o, const GivenInputs& given);

}  // namespace braze::cli
