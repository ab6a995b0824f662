// The persistent tuning cache: the autotuner's winners as JSON, keyed by the kernel's signature
// (its default source's name: ops, shapes, dtypes and the device helpers hashed in), the device
// name, the NVRTC version and, at --precision tf32, "tf32". A cache hit never re-times.
//
// Several processes (or threads) may tune into one file at once: save() takes an exclusive lock
// on "<file>.lock", re-reads the file, lays over it only the entries this instance put, and
// renames a temporary file into place, so no reader sees a torn file and no writer's entries
// are lost to another's.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/kernel.h"

namespace braze::gpu {

class TuningCache {
 public:
  explicit TuningCache(std::filesystem::path path);
  static std::filesystem::path default_path();  // <cache dir>/tuning.json
  // The tunables stored for `key`, if they are one of `space` (the kernel's candidates now):
  // an entry written by another version of braze, or edited by hand, is not used.
  std::optional<codegen::Tunables> find(const std::string& key,
                                        const std::vector<codegen::Tunables>& space) const;
  void put(const std::string& key, const codegen::Tunables& t, double median_us, size_t candidates);
  void save() const;
  const std::filesystem::path& path() const { return path_; }

  using Entries =
      std::map<std::string, std::pair<codegen::Tunables, std::string>>;  // key -> (tunables, note)

 private:
  std::filesystem::path path_;
  Entries entries_;
  std::set<std::string> put_;  // keys put by this instance: what save() writes over the file
};

}  // namespace braze::gpu
