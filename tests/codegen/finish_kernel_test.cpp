// finish_kernel (codegen/codegen.h): every kernel gets the progress parameters last and notes
// its step as its body's first statement (codegen::Kernel), whatever its parameter list holds;
// a source with no signature, or two, is an internal error rather than a kernel without a note.
#include <braze/error.h>
#include <gtest/gtest.h>

#include <string>

#include "codegen/codegen.h"

namespace braze {
namespace {

std::string generated(const std::string& code) {
  const graph::Graph g;
  codegen::Kernel k;
  codegen::finish_kernel(g, k, code, codegen::kNoHelpers);
  EXPECT_NE(k.source.find("extern \"C\" __global__"), std::string::npos);
  EXPECT_EQ(k.source.find("KERNEL_NAME"), std::string::npos);
  return k.source.substr(k.source.find("// ---- generated ----"));
}

TEST(FinishKernel, ProgressParametersComeLastAndTheNoteFirst) {
  const std::string src = generated(
      "extern \"C\" __global__ void __launch_bounds__(128) KERNEL_NAME(const float* __restrict__ "
      "in0, "
      "float* __restrict__ out1, int* __restrict__ braze_err) {\n  out1[0] = in0[0];\n}\n");
  EXPECT_NE(
      src.find("int* __restrict__ braze_err, unsigned* braze_progress, unsigned braze_step) {\n"
               "  braze_note_step(braze_progress, braze_step);\n  out1[0] = in0[0];"),
      std::string::npos)
      << src;
}

TEST(FinishKernel, AfterTensorMapsAndInAnEmptyList) {
  const std::string maps = generated(
      "extern \"C\" __global__ void __launch_bounds__(256, 1) KERNEL_NAME(float* out0, "
      "const __grid_constant__ braze_tmap braze_tmap_a)\n{\n  (void)out0;\n}\n");
  EXPECT_NE(maps.find("braze_tmap braze_tmap_a, unsigned* braze_progress, unsigned braze_step)\n{\n"
                      "  braze_note_step(braze_progress, braze_step);"),
            std::string::npos)
      << maps;
  const std::string empty =
      generated("extern \"C\" __global__ void KERNEL_NAME() {\n  if (threadIdx.x) return;\n}\n");
  EXPECT_NE(empty.find("(unsigned* braze_progress, unsigned braze_step) {"), std::string::npos)
      << empty;
}

TEST(FinishKernel, ASourceWithoutOneSignatureIsAnInternalError) {
  EXPECT_THROW(generated("extern \"C\" __global__ void f() {}\n"), InternalError);
  EXPECT_THROW(generated("extern \"C\" __global__ void KERNEL_NAME() {}\n"
                         "extern \"C\" __global__ void KERNEL_NAME() {}\n"),
               InternalError);
  EXPECT_THROW(generated("extern \"C\" __global__ void KERNEL_NAME(int a"), InternalError);
}

}  // namespace
}  // namespace braze
