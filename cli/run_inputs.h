// Inputs for commands that run a model (run, diff, bench): --inputs files or seeded random
// ones, on the public API.
#pragma once

#include <CLI/CLI.hpp>

#include <braze/braze.h>

#include <map>
#include <string>
#include <vector>

namespace braze::cli {

struct InputOptions {
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  std::vector<int64_t> int_range;

  void add_to(CLI::App& cmd);
  RandomOptions random() const;  // UserError for a malformed --int-range
};

// The given input files ordered to match `names`, with their shapes by name (to specialise
// symbolic dims); empty when none were given.
struct GivenInputs {
  std::vector<Tensor> tensors;
  std::map<std::string, Shape> shapes;
};
GivenInputs read_given_inputs(const InputOptions& o, const std::vector<std::string>& names);

// Names of `infos`, in order.
std::vector<std::string> names_of(const std::vector<TensorInfo>& infos);

// The given tensors, or random ones for `inputs` (with a note each on stderr).
std::vector<Tensor> inputs_for(const std::vector<TensorInfo>& inputs, const InputOptions& o,
                               const GivenInputs& given);

}  // namespace braze::cli
