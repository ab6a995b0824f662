// Reduction graphs whose search spaces hold every kind of row schedule: rows in registers,
// rows staged in shared memory (long rows), and rows split over a cluster of blocks (few,
// very long rows). Shared by the CPU codegen test and the GPU search-space test.
#pragma once

#include <string>

namespace braze::test {

inline std::string reduction_search_text() {
  return R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[40,32000] x, float[4,40000] y, float[3,36000] z, float[36000] gz, float[36000] bz,
       float16[5,65536] h, float16[65536] hw)
      => (float16[40,32000] sx, float[4,40000] sy, float[3,36000] lz, float16[5,65536] rh) {
      sx = Softmax <axis = -1> (x)
      sy = Softmax <axis = -1> (y)
      lz = LayerNormalization <axis = -1, epsilon = 1e-5> (z, gz, bz)
      ax = Constant <value = int64[1] {-1}> ()  two = Constant <value = float {2.0}> ()
      eps = Constant <value = float {1e-6}> ()
      hf = Cast <to = 1> (h)  p = Pow(hf, two)  m = ReduceMean(p, ax)  a = Add(m, eps)  r = Sqrt(a)
      q = Reciprocal(r)  n = Mul(hf, q)  nh = Cast <to = 10> (n)  rh = Mul(nh, hw) })";
}

}  // namespace braze::test
