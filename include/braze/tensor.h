// A host tensor: dtype, static shape and a buffer of bytes in row-major order.
// Copies of a Tensor share the buffer (it is a handle); clone() makes a deep copy.
#pragma once

#include <braze/dtype.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace braze {

using Shape = std::vector<int64_t>;

// Largest single host tensor braze allocates; bigger requests are a user error rather
// than an allocation failure deep inside a run.
inline constexpr uint64_t kMaxTensorBytes = uint64_t{16} << 30;

// Highest rank braze handles (ONNX sets none; models stay under 10): a shape computed by the
// model itself (a Reshape to a ConstantOfShape of millions of ones) could otherwise make every
// pass and kernel walk millions of dims.
inline constexpr size_t kMaxRank = 64;

// Number of elements; throws UserError on a rank over kMaxRank, a negative dim or an
// overflowing product.
int64_t checked_numel(const Shape& shape, const std::string& what = "tensor");
// Byte size for dtype and shape with the same checks, also against kMaxTensorBytes.
uint64_t checked_nbytes(DType dt, const Shape& shape, const std::string& what = "tensor");
std::string shape_str(const Shape& shape);  // "[2,3,4]"
// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled tensor (sizes checked).
  Tensor(DType dtype, Shape shape);
  static Tensor scalar_of(DType dtype, double value);
  static Tensor from_int64s(const std::vector<int64_t>& values, Shape shape = {});
  static Tensor from_floats(const std::vector<float>& values, Shape shape);
  // dtype and shape without a buffer, for ops that read only shapes (Shape, Size).
  static Tensor metadata_only(DType dtype, Shape shape);
  // Sizes checked, contents left as they are: for a caller that writes every byte next
  // (reading weights from a file, converting them), where zero-filling hundreds of MB first
  // is wasted work.
  static Tensor uninitialized(DType dtype, Shape shape);
  // A tensor over `data`, memory that `owner` keeps alive (a mapped file's bytes): no copy.
  // Sizes checked; data must hold nbytes and be aligned for the dtype.
  static Tensor over(DType dtype, Shape shape, std::shared_ptr<const void> owner, std::byte* data);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return buffer_ != nullptr; }

  void* raw() { return buffer_.get(); }
  const void* raw() const { return buffer_.get(); }
  template <class T>
  T* data() {
    return reinterpret_cast<T*>(buffer_.get());
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(buffer_.get());
  }

  // Element access through the three compute types (double for floating dtypes, int64_t
  // and uint64_t for integers and bool), converting as a C cast would, with float->int
  // conversions saturating instead of undefined.
  double get_f64(int64_t i) const;
  int64_t get_i64(int64_t i) const;
  uint64_t get_u64(int64_t i) const;
  void set_f64(int64_t i, double v);
  void set_i64(int64_t i, int64_t v);
  void set_u64(int64_t i, uint64_t v);
  template <class C>
  C get(int64_t i) const;
  template <class C>
  void set(int64_t i, C v);

  // Values as int64 (for shape-like inputs: axes, pads, shapes). Float tensors truncate.
  std::vector<int64_t> to_int64s() const;
  std::vector<double> to_doubles() const;

  Tensor clone() const;
  Tensor reshaped(Shape shape) const;  // shares the buffer; numel must match
  bool bitwise_equal(const Tensor& other) const;

 private:
  DType dtype_ = DType::Float32;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte[]> buffer_;
};

template <>
inline double Tensor::get<double>(int64_t i) const {
  return get_f64(i);
}
template <>
inline int64_t Tensor::get<int64_t>(int64_t i) const {
  return get_i64(i);
}
template <>
inline uint64_t Tensor::get<uint64_t>(int64_t i) const {
  return get_u64(i);
}
template <>
inline void Tensor::set<double>(int64_t i, double v) {
  set_f64(i, v);
}
template <>
inline void Tensor::set<int64_t>(int64_t i, int64_t v) {
  set_i64(i, v);
}
template <>
inline void Tensor::set<uint64_t>(int64_t i, uint64_t v) {
  set_u64(i, v);
}

}  // namespace braze
