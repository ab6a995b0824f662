// The backends a conformance case's prepared graph runs on (braze::run_conformance_case).
// Internal.
#pragma once

#include <braze/braze.h>

#include "runtime/conformance.h"

namespace braze::api {

// The graph as given on the reference; its kernels (fused unless `fuse` is false) on the GPU
// (DeviceError without one) or generated for the CPU emulator. Auto is not a choice here.
runtime::BackendFn make_backend(Backend backend, bool fuse);

}  // namespace braze::api
