#include <braze/error.h>
#include <braze/tensor.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <new>

#include <sys/mman.h>

#include <fmt/format.h>

#include "graph/half.h"
#include "graph/host_memory.h"

namespace braze {

int64_t checked_numel(const Shape& shape, const std::string& what) {
  if (shape.size() > kMaxRank)
    throw UserError(fmt::format("{} has rank {}; braze handles tensors of rank at most {}", what,
                                shape.size(), kMaxRank));
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw UserError(fmt::format("{} has a negative dimension: {}", what, shape_str(shape)));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw UserError(
          fmt::format("{} has dimensions whose product overflows: {}", what, shape_str(shape)));
    n *= d;
  }
  return n;
}

uint64_t checked_nbytes(DType dt, const Shape& shape, const std::string& what) {
  uint64_t n = static_cast<uint64_t>(checked_numel(shape, what));
  uint64_t es = dtype_size(dt);
  if (n > kMaxTensorBytes / es)
    throw UserError(fmt::format("{} of shape {} and dtype {} is larger than the {} GiB limit", what,
                                shape_str(shape), dtype_name(dt), kMaxTensorBytes >> 30));
  return n * es;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    st[i] = st[i + 1] * shape[i + 1];
  return st;
}

Tensor::Tensor(DType dtype, Shape shape) : Tensor(uninitialized(dtype, std::move(shape))) {
  std::memset(buffer_.get(), 0, nbytes() > 0 ? nbytes() : 1);
}

namespace {

constexpr uint64_t kHugePage = uint64_t{2} << 20;

// Storage of `bytes` (at least 4 MiB) in transparent huge pages where the kernel gives them:
// a BERT-base compile fills ~300 MB of fresh tensors (the rounded, k-major weights), 64 K
// page faults in 4 KiB pages, a few hundred in 2 MiB ones (152 K minor faults a compile
// -> 88 K on the GPU machine, 145 K -> 81 K here). What stays is the kernel zeroing the fresh
// pages (half of a warm compile's CPU time on the CPU machine, by perf). An anonymous mapping
// aligned to 2 MiB, advised MADV_HUGEPAGE (the kernel's default "madvise" mode gives huge
// pages only to such ranges); nullptr where it cannot be mapped (the caller uses new[]).
std::shared_ptr<std::byte[]> huge_page_storage(uint64_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uint64_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* m =
      ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const auto at = reinterpret_cast<uintptr_t>(m);
  const uintptr_t aligned = (at + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > at) ::munmap(m, aligned - at);  // the unaligned head and tail go back
  if (const uintptr_t end = at + size + kHugePage; end > aligned + size)
    ::munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  void* p = reinterpret_cast<void*>(aligned);
  ::madvise(p, size, MADV_HUGEPAGE);  // advice: without it the range keeps 4 KiB pages
  return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p),
                                      [size](std::byte* q) { ::munmap(q, size); });
#else
  (void)bytes;
  return nullptr;
#endif
}

}  // namespace

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  uint64_t bytes = checked_nbytes(t.dtype_, t.shape_);
  t.numel_ = static_cast<int64_t>(bytes / dtype_size(t.dtype_));
  auto what = [&] {
    return fmt::format("a tensor of shape {} and dtype {}", shape_str(t.shape_), dtype_name(dtype));
  };
  if (bytes >= kCheckedHostBytes) check_host_memory(bytes, what());
  if (bytes >= 2 * kHugePage) t.buffer_ = huge_page_storage(bytes);
  try {
    if (!t.buffer_) t.buffer_ = std::shared_ptr<std::byte[]>(new std::byte[bytes > 0 ? bytes : 1]);
  } catch (const std::bad_alloc&) {
    throw UserError(
        fmt::format("{} ({} bytes): host memory could not be allocated", what(), bytes));
  }
  return t;
}

Tensor Tensor::over(DType dtype, Shape shape, std::shared_ptr<const void> owner, std::byte* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = static_cast<int64_t>(checked_nbytes(t.dtype_, t.shape_) / dtype_size(t.dtype_));
  t.buffer_ = std::shared_ptr<std::byte[]>(std::move(owner), data);
  return t;
}

Tensor Tensor::scalar_of(DType dtype, double value) {
  Tensor t(dtype, {});
  t.set_f64(0, value);
  return t;
}

Tensor Tensor::from_int64s(const std::vector<int64_t>& values, Shape shape) {
  if (shape.empty() && values.size() != 1) shape = {static_cast<int64_t>(values.size())};
  Tensor t(DType::Int64, std::move(shape));
  BRAZE_CHECK(static_cast<size_t>(t.numel()) == values.size(), "from_int64s size mismatch");
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * 8);
  return t;
}

Tensor Tensor::metadata_only(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = checked_numel(shape);
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::from_floats(const std::vector<float>& values, Shape shape) {
  Tensor t(DType::Float32, std::move(shape));
  BRAZE_CHECK(static_cast<size_t>(t.numel()) == values.size(), "from_floats size mismatch");
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * 4);
  return t;
}

