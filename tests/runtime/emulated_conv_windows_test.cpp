// Implicit-GEMM convolutions' kernels on the CPU emulator (#19): the plan made for sm_90a puts
// each convolution's windows (Im2Col and Reshape) into its product's kernel; the emulator has
// no wgmma, so the SIMT schedule gathers the windows in that kernel (as it would on the GPU for
// a candidate --tune times) and the outputs match the reference executor.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/capabilities.h"
#include "runtime/emulator.h"
#include "runtime/reference_executor.h"
#include "tests/conv_cases.h"
#include "tests/gemm_test_util.h"

namespace braze {
namespace {

class EmulatedConvWindows : public ::testing::TestWithParam<test::ConvCase> {};

TEST_P(EmulatedConvWindows, SimtGathersTheWindowsInTheProductsKernel) {
  const test::ConvCase& c = GetParam();
  const graph::Graph g = test::conv_case_graph(c, DType::Float16);
  const fusion::Plan plan = codegen::plan_for(g, true, test::h200a());
  int fused = 0;
  for (const fusion::Group& gr : plan.groups) fused += test::reads_windows(g, gr);
  EXPECT_EQ(fused, c.first_in_place ? 2 : 1);
  const std::vector<Tensor> in = test::random_inputs(g, 61);
  const Tensor want = runtime::run_reference(g, in).at(0);
  const Tensor got = test::emulate_with(g, plan, in, -1, c.name);
  ASSERT_TRUE(got.defined());
  EXPECT_TRUE(test::conv_outputs_close(got, want, DType::Float16)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedConvWindows, ::testing::ValuesIn(test::conv_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace braze
