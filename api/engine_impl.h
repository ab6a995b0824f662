// What a braze::Engine holds (internal).
#pragma once

#include <braze/braze.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/gpu/engine.h"
#include "runtime/gpu/engine_file.h"

namespace braze {

struct Engine::Impl {
  std::shared_ptr<gpu::Engine> engine;
  gpu::EngineFileInfo info;
  std::vector<std::string> notes;
  CompileReport report;
  bool fuse = true;      // CompileOptions::fuse (an engine from a file: true)
  bool compiled = true;  // CompileOptions::kernels: its kernels compiled by NVRTC
};

struct EngineAccess {
  static const Engine::Impl& of(const Engine& e) { return *e.impl_; }
};

}  // namespace braze
