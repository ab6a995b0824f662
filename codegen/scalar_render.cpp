#include "codegen/scalar_render.h"

#include <braze/error.h>

#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "graph/ir.h"
#include "graph/registry.h"

namespace braze::codegen {
namespace {

using graph::ScalarExpr;
using graph::ScalarId;
using graph::ScalarNode;
using graph::ScalarOp;

// What a form sees: the node, its operands rendered, the expression and the op's context.
struct Site {
  const ScalarExpr& e;
  const CudaExprCtx& c;
  const ScalarNode& n;
  const std::vector<std::string>& a;
  bool root() const { return &n == &e.result(); }
  // The operand k's node is one of the op's operands (a local or a literal of the kernel).
  bool operand_is_arg(int k) const { return e.node(n.args[k]).op == ScalarOp::Arg; }
  std::string lit(double v) const { return cuda_literal(n.type, v); }
};
using Form = std::string (*)(const Site& s);

// Smallest and largest values of an integer dtype (exact in double up to 2^53; the 64-bit
// extremes print exactly through cuda_literal's integer path).
double dtype_min(DType dt) { return static_cast<double>(int_dtype_min(dt)); }
double dtype_max(DType dt) { return is_integer(dt) ? static_cast<double>(int_dtype_max(dt)) : 1.0; }

std::string extreme(const Site& s) {
  const bool low = s.n.op == ScalarOp::Lowest;
  if (is_floating(s.n.type)) return s.lit(low ? -INFINITY : INFINITY);
  return s.lit(low ? dtype_min(s.n.dtype) : dtype_max(s.n.dtype));
}

// Converts an operand to dtype `to` as Cast does: through the storage type for narrow
// integers (so out-of-range floats saturate as on the CPU), `!= 0` for bool.
std::string cuda_cast(const std::string& a, DType from, DType to) {
  const ComputeType ct = compute_type(to);
  if (to == DType::Bool) return "(" + a + " != 0)";
  if (is_integer(to) && dtype_size(to) < 8)
    return fmt::format("(({})({}){})", ct, cuda_storage_type(to), a);
  // float16 and bfloat16 are computed in float: a cast to them rounds to the 16-bit type
  // (through float, as the reference does), or a fused Cast(float -> float16) -> Cast(->
  // float) would give back its input unrounded.
  if (is_half(to) && from != to)
    return fmt::format("braze_val(braze_pack(braze_tag<{}>{{}}, (float)({})))",
                       cuda_storage_type(to), a);
  return fmt::format("(({}){})", ct, a);
}

// A float division whose divisor is a literal (a constant folded into the kernel) as a
// multiplication: exact by the reciprocal of a power of two, otherwise braze_div_by's
// corrected product (ops.cuh) — or, where the quotient is a float16 / bfloat16 value
// (`half_out`: computed in float, stored in 16 bits), the product by the rounded reciprocal
// alone: within 1.5 float ulps of the quotient (2^-12 of a float16 ulp; the correction is
// 6 instructions of a ~30-instruction GELU epilogue element). Empty when the divisor is no
// plain literal or its reciprocal is not a normal float (zero, infinities, NaN and huge
// divisors keep the division).
std::optional<std::string> float_div_by_constant(const std::string& x, const std::string& lit,
                                                 bool half_out) {
  if (lit.size() < 2 || lit.back() != 'f' ||
      lit.find_first_not_of("0123456789.e+-f") != std::string::npos)
    return std::nullopt;
  char* end = nullptr;
  const float y = std::strtof(lit.c_str(), &end);
  if (end != lit.c_str() + lit.size() - 1 || !std::isfinite(y) || y == 0.f) return std::nullopt;
  const float z = 1.f / y;
  if (!std::isnormal(z)) return std::nullopt;
  int e = 0;
  if (std::fabs(std::frexp(y, &e)) == 0.5f || half_out)
    return fmt::format("({} * {})", x, cuda_literal(ComputeType::Float, z));
  return fmt::format("braze_div_by({}, {}, {})", x, lit, cuda_literal(ComputeType::Float, z));
}

// The op's own Div (its divisor one of the op's operands): by a literal, a multiplication.
std::string div(const Site& s) {
  if (s.n.type == ComputeType::Float && s.root() && s.operand_is_arg(1))
    if (auto by = float_div_by_constant(s.a[0], s.a[1], is_half(s.c.out_dtype))) return *by;
  if (is_floating(s.n.type)) return fmt::format("({} / {})", s.a[0], s.a[1]);
  return fmt::format("braze_idiv({}, {})", s.a[0], s.a[1]);
}

// Small literal exponents (RMS norm's x^2) as multiplications: pow costs dozens of
// instructions an element, enough to slow a memory-bound kernel.
std::string pow(const Site& s) {
  const ComputeType t = s.n.type;
  if (!is_floating(t))
    return fmt::format("(({})braze_ipow((long long){}, (long long){}))", t, s.a[0], s.a[1]);
  const std::string& e = s.a[1];
  auto is = [&](double v) {
    return s.operand_is_arg(1) &&
           (e == cuda_literal(t, v) || e == cuda_literal(ComputeType::Int, v));
  };
  if (is(2)) return fmt::format("({0} * {0})", s.a[0]);
  if (is(1)) return s.a[0];
  if (is(3)) return fmt::format("({0} * {0} * {0})", s.a[0]);
  return fmt::format("{}({}, ({}){})", cuda_math(t, "pow"), s.a[0], t, s.a[1]);
}

// a op b, with signed integer arithmetic done unsigned so overflow wraps instead of being
// undefined.
template <char Op>
std::string wrapping(const Site& s) {
  if (s.n.type == ComputeType::Int)
    return fmt::format("((long long)((unsigned long long){} {} (unsigned long long){}))", s.a[0],
                       Op, s.a[1]);
  return fmt::format("({} {} {})", s.a[0], Op, s.a[1]);
}

std::string neg(const Site& s) {
  if (s.n.type == ComputeType::Int)
    return fmt::format("((long long)(0ULL - (unsigned long long){}))", s.a[0]);
  return "(-" + s.a[0] + ")";
}

std::string abs(const Site& s) {
  if (s.n.type == ComputeType::UInt) return s.a[0];
  if (s.n.type == ComputeType::Int)
    return fmt::format("({0} < 0 ? (long long)(0ULL - (unsigned long long){0}) : {0})", s.a[0]);
  return cuda_math(s.n.type, "fabs") + "(" + s.a[0] + ")";
}

// GELU's tuned device forms: with a float16 / bfloat16 result (the op's own output) the erf
// form takes braze_gelu_erf_f16 / _bf16 (ops.cuh: 10-12 instructions and an ex2 against ~24,
// within 1/12 of the type's ulp), the tanh form with a float16 result braze_gelu_tanh_f16 (5
// and two MUFU against ~20).
std::string gelu(const Site& s) {
  const DType out = s.root() ? s.c.out_dtype : DType::Float32;
  const bool f = s.n.type == ComputeType::Float;
  if (s.n.op == ScalarOp::GeluTanh)
    return (f && out == DType::Float16 ? "braze_gelu_tanh_f16(" : "braze_gelu_tanh(") + s.a[0] +
           ")";
  const char* fn = !f                       ? "braze_gelu_erf("
                   : out == DType::Float16  ? "braze_gelu_erf_f16("
                   : out == DType::BFloat16 ? "braze_gelu_erf_bf16("
                                            : "braze_gelu_erf(";
  return fn + s.a[0] + ")";
}

std::string is_inf(const Site& s) {
  const bool pos = s.n.index & 1, neg = s.n.index & 2;
  return fmt::format("(isinf({0}) && (({0} > 0 && {1}) || ({0} < 0 && {2})))", s.a[0], pos, neg);
}

// Forms given by a pattern over {0}, {1}, {2} (operands) and {t} (the node's type); {f} is
// the math function `fn` in the compute type's form ("exp" -> expf for float).
struct Pattern {
  ScalarOp op;
  const char* text;
  const char* fn = "";
};
constexpr Pattern kPatterns[] = {
    {ScalarOp::Not, "(!{0})"},
    {ScalarOp::Exp, "{f}({0})", "exp"},
    {ScalarOp::Log, "{f}({0})", "log"},
    {ScalarOp::Sqrt, "{f}({0})", "sqrt"},
    {ScalarOp::Tanh, "{f}({0})", "tanh"},
    {ScalarOp::Erf, "{f}({0})", "erf"},
    {ScalarOp::Sin, "{f}({0})", "sin"},
    {ScalarOp::Cos, "{f}({0})", "cos"},
    {ScalarOp::Tan, "{f}({0})", "tan"},
    {ScalarOp::Asin, "{f}({0})", "asin"},
    {ScalarOp::Acos, "{f}({0})", "acos"},
    {ScalarOp::Atan, "{f}({0})", "atan"},
    {ScalarOp::Sinh, "{f}({0})", "sinh"},
    {ScalarOp::Cosh, "{f}({0})", "cosh"},
    {ScalarOp::Asinh, "{f}({0})", "asinh"},
    {ScalarOp::Acosh, "{f}({0})", "acosh"},
    {ScalarOp::Atanh, "{f}({0})", "atanh"},
    {ScalarOp::Floor, "{f}({0})", "floor"},
    {ScalarOp::Ceil, "{f}({0})", "ceil"},
    {ScalarOp::Round, "{f}({0})", "rint"},  // half to even
    {ScalarOp::Sigmoid, "braze_sigmoid({0})"},
    {ScalarOp::Softplus, "braze_softplus({0})"},
    {ScalarOp::IsNaN, "isnan({0})"},
    {ScalarOp::Convert, "(({t}){0})"},
    {ScalarOp::Mod, "braze_mod({0}, {1}, false)"},
    {ScalarOp::FMod, "braze_mod({0}, {1}, true)"},
    {ScalarOp::Max, "braze_max({0}, {1})"},
    {ScalarOp::Min, "braze_min({0}, {1})"},
    {ScalarOp::FMax, "{f}({0}, {1})", "fmax"},
    {ScalarOp::FMin, "{f}({0}, {1})", "fmin"},
    {ScalarOp::ShiftLeft, "braze_shift({0}, {1}, true)"},
    {ScalarOp::ShiftRight, "braze_shift({0}, {1}, false)"},
    {ScalarOp::And, "({0} && {1})"},
    {ScalarOp::Or, "({0} || {1})"},
    {ScalarOp::Xor, "({0} != {1})"},
    {ScalarOp::Equal, "({0} == {1})"},
    {ScalarOp::NotEqual, "({0} != {1})"},
    {ScalarOp::Less, "({0} < {1})"},
    {ScalarOp::LessEqual, "({0} <= {1})"},
    {ScalarOp::Greater, "({0} > {1})"},
    {ScalarOp::GreaterEqual, "({0} >= {1})"},
    {ScalarOp::Where, "({0} ? {1} : {2})"},
};

std::string pattern(const Site& s) {
  for (const Pattern& p : kPatterns) {
    if (p.op != s.n.op) continue;
    const std::string f = *p.fn ? cuda_math(s.n.type, p.fn) : std::string();
    return fmt::format(fmt::runtime(p.text), s.a.size() > 0 ? s.a[0] : "",
                       s.a.size() > 1 ? s.a[1] : "", s.a.size() > 2 ? s.a[2] : "",
                       fmt::arg("t", s.n.type), fmt::arg("f", f));
  }
  throw InternalError(fmt::format("scalar {} has no CUDA form", graph::scalar_op_name(s.n.op)));
}

// The table: each scalar op's form.
std::array<Form, graph::kNumScalarOps> make_forms() {
  std::array<Form, graph::kNumScalarOps> f{};
  f.fill(pattern);
  auto set = [&](ScalarOp op, Form form) { f[static_cast<size_t>(op)] = form; };
  set(ScalarOp::Arg, [](const Site& s) { return s.c.args.at(static_cast<size_t>(s.n.index)); });
  set(ScalarOp::Const, [](const Site& s) { return s.lit(s.n.value); });
  set(ScalarOp::Lowest, extreme);
  set(ScalarOp::Highest, extreme);
  set(ScalarOp::Neg, neg);
  set(ScalarOp::Abs, abs);
  set(ScalarOp::Reciprocal, [](const Site& s) { return "(" + s.lit(1) + " / " + s.a[0] + ")"; });
  set(ScalarOp::GeluErf, gelu);
  set(ScalarOp::GeluTanh, gelu);
  set(ScalarOp::IsInf, is_inf);
  set(ScalarOp::Cast, [](const Site& s) { return cuda_cast(s.a[0], s.n.from, s.n.dtype); });
  set(ScalarOp::Add, wrapping<'+'>);
  set(ScalarOp::Sub, wrapping<'-'>);
  set(ScalarOp::Mul, wrapping<'*'>);
  set(ScalarOp::Div, div);
  set(ScalarOp::Pow, pow);
  return f;
}

std::string render(const ScalarExpr& e, const CudaExprCtx& c, ScalarId id) {
  static const std::array<Form, graph::kNumScalarOps> forms = make_forms();
  const ScalarNode& n = e.node(id);
  std::vector<std::string> a;
  for (int k = 0; k < graph::scalar_arity(n.op); ++k) a.push_back(render(e, c, n.args[k]));
  return forms[static_cast<size_t>(n.op)](Site{e, c, n, a});
}

}  // namespace

std::string render_scalar(const ScalarExpr& e, const CudaExprCtx& c) {
  return render(e, c, e.root);
}

std::string render_scalar(const CudaExprCtx& c) {
  std::vector<std::optional<DType>> dtypes;
  for (size_t i = 0; i < c.args.size(); ++i)
    dtypes.push_back(c.args[i].empty() ? std::nullopt : std::optional(c.arg_dtypes.at(i)));
  return render_scalar(graph::scalar_expr(c.node, dtypes), c);
}

}  // namespace braze::codegen
