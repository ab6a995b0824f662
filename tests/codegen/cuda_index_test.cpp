// The index expressions the CUDA hooks compose: a flat index split by cuda_unravel and put
// back together by cuda_linearize over the same sizes is the index itself, not its digits
// multiplied out again; anything else is linearised term by term.
#include <gtest/gtest.h>

#include "codegen/cuda_hooks.h"

namespace braze::codegen {
namespace {

TEST(CudaIndex, UnravelledDigitsRecombineIntoTheIndex) {
  // An epilogue through a Reshape of [4096, 768] to [32, 128, 768]: row i's digits and j.
  std::vector<std::string> c = cuda_unravel("i", {32, 128});
  c.push_back("j");
  EXPECT_EQ(cuda_linearize(c, {32, 128, 768}), "(i * 768LL + j)");
  // All three digits of f, and a middle digit taken modulo its size.
  EXPECT_EQ(cuda_linearize(cuda_unravel("f", {4, 5, 6}), {4, 5, 6}), "(f)");
  const std::vector<std::string> d = cuda_unravel("f", {4, 5, 6});
  EXPECT_EQ(cuda_linearize({d[1], d[2]}, {5, 6}), "((f % 30LL))");
  // Size-1 dims between the digits are skipped as before.
  EXPECT_EQ(cuda_linearize({d[0], "0LL", d[1], d[2]}, {4, 1, 5, 6}), "(f)");
}

// The index renderer's 32-bit divisions ("((long long)((int)(F) / n))") recombine as well.
TEST(CudaIndex, ThirtyTwoBitDigitsRecombineIntoTheIndex) {
  EXPECT_EQ(cuda_linearize({"((long long)((int)(f) / 6))", "((long long)((int)(f) % 6))"}, {5, 6}),
            "(f)");
  EXPECT_EQ(cuda_linearize({"((long long)((int)(((long long)((int)(f) / 6))) % 5))",
                            "((long long)((int)(f) % 6))"},
                           {5, 6}),
            "((f % 30LL))");
  // A different dividend, or divisor, is no digit of the same index.
  EXPECT_EQ(cuda_linearize({"((long long)((int)(g) / 6))", "((long long)((int)(f) % 6))"}, {5, 6}),
            "(((long long)((int)(g) / 6)) * 6LL + ((long long)((int)(f) % 6)))");
}

TEST(CudaIndex, OtherCoordinatesAreLinearisedTermByTerm) {
  const std::vector<std::string> d = cuda_unravel("f", {4, 5, 6});
  // Digits in another order, or over other sizes, stay as they are.
  EXPECT_EQ(cuda_linearize({d[2], d[1]}, {6, 5}), "((f % 6LL) * 5LL + ((f / 6LL) % 5LL))");
  EXPECT_EQ(cuda_linearize({d[1], d[2]}, {5, 7}), "(((f / 6LL) % 5LL) * 7LL + (f % 6LL))");
  EXPECT_EQ(cuda_linearize({"a", "b", "c"}, {2, 3, 4}), "(a * 12LL + b * 4LL + c)");
  // "(x) + (y % 6LL)" is no "(F % 6LL)".
  EXPECT_EQ(cuda_linearize({"(x) + (y / 6LL)", "(x) + (y % 6LL)"}, {5, 6}),
            "((x) + (y / 6LL) * 6LL + (x) + (y % 6LL))");
  EXPECT_EQ(cuda_linearize({"0LL"}, {1}), "0LL");
}

}  // namespace
}  // namespace braze::codegen
