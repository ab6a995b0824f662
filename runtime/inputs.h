// Model inputs for runs: read from files (.pb / .npy, or a folder of them) and matched to
// the graph's inputs by name or position, or drawn at random from a seed.
#pragma once

#include <braze/tensor.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::runtime {

struct RandomSpec {     // the seed is random_tensor's argument
  int64_t int_min = 0;  // integers drawn from [int_min, int_max], both included
  int64_t int_max = 9;
  double float_lo = -1.0;  // floats from [float_lo, float_hi)
  double float_hi = 1.0;
};

// Fresh random values, never all zeros (bool: fair coin). UserError when an integer dtype
// cannot hold [int_min, int_max] or the range is empty.
Tensor random_tensor(DType dt, const Shape& shape, uint64_t seed, const RandomSpec& spec);

// Expands `paths` (files, or folders holding input_N.pb or *.npy files) to tensor files in
// order, then reads them. Names come from .pb files or from .npy file stems.
struct InputFile {
  std::string name;
  Tensor tensor;
  std::string path;  // the file it came from, for messages
};
// A folder holding no such files is an error unless allow_none.
std::vector<InputFile> read_input_files(const std::vector<std::filesystem::path>& paths,
                                        const std::string& prefix = "input_",
                                        bool allow_none = false);

// Orders `files` to match the graph-input names `names`: by name when every file carries a
// name the model knows, by position when none does. UserError on a count mismatch, and when
// some files name inputs and others name none (a stray file beside the inputs).
std::vector<Tensor> match_inputs(const std::vector<std::string>& names,
                                 std::vector<InputFile> files);

}  // namespace braze::runtime
