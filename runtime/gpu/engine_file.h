// The .braze engine file: a self-contained artifact of `braze compile`. It holds the
// optimised graph (nodes, attributes, weights), the plan, every kernel's source, launch
// rule and CUBIN, the target arch and NVRTC version, the --precision it was built at, and
// the source model's hash, so
// `braze run FILE.braze` needs neither the model nor a compiler (unless the device's arch
// differs, when it recompiles the embedded sources).
//
// Layout: "BRAZEENG", u32 format version, u64 header length, the header (JSON), then a
// blob area the header points into by offset and size (weights, CUBINs).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "runtime/gpu/engine.h"

namespace braze::gpu {

struct EngineFileInfo {
  std::string model_hash;  // xxh64 of the source model file, hex
  std::string model_name;
  std::string braze_version;
  std::string nvrtc_version;
  std::string arch;
  // --precision at build: fp32, tf32 (float32 GEMM kernels on tensor cores), fp16, bf16.
  // Files written before it was recorded read as fp32.
  std::string precision = "fp32";
};

void save_engine(const std::filesystem::path& path, const Engine& engine,
                 const EngineFileInfo& info);

struct LoadedEngine {
  std::shared_ptr<Engine> engine;
  EngineFileInfo info;
};
// UserError when the file is not a braze engine or is damaged.
LoadedEngine load_engine(const std::filesystem::path& path);
// The same from the file's bytes (`what` names it in errors). verify_checksum false: for the
// fuzz target, whose mutations must reach the header past the checksum.
LoadedEngine read_engine(const std::string& bytes, const std::string& what,
                         bool verify_checksum = true);

bool is_engine_file(const std::filesystem::path& path);  // by its first bytes

}  // namespace braze::gpu
