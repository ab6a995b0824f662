// The backends a command can run a prepared graph on, by name.
#pragma once

#include <string>
#include <vector>

#include "cli/model_options.h"
#include "runtime/conformance.h"

namespace braze::cli {

// UserError naming the choices for an unknown or unavailable backend. The GPU and emulator
// backends run the graph at `precision` (fp32, tf32, fp16, bf16); the reference always runs it as
// given.
runtime::BackendFn make_backend(const std::string& name, const std::string& precision = "fp32");

}  // namespace braze::cli
