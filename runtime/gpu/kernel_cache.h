// The on-disk kernel cache: compiled CUBINs under $XDG_CACHE_HOME/braze/kernels (else
// ~/.cache/braze/kernels), keyed by a hash of (source, arch, NVRTC version, options).
// Entries are written to a temporary file and renamed into place, so a reader never sees
// a partial one; each carries a header with its key and a checksum, and an entry that
// fails either check is treated as a miss and rebuilt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace braze::gpu {

// $XDG_CACHE_HOME/braze, else $HOME/.cache/braze, else ./.braze-cache.
std::filesystem::path default_cache_dir();

class KernelCache {
 public:
  explicit KernelCache(std::filesystem::path dir);
  // A disabled cache (--no-cache): every lookup misses and nothing is written.
  static KernelCache disabled();

  static uint64_t key(const std::string& source, const std::string& arch,
                      const std::string& nvrtc_version, const std::string& options);
  std::optional<std::string> load(uint64_t key) const;       // nullopt on a miss or a corrupt entry
  void store(uint64_t key, const std::string& cubin) const;  // best effort: I/O errors ignored
  std::filesystem::path path_for(uint64_t key) const;
  const std::filesystem::path& dir() const { return dir_; }
  bool enabled() const { return enabled_; }

 private:
  std::filesystem::path dir_;
  bool enabled_ = true;
};

}  // namespace braze::gpu
