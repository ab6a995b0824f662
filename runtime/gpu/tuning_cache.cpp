#include "runtime/gpu/tuning_cache.h"

#include <braze/error.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/gpu/kernel_cache.h"

namespace braze::gpu {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The file's entries; a missing or damaged file reads as none (it is rebuilt).
TuningCache::Entries read_entries(const fs::path& path) {
  TuningCache::Entries entries;
  std::ifstream in(path);
  if (!in) return entries;
  try {
    json j = json::parse(in);
    for (const auto& [key, val] : j.at("kernels").items())
      entries[key] = {val.at("tunables").get<codegen::Tunables>(), val.value("note", "")};
  } catch (const json::exception&) {
    entries.clear();
  }
  return entries;
}

// An exclusive flock on "<path>.lock" for the lifetime of the object.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) {
    fs::path lock = path;
    lock += ".lock";
    fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw UserError(fmt::format("tuning cache {}: cannot create its lock file", path.string()));
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) {
        ::close(fd_);
        throw UserError(fmt::format("tuning cache {}: cannot lock it", path.string()));
      }
  }
  ~FileLock() { ::close(fd_); }  // closing releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

TuningCache::TuningCache(fs::path path) : path_(std::move(path)), entries_(read_entries(path_)) {}

fs::path TuningCache::default_path() { return default_cache_dir() / "tuning.json"; }

std::optional<codegen::Tunables> TuningCache::find(
    const std::string& key, const std::vector<codegen::Tunables>& space) const {
  auto it = entries_.find(key);
  if (it == entries_.end() ||
      std::find(space.begin(), space.end(), it->second.first) == space.end())
    return std::nullopt;
  return it->second.first;
}

void TuningCache::put(const std::string& key, const codegen::Tunables& t, double median_us,
                      size_t candidates) {
  entries_[key] = {t, fmt::format("{:.2f} us, best of {} candidates", median_us, candidates)};
  put_.insert(key);
}

void TuningCache::save() const {
  std::error_code ec;
  if (!path_.parent_path().empty()) fs::create_directories(path_.parent_path(), ec);
  FileLock lock(path_);
  Entries merged = read_entries(path_);
  for (const std::string& key : put_) merged[key] = entries_.at(key);
  json kernels = json::object();
  for (const auto& [k, v] : merged) kernels[k] = {{"tunables", v.first}, {"note", v.second}};
  fs::path tmp = path_;
  tmp += fmt::format(".tmp.{}.{}", ::getpid(),
                     std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp);
    if (out) out << json{{"format", 1}, {"kernels", kernels}}.dump(1) << "\n";
    if (!out) {
      fs::remove(tmp, ec);
      throw UserError(fmt::format("tuning cache {}: cannot write", path_.string()));
    }
  }
  fs::rename(tmp, path_, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UserError(
        fmt::format("tuning cache {}: cannot write ({})", path_.string(), ec.message()));
  }
}

}  // namespace braze::gpu
