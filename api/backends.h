// The backends a prepared graph runs on, by name (reference, gpu, gpu-unfused, emulator,
// emulator-unfused): for conformance cases (braze::run_conformance_case) and `braze diff`.
// Internal.
#pragma once

#include <string>
#include <vector>

#include "runtime/conformance.h"

namespace braze::api {

// UserError naming the choices for an unknown or unavailable backend. The GPU and emulator
// backends run the graph at `precision` (fp32, tf32, fp16, bf16); the reference always runs it as
// given.
runtime::BackendFn make_backend(const std::string& name, const std::string& precision = "fp32");

}  // namespace braze::api
