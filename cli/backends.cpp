#include "cli/backends.h"

#include <braze/error.h>

#include <fmt/format.h>

#include "runtime/reference_executor.h"

namespace braze::cli {

std::vector<std::string> backend_names() { return {"reference"}; }

runtime::BackendFn make_backend(const std::string& name) {
  if (name == "reference")
    return [](const graph::Graph& g, const std::vector<Tensor>& in) { return runtime::run_reference(g, in); };
  throw UserError(fmt::format("unknown backend '{}' (choose from: {})", name, fmt::join(backend_names(), ", ")));
}

}  // namespace braze::cli
