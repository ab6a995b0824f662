#include "runtime/gpu/kernel_cache.h"

#include <unistd.h>
#include <xxhash.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include <fmt/format.h>

namespace braze::gpu {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'B', 'R', 'Z', 'C', 'U', 'B', '0', '1'};

struct Header {
  char magic[8];
  uint64_t key;
  uint64_t size;
  uint64_t checksum;
};

}  // namespace

fs::path default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "braze";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "braze";
  return fs::path(".braze-cache");
}

KernelCache::KernelCache(fs::path dir) : dir_(std::move(dir)) {}

KernelCache KernelCache::disabled() {
  KernelCache c{fs::path()};
  c.enabled_ = false;
  return c;
}

uint64_t KernelCache::key(const std::string& source, const std::string& arch,
                          const std::string& nvrtc_version, const std::string& options) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (const std::string* part : {&source, &arch, &nvrtc_version, &options}) {
    uint64_t n = part->size();
    XXH3_64bits_update(st, &n, sizeof n);  // length-prefixed, so parts cannot run together
    XXH3_64bits_update(st, part->data(), part->size());
  }
  uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

fs::path KernelCache::path_for(uint64_t key) const {
  return dir_ / "kernels" / fmt::format("{:016x}.cubin", key);
}

std::optional<std::string> KernelCache::load(uint64_t key) const {
  if (!enabled_) return std::nullopt;
  std::ifstream in(path_for(key), std::ios::binary);
  if (!in) return std::nullopt;
  Header h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return std::nullopt;
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.key != key ||
      h.size > (uint64_t{1} << 30))
    return std::nullopt;
  std::string data(h.size, '\0');
  if (!in.read(data.data(), static_cast<std::streamsize>(h.size))) return std::nullopt;
  if (in.peek() != std::char_traits<char>::eof()) return std::nullopt;  // trailing bytes
  if (XXH3_64bits(data.data(), data.size()) != h.checksum) return std::nullopt;
  return data;
}

void KernelCache::store(uint64_t key, const std::string& cubin) const {
  if (!enabled_) return;
  std::error_code ec;
  fs::path final_path = path_for(key);
  fs::create_directories(final_path.parent_path(), ec);
  if (ec) return;
  fs::path tmp = final_path;
  tmp += fmt::format(".tmp.{}.{}", ::getpid(),
                     std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.key = key;
    h.size = cubin.size();
    h.checksum = XXH3_64bits(cubin.data(), cubin.size());
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, final_path, ec);  // atomic on one filesystem
  if (ec) fs::remove(tmp, ec);
}

}  // namespace braze::gpu
