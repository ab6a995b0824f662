// Where a Tensor's bytes live: tensors of 4 MiB and more in a 2 MiB-aligned mapping advised
// to take transparent huge pages (graph/tensor.cpp), smaller ones from new[]; either way every
// byte is the tensor's, copies share it, and it is released with the last copy.
#include <braze/tensor.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace braze {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

TEST(TensorStorage, LargeTensorsAreHugePageAlignedAndHoldEveryByte) {
  // 4 MiB + 6 bytes of float16: the mapping rounds up to whole 2 MiB pages.
  const int64_t n = (int64_t{2} << 20) + 3;
  Tensor t = Tensor::uninitialized(DType::Float16, {n});
  ASSERT_EQ(t.nbytes(), static_cast<uint64_t>(n) * 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kHugePage, 0u);
  auto* p = static_cast<unsigned char*>(t.raw());
  for (uint64_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<unsigned char>(i * 7 + 1);
  Tensor copy = t;  // shares the storage
  EXPECT_EQ(copy.raw(), t.raw());
  t = Tensor();
  const auto* q = static_cast<const unsigned char*>(copy.raw());
  for (uint64_t i = 0; i < copy.nbytes(); ++i)
    ASSERT_EQ(q[i], static_cast<unsigned char>(i * 7 + 1)) << "byte " << i;
}

TEST(TensorStorage, ZeroedConstructorAndSmallTensors) {
  Tensor big(DType::Float32, {int64_t{1} << 21});  // 8 MiB, zeroed
  const auto* f = static_cast<const float*>(big.raw());
  for (int64_t i = 0; i < big.numel(); i += 4099) ASSERT_EQ(f[i], 0.f);
  EXPECT_EQ(f[big.numel() - 1], 0.f);
  Tensor small = Tensor::uninitialized(DType::Int64, {3});
  static_cast<int64_t*>(small.raw())[2] = 42;
  EXPECT_EQ(small.nbytes(), 24u);
  EXPECT_EQ(static_cast<const int64_t*>(small.raw())[2], 42);
}

}  // namespace
}  // namespace braze
