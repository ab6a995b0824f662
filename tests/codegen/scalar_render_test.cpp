// The one renderer of element-wise ops (codegen/scalar_render.h): the CUDA forms of the
// scalar IR, its type-dependent forms and its peepholes.
#include "codegen/scalar_render.h"

#include <gtest/gtest.h>

#include "graph/ir.h"
#include "graph/registry.h"

namespace braze::codegen {
namespace {

// Node `op` of the given operand dtypes rendered over `args`, its output of dtype `out`.
std::string render(const std::string& op, std::vector<std::string> args, std::vector<DType> dtypes,
                   DType out, graph::Attributes attrs = {}) {
  graph::Graph g;
  std::vector<graph::ValueId> ins;
  for (size_t k = 0; k < dtypes.size(); ++k)
    ins.push_back(g.add_value("x" + std::to_string(k), dtypes[k], {4}));
  graph::ValueId y = g.add_value("y", out, {4});
  const graph::Node& n = g.node(g.add_node(&graph::op(op), "n", ins, {y}, std::move(attrs)));
  CudaExprCtx c{n, compute_type(dtypes.at(0)), std::move(args), dtypes, out};
  return render_scalar(c);
}

const DType F32 = DType::Float32;

TEST(ScalarRender, MathFunctionsTakeTheirComputeTypesForm) {
  EXPECT_EQ(render("Exp", {"v1"}, {F32}, F32), "expf(v1)");
  EXPECT_EQ(render("Exp", {"v1"}, {DType::Float64}, DType::Float64), "exp(v1)");
  EXPECT_EQ(render("Round", {"v1"}, {DType::Float16}, DType::Float16), "rintf(v1)");
}

TEST(ScalarRender, ActivationsAreTheirExpressions) {
  EXPECT_EQ(render("Elu", {"v"}, {F32}, F32), "((v >= 0.0f) ? v : (1.0f * (expf(v) - 1.0f)))");
  EXPECT_EQ(render("HardSwish", {"v"}, {F32}, F32),
            "(v * fmaxf(0.0f, fminf(1.0f, ((v / 6.0f) + 0.5f))))");
  EXPECT_EQ(render("Mish", {"v"}, {F32}, F32), "(v * tanhf(braze_softplus(v)))");
}

TEST(ScalarRender, LogicAndComparisonsUseCOperators) {
  EXPECT_EQ(render("Or", {"a", "b"}, {DType::Bool, DType::Bool}, DType::Bool), "(a || b)");
  EXPECT_EQ(render("Xor", {"a", "b"}, {DType::Bool, DType::Bool}, DType::Bool), "(a != b)");
  EXPECT_EQ(render("LessOrEqual", {"a", "b"}, {F32, F32}, DType::Bool), "(a <= b)");
  EXPECT_EQ(render("Where", {"c", "a", "b"}, {DType::Bool, F32, F32}, F32), "(c ? a : b)");
}

TEST(ScalarRender, SignedIntegerArithmeticWraps) {
  EXPECT_EQ(render("Add", {"a", "b"}, {DType::Int32, DType::Int32}, DType::Int32),
            "((long long)((unsigned long long)a + (unsigned long long)b))");
  EXPECT_EQ(render("Add", {"a", "b"}, {DType::UInt8, DType::UInt8}, DType::UInt8), "(a + b)");
  EXPECT_EQ(render("Div", {"a", "b"}, {DType::Int64, DType::Int64}, DType::Int64),
            "braze_idiv(a, b)");
  EXPECT_EQ(render("Neg", {"a"}, {DType::Int8}, DType::Int8),
            "((long long)(0ULL - (unsigned long long)a))");
}

TEST(ScalarRender, DivisionByALiteralOperandBecomesAProduct) {
  EXPECT_EQ(render("Div", {"a", "4.0f"}, {F32, F32}, F32), "(a * 0.25f)");
  EXPECT_EQ(render("Div", {"a", "3.0f"}, {F32, F32}, F32), "braze_div_by(a, 3.0f, 0.333333343f)");
  EXPECT_EQ(render("Div", {"a", "3.0f"}, {F32, F32}, DType::Float16), "(a * 0.333333343f)");
  EXPECT_EQ(render("Div", {"a", "b"}, {F32, F32}, F32), "(a / b)");
  // Mean's division by its operand count is no operand: it stays a division.
  EXPECT_EQ(render("Mean", {"a", "b"}, {F32, F32}, F32), "((a + b) / 2.0f)");
}

TEST(ScalarRender, SmallLiteralExponentsBecomeProducts) {
  EXPECT_EQ(render("Pow", {"a", "2.0f"}, {F32, F32}, F32), "(a * a)");
  EXPECT_EQ(render("Pow", {"a", "3LL"}, {F32, DType::Int64}, F32), "(a * a * a)");
  EXPECT_EQ(render("Pow", {"a", "b"}, {F32, F32}, F32), "powf(a, (float)b)");
}

TEST(ScalarRender, GeluTakesTheHalfResultsHelper) {
  EXPECT_EQ(render("Gelu", {"a"}, {F32}, F32), "braze_gelu_erf(a)");
  EXPECT_EQ(render("Gelu", {"a"}, {F32}, DType::Float16), "braze_gelu_erf_f16(a)");
  EXPECT_EQ(render("Gelu", {"a"}, {F32}, DType::BFloat16), "braze_gelu_erf_bf16(a)");
  EXPECT_EQ(render("Gelu", {"a"}, {F32}, DType::Float16, {{"approximate", std::string("tanh")}}),
            "braze_gelu_tanh_f16(a)");
}

TEST(ScalarRender, ClipWithoutBoundsClampsToTheTypesExtremes) {
  EXPECT_EQ(render("Clip", {"a"}, {DType::Int8}, DType::Int8),
            "((a != a) ? a : ((a < -128LL) ? -128LL : ((a > 127LL) ? 127LL : a)))");
  EXPECT_EQ(render("Clip", {"a", "", "m"}, {F32, F32, F32}, F32),
            "((a != a) ? a : ((a < (-__int_as_float(0x7f800000))) ? "
            "(-__int_as_float(0x7f800000)) : ((a > m) ? m : a)))");
}

TEST(ScalarRender, CastRoundsToHalfTypesAndSaturatesNarrowIntegers) {
  graph::Attributes to_half{{"to", int64_t{10}}}, to_i8{{"to", int64_t{3}}};
  EXPECT_EQ(render("Cast", {"a"}, {F32}, DType::Float16, to_half),
            "braze_val(braze_pack(braze_tag<__half>{}, (float)(a)))");
  EXPECT_EQ(render("Cast", {"a"}, {F32}, DType::Int8, to_i8), "((long long)(signed char)a)");
}

}  // namespace
}  // namespace braze::codegen
