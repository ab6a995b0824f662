#include "frontend/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace braze::frontend {

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  static std::mutex m;
  static std::map<std::tuple<std::string, uint64_t, int64_t>, std::weak_ptr<const MappedFile>>
      open_files;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    ::close(fd);
    return nullptr;
  }
  const auto key =
      std::make_tuple(path.string(), static_cast<uint64_t>(st.st_size),
                      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
  std::lock_guard<std::mutex> lock(m);
  std::erase_if(open_files, [](const auto& kv) { return kv.second.expired(); });
  if (auto f = open_files[key].lock()) {
    ::close(fd);
    return f;
  }
  void* p =
      ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  std::shared_ptr<const MappedFile> f(
      new MappedFile(static_cast<std::byte*>(p), static_cast<uint64_t>(st.st_size)));
  open_files[key] = f;
  return f;
}

MappedFile::~MappedFile() { ::munmap(data_, static_cast<size_t>(size_)); }

}  // namespace braze::frontend
