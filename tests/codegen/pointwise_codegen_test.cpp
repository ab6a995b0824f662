// The pointwise schedule's generated CUDA: compiled with NVRTC for sm_90 (no GPU needed)
// and checked for targeted patterns.
#include <gtest/gtest.h>

#include "codegen/codegen.h"
#include "fusion/plan.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/test_util.h"

namespace braze {
namespace {

std::vector<codegen::Kernel> kernels_of(const std::string& text) {
  graph::Graph g = test::graph_from_text(text);
  graph::passes::run_pipeline(g);
  std::vector<codegen::Kernel> out;
  for (const fusion::Group& grp : fusion::plan_unfused(g).groups) {
    codegen::GroupCode gc = codegen::generate(g, grp, codegen::Target{});
    EXPECT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    if (gc.kernel) out.push_back(*gc.kernel);
  }
  return out;
}

void expect_compiles(const codegen::Kernel& k) {
  gpu::Compiled c = gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90"), true);
  EXPECT_FALSE(c.cubin.empty());
  EXPECT_NE(c.ptx.find(".entry " + k.name), std::string::npos);
}

TEST(PointwiseCodegen, BroadcastAddInHalfCompiles) {
  auto ks = kernels_of(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float16[2,3,5] a, float16[3,1] b) => (float16[2,3,5] y) { y = Add(a, b) })");
  ASSERT_EQ(ks.size(), 1u);
  const codegen::Kernel& k = ks[0];
  EXPECT_EQ(k.name.rfind("braze_pointwise_Add_", 0), 0u) << k.name;
  EXPECT_NE(k.source.find("// ---- generated ----"), std::string::npos);
  EXPECT_NE(k.source.find("ONNX nodes 'Add_0' (Add)"), std::string::npos);
  EXPECT_NE(k.source.find("const __half* __restrict__ in"), std::string::npos);
  EXPECT_EQ(k.params.size(), 3u);
  expect_compiles(k);
}

TEST(PointwiseCodegen, SameGraphSameSource) {
  const char* text = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4,4] a) => (float[4,4] y) { t = Sigmoid(a)  y = Mul(a, t) })";
  auto k1 = kernels_of(text), k2 = kernels_of(text);
  ASSERT_EQ(k1.size(), k2.size());
  for (size_t i = 0; i < k1.size(); ++i) EXPECT_EQ(k1[i].source, k2[i].source);
}

// Division by a constant: float quotients keep braze_div_by's correction (the exact
// quotient); float16 ones, rounded to 16 bits anyway, are the product by the reciprocal.
TEST(PointwiseCodegen, DivisionByAConstant) {
  auto source_of = [](const char* type) {
    const std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 17]>
      g ()") + type + R"([4,9] x) => ()" +
                             type + R"([4,9] y) {
        cf = Constant <value = float {1.4140625}> ()  c = Cast <to = )" +
                             (std::string(type) == "float" ? "1" : "10") +
                             R"(> (cf)  y = Div(x, c) })";
    auto ks = kernels_of(text);
    EXPECT_EQ(ks.size(), 1u);
    for (const codegen::Kernel& k : ks) expect_compiles(k);
    if (ks.empty()) return std::string();
    const size_t body = ks[0].source.find("// ---- generated ----");  // after the helpers
    return body == std::string::npos ? std::string() : ks[0].source.substr(body);
  };
  const std::string f = source_of("float"), h = source_of("float16");
  EXPECT_NE(f.find("braze_div_by("), std::string::npos) << f;
  EXPECT_EQ(h.find("braze_div_by("), std::string::npos) << h;
  EXPECT_NE(h.find("* 0.707182348f)"), std::string::npos) << h;
}

// An index map's division by a constant runs in 32 bits where its dividend stays within 32 bits
// over the output's coordinates (DepthToSpace's w / 2 and w % 2), and in 64 where it may not.
TEST(PointwiseCodegen, IndexDivisionsIn32BitsWhereTheDividendFits) {
  auto source_of = [](const std::string& in, const std::string& out) {
    auto ks = kernels_of(R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float16[)" + in +
                         R"(] x) => (float16[)" + out + R"(] y) {
        y = DepthToSpace <blocksize = 2, mode = "DCR"> (x) })");
    EXPECT_EQ(ks.size(), 1u);
    for (const codegen::Kernel& k : ks) expect_compiles(k);
    return ks.empty() ? std::string() : ks[0].source;
  };
  const std::string small = source_of("1,8,3,5", "1,2,6,10");
  EXPECT_NE(small.find("((long long)((int)("), std::string::npos) << small;
  EXPECT_EQ(small.find(" / 2LL)"), std::string::npos) << small;
  EXPECT_EQ(small.find(" % 2LL)"), std::string::npos) << small;
  // w runs to 2^32 here: its divisions stay 64-bit (h's, under 2, need not).
  const std::string wide = source_of("1,4,1,2147483648", "1,1,2,4294967296");
  EXPECT_NE(wide.find(" / 2LL)"), std::string::npos) << wide;
  EXPECT_NE(wide.find(" % 2LL)"), std::string::npos) << wide;
}

