// A file mapped into memory for reading (the importer's external weights): the tensors over
// it share its pages with the page cache instead of copying them into fresh memory (the kernel
// zeroing and faulting in pages for the copy was most of an import; bench/MODELS.md, compile
// time). The mapping is private and writable: a write to a
// tensor over it copies that page, never the file. It lives while any tensor over it does.
// Caveat of any mapping: a file truncated by another process while mapped faults on access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

namespace braze::frontend {

class MappedFile {
 public:
  // The mapping of `path` (one per file, size and modification time, while any holder lives);
  // nullptr where the file cannot be mapped (the caller reads it instead).
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  MappedFile(std::byte* data, uint64_t size) : data_(data), size_(size) {}
  std::byte* data_;
  uint64_t size_;
};

}  // namespace braze::frontend