namespace {

template <class I>
I saturate_cast(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

// Floating value to an unsigned type, saturating at both ends (NaN -> 0), as the GPU's
// conversion instructions do.
template <class U>
U float_to_unsigned(double v) {
  return saturate_cast<U>(v);
}

}  // namespace

double Tensor::get_f64(int64_t i) const {
  const std::byte* p = buffer_.get();
  switch (dtype_) {
    case DType::Float32:
      return reinterpret_cast<const float*>(p)[i];
    case DType::Float16:
      return half_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::BFloat16:
      return bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::Float64:
      return reinterpret_cast<const double*>(p)[i];
    case DType::Int64:
      return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case DType::Int32:
      return reinterpret_cast<const int32_t*>(p)[i];
    case DType::Int16:
      return reinterpret_cast<const int16_t*>(p)[i];
    case DType::Int8:
      return reinterpret_cast<const int8_t*>(p)[i];
    case DType::UInt64:
      return static_cast<double>(reinterpret_cast<const uint64_t*>(p)[i]);
    case DType::UInt32:
      return reinterpret_cast<const uint32_t*>(p)[i];
    case DType::UInt16:
      return reinterpret_cast<const uint16_t*>(p)[i];
    case DType::UInt8:
      return reinterpret_cast<const uint8_t*>(p)[i];
    case DType::Bool:
      return reinterpret_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Tensor::get_i64(int64_t i) const {
  const std::byte* p = buffer_.get();
  switch (dtype_) {
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float64:
      return saturate_cast<int64_t>(get_f64(i));
    case DType::Int64:
      return reinterpret_cast<const int64_t*>(p)[i];
    case DType::Int32:
      return reinterpret_cast<const int32_t*>(p)[i];
    case DType::Int16:
      return reinterpret_cast<const int16_t*>(p)[i];
    case DType::Int8:
      return reinterpret_cast<const int8_t*>(p)[i];
    case DType::UInt64:
      return static_cast<int64_t>(reinterpret_cast<const uint64_t*>(p)[i]);
    case DType::UInt32:
      return reinterpret_cast<const uint32_t*>(p)[i];
    case DType::UInt16:
      return reinterpret_cast<const uint16_t*>(p)[i];
    case DType::UInt8:
      return reinterpret_cast<const uint8_t*>(p)[i];
    case DType::Bool:
      return reinterpret_cast<const uint8_t*>(p)[i] ? 1 : 0;
  }
  return 0;
}

uint64_t Tensor::get_u64(int64_t i) const {
  if (dtype_ == DType::UInt64) return reinterpret_cast<const uint64_t*>(buffer_.get())[i];
  if (is_float(dtype_)) return float_to_unsigned<uint64_t>(get_f64(i));
  return static_cast<uint64_t>(get_i64(i));
}

void Tensor::set_f64(int64_t i, double v) {
  std::byte* p = buffer_.get();
  switch (dtype_) {
    case DType::Float32:
      reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
      return;
    case DType::Float16:
      reinterpret_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(v));
      return;
    case DType::BFloat16:
      reinterpret_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v));
      return;
    case DType::Float64:
      reinterpret_cast<double*>(p)[i] = v;
      return;
    case DType::Int64:
      reinterpret_cast<int64_t*>(p)[i] = saturate_cast<int64_t>(v);
      return;
    case DType::Int32:
      reinterpret_cast<int32_t*>(p)[i] = saturate_cast<int32_t>(v);
      return;
    case DType::Int16:
      reinterpret_cast<int16_t*>(p)[i] = saturate_cast<int16_t>(v);
      return;
    case DType::Int8:
      reinterpret_cast<int8_t*>(p)[i] = saturate_cast<int8_t>(v);
      return;
    case DType::UInt64:
      reinterpret_cast<uint64_t*>(p)[i] = float_to_unsigned<uint64_t>(v);
      return;
    case DType::UInt32:
      reinterpret_cast<uint32_t*>(p)[i] = float_to_unsigned<uint32_t>(v);
      return;
    case DType::UInt16:
      reinterpret_cast<uint16_t*>(p)[i] = float_to_unsigned<uint16_t>(v);
      return;
    case DType::UInt8:
      reinterpret_cast<uint8_t*>(p)[i] = float_to_unsigned<uint8_t>(v);
      return;
    case DType::Bool:
      reinterpret_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0;
      return;
  }
}

void Tensor::set_i64(int64_t i, int64_t v) {
  std::byte* p = buffer_.get();
  switch (dtype_) {
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float64:
      set_f64(i, static_cast<double>(v));
      return;
    case DType::Int64:
      reinterpret_cast<int64_t*>(p)[i] = v;
      return;
    case DType::Int32:
      reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      return;
    case DType::Int16:
      reinterpret_cast<int16_t*>(p)[i] = static_cast<int16_t>(v);
      return;
    case DType::Int8:
      reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      return;
    case DType::UInt64:
      reinterpret_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v);
      return;
    case DType::UInt32:
      reinterpret_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v);
      return;
    case DType::UInt16:
      reinterpret_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v);
      return;
    case DType::UInt8:
      reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      return;
    case DType::Bool:
      reinterpret_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0;
      return;
  }
}

void Tensor::set_u64(int64_t i, uint64_t v) {
  if (is_float(dtype_)) return set_f64(i, static_cast<double>(v));
  set_i64(i, static_cast<int64_t>(v));
}

std::vector<int64_t> Tensor::to_int64s() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[i] = get_i64(i);
  return v;
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[i] = get_f64(i);
  return v;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  BRAZE_CHECK(checked_numel(shape) == numel_, "reshaped: element count differs");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

bool Tensor::bitwise_equal(const Tensor& o) const {
  return dtype_ == o.dtype_ && shape_ == o.shape_ &&
         (nbytes() == 0 || std::memcmp(raw(), o.raw(), nbytes()) == 0);
}

}  // namespace braze