// Gelu's erf form: braze_gelu_erf_f16 / _bf16 where the result is float16 / bfloat16, erff's
// braze_gelu_erf where it is float.
TEST(PointwiseCodegen, GeluIntoHalfTypesTakesTheShortForm) {
  for (const char* type : {"float", "float16", "bfloat16"}) {
    auto ks = kernels_of(std::string(R"(<ir_version: 8, opset_import: ["" : 20]>
      g ()") + type + "[4,9] x) => (" +
                         type + "[4,9] y) { y = Gelu(x) }");
    ASSERT_EQ(ks.size(), 1u);
    expect_compiles(ks[0]);
    const std::string body = ks[0].source.substr(ks[0].source.find("// ---- generated ----"));
    const std::string t = type;
    EXPECT_EQ(body.find("braze_gelu_erf_f16(") != std::string::npos, t == "float16") << body;
    EXPECT_EQ(body.find("braze_gelu_erf_bf16(") != std::string::npos, t == "bfloat16") << body;
    EXPECT_EQ(body.find("braze_gelu_erf(") != std::string::npos, t == "float") << body;
  }
}

// Gelu's tanh form: braze_gelu_tanh_f16 where the result is float16, braze_gelu_tanh (expf and
// an IEEE division) elsewhere.
TEST(PointwiseCodegen, TanhGeluIntoFloat16TakesTheShortForm) {
  for (const char* type : {"float", "float16", "bfloat16"}) {
    auto ks = kernels_of(std::string(R"(<ir_version: 8, opset_import: ["" : 20]>
      g ()") + type + "[4,9] x) => (" +
                         type + "[4,9] y) { y = Gelu <approximate = \"tanh\"> (x) }");
    ASSERT_EQ(ks.size(), 1u);
    expect_compiles(ks[0]);
    const std::string body = ks[0].source.substr(ks[0].source.find("// ---- generated ----"));
    const std::string t = type;
    EXPECT_EQ(body.find("braze_gelu_tanh_f16(") != std::string::npos, t == "float16") << body;
    EXPECT_EQ(body.find("braze_gelu_tanh(") != std::string::npos, t != "float16") << body;
  }
}

// braze_min / braze_max (Min, Max, GELU into float16): min.NaN / max.NaN from sm_80 on, the
// compare-and-select below it (braze targets sm_70 on; this NVRTC compiles sm_75 on).
TEST(PointwiseCodegen, NanPropagatingMinMaxCompileForEveryArch) {
  auto ks = kernels_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[4,9] x, float[4,9] a, float[4,9] b) => (float16[4,9] y, float[4,9] lo, float[4,9] hi) {
      y = Gelu(x)  lo = Min(a, b)  hi = Max(a, b) })");
  ASSERT_EQ(ks.size(), 3u);
  for (const codegen::Kernel& k : ks)
    for (const char* arch : {"sm_75", "sm_80", "sm_90"}) {
      SCOPED_TRACE(k.name + " " + arch);
      gpu::Compiled c = gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse(arch), true);
      EXPECT_FALSE(c.cubin.empty());
      const bool one = c.ptx.find("min.NaN.f32") != std::string::npos ||
                       c.ptx.find("max.NaN.f32") != std::string::npos;
      EXPECT_EQ(one, std::string(arch) != "sm_75");
    }
}

TEST(PointwiseCodegen, EveryElementwiseOpCompiles) {
  auto ks = kernels_of(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[8] x, int64[8] i, bool[8] b) => (float[8] y, int64[8] j, bool[8] c) {
      a1 = Exp(x)  a2 = Log(a1)  a3 = Sqrt(a1)  a4 = Reciprocal(a3)  a5 = Sigmoid(a4)  a6 = Tanh(a5)
      a7 = Erf(a6)  a8 = Softplus(a7)  a9 = Softsign(a8)  a10 = Mish(a9)  a11 = HardSwish(a10)
      a12 = Elu(a11)  a13 = Selu(a12)  a14 = Celu(a13)  a15 = LeakyRelu(a14)  a16 = HardSigmoid(a15)
      a17 = ThresholdedRelu(a16)  a18 = Shrink(a17)  a19 = Abs(a18)  a20 = Neg(a19)  a21 = Relu(a20)
      a22 = Sign(a21)  a23 = Round(a22)  a24 = Floor(a23)  a25 = Ceil(a24)  a26 = Pow(a25, x)
      a27 = Mod <fmod = 1> (a26, x)  a28 = Max(a27, x, a26)  a29 = Min(a28, x)  a30 = Mean(a29, x)
      a31 = Clip(a30)  a32 = Cast <to = 7> (a31)  a33 = Add(a32, i)  a34 = Div(a33, i)  a35 = Mod(a34, i)
      j = Abs(a35)
      b1 = Less(x, a30)  b2 = And(b1, b)  b3 = Not(b2)  b4 = IsNaN(x)  b5 = Xor(b3, b4)  c = IsInf(x)
      a36 = Where(b5, x, a30)  a37 = Sin(a36)  a38 = Acosh(a37)  y = Atanh(a38)
    })");
  EXPECT_GT(ks.size(), 40u);
  for (const auto& k : ks) expect_compiles(k);
}

}  // namespace
}  // namespace braze
