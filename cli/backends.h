// The backends a command can run a prepared graph on, by name.
#pragma once

#include <string>
#include <vector>

#include "runtime/conformance.h"

namespace braze::cli {

std::vector<std::string> backend_names();
// UserError naming the choices for an unknown or unavailable backend.
runtime::BackendFn make_backend(const std::string& name);

}  // namespace braze::cli
