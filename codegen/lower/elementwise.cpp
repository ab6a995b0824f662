// How the elementwise ops (graph/ops/elementwise.cpp) become CUDA.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "codegen/lower/families.h"
#include "graph/ops/helpers.h"

namespace braze::codegen {
namespace {

using namespace graph;
using namespace graph::ops;

// ---- CUDA expressions ------------------------------------------------------------------
// Operands reaching a CudaExprFn are locals or literals, so repeating one is free.
std::string lit(ComputeType t, double v) { return cuda_literal(t, v); }
std::string fn1(ComputeType t, const char* f, const std::string& a) {
  return cuda_math(t, f) + "(" + a + ")";
}

// One math function of the operand, in its compute type's form ("exp" -> expf for float).
CudaExprFn math(const char* fn) {
  return [fn](const CudaExprCtx& c) { return fn1(c.type, fn, c.args[0]); };
}
// A CUDA expression from a format string over {t} (type), {a} and {b} (operands).
CudaExprFn cuda_fmt(std::string f) {
  return [f](const CudaExprCtx& c) {
    return fmt::format(fmt::runtime(f), fmt::arg("t", c.type), fmt::arg("a", c.args.at(0)),
                       fmt::arg("b", c.args.size() > 1 ? c.args[1] : ""));
  };
}

// a op b, with signed integer arithmetic done unsigned so overflow wraps instead of being
// undefined.
CudaExprFn wrapping(const char* op) {
  return [op](const CudaExprCtx& c) {
    if (c.type == ComputeType::Int)
      return fmt::format("((long long)((unsigned long long){} {} (unsigned long long){}))",
                         c.args[0], op, c.args[1]);
    return fmt::format("({} {} {})", c.args[0], op, c.args[1]);
  };
}

// Folds a variadic op's operands left to right with `step(acc, x)`.
CudaExprFn folding(
    std::function<std::string(const CudaExprCtx&, const std::string&, const std::string&)> step,
    bool mean = false) {
  return [step, mean](const CudaExprCtx& c) {
    std::string acc = c.args[0];
    for (size_t i = 1; i < c.args.size(); ++i) acc = step(c, acc, c.args[i]);
    if (mean)
      acc = fmt::format("({} / {})", acc, cuda_literal(c.type, static_cast<double>(c.args.size())));
    return acc;
  };
}

// Smallest and largest values of an integer dtype (exact in double up to 2^53; the 64-bit
// extremes print exactly through cuda_literal's integer path); 0 and 1 for the others.
double dtype_min(DType dt) { return static_cast<double>(int_dtype_min(dt)); }
double dtype_max(DType dt) { return is_integer(dt) ? static_cast<double>(int_dtype_max(dt)) : 1.0; }

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

std::string hard_swish_expr(const CudaExprCtx& c) {
  return fmt::format("({0} * {1}({2}, {3}({4}, {0} / {5} + {6})))", c.args[0],
                     cuda_math(c.type, "fmax"), lit(c.type, 0), cuda_math(c.type, "fmin"),
                     lit(c.type, 1), lit(c.type, 6), lit(c.type, 0.5));
}

std::string gelu_expr(const CudaExprCtx& c) {
  if (c.node.attr_string("approximate") == "tanh")
    return (c.type == ComputeType::Float && c.out_dtype == DType::Float16 ? "braze_gelu_tanh_f16("
                                                                          : "braze_gelu_tanh(") +
           c.args[0] + ")";
  const char* f = c.type != ComputeType::Float     ? "braze_gelu_erf("
                  : c.out_dtype == DType::Float16  ? "braze_gelu_erf_f16("
                  : c.out_dtype == DType::BFloat16 ? "braze_gelu_erf_bf16("
                                                   : "braze_gelu_erf(";
  return f + c.args[0] + ")";
}

std::string elu_expr(const CudaExprCtx& c) {
  return fmt::format("({0} >= {1} ? {0} : {2} * ({3}({0}) - {4}))", c.args[0], lit(c.type, 0),
                     lit(c.type, c.node.attr_float("alpha")), cuda_math(c.type, "exp"),
                     lit(c.type, 1));
}

std::string selu_expr(const CudaExprCtx& c) {
  double a = c.node.attr_float("alpha"), g = c.node.attr_float("gamma");
  return fmt::format("({0} > {1} ? {2} * {0} : {3} * ({4}({0}) - {5}))", c.args[0], lit(c.type, 0),
                     lit(c.type, g), lit(c.type, g * a), cuda_math(c.type, "exp"), lit(c.type, 1));
}

std::string celu_expr(const CudaExprCtx& c) {
  double a = c.node.attr_float("alpha");
  return fmt::format("({1}({0}, {2}) + {3}({2}, {4} * ({5}({0} / {4}) - {6})))", c.args[0],
                     cuda_math(c.type, "fmax"), lit(c.type, 0), cuda_math(c.type, "fmin"),
                     lit(c.type, a), cuda_math(c.type, "exp"), lit(c.type, 1));
}

std::string leaky_relu_expr(const CudaExprCtx& c) {
  return fmt::format("({0} >= {1} ? {0} : {2} * {0})", c.args[0], lit(c.type, 0),
                     lit(c.type, c.node.attr_float("alpha")));
}

std::string swish_expr(const CudaExprCtx& c) {
  return fmt::format("({0} / ({1} + {2}(-{3} * {0})))", c.args[0], lit(c.type, 1),
                     cuda_math(c.type, "exp"), lit(c.type, c.node.attr_float("alpha")));
}

std::string hard_sigmoid_expr(const CudaExprCtx& c) {
  return fmt::format("{0}({1}, {2}({3}, {4} * {5} + {6}))", cuda_math(c.type, "fmax"),
                     lit(c.type, 0), cuda_math(c.type, "fmin"), lit(c.type, 1),
                     lit(c.type, c.node.attr_float("alpha")), c.args[0],
                     lit(c.type, c.node.attr_float("beta")));
}

std::string thresholded_relu_expr(const CudaExprCtx& c) {
  return fmt::format("({0} > {1} ? {0} : {2})", c.args[0], lit(c.type, c.node.attr_float("alpha")),
                     lit(c.type, 0));
}

std::string shrink_expr(const CudaExprCtx& c) {
  double l = c.node.attr_float("lambd"), b = c.node.attr_float("bias");
  return fmt::format(
      "(({0}) ((double){1} < {2} ? (double){1} + {3} : ((double){1} > {4} ? (double){1} - {3} : "
      "0.0)))",
      c.type, c.args[0], lit(ComputeType::Double, -l), lit(ComputeType::Double, b),
      lit(ComputeType::Double, l));
}

std::string abs_expr(const CudaExprCtx& c) {
  if (c.type == ComputeType::UInt) return c.args[0];
  if (c.type == ComputeType::Int)
    return fmt::format("({0} < 0 ? (long long)(0ULL - (unsigned long long){0}) : {0})", c.args[0]);
  return fn1(c.type, "fabs", c.args[0]);
}

std::string neg_expr(const CudaExprCtx& c) {
  if (c.type == ComputeType::Int)
    return fmt::format("((long long)(0ULL - (unsigned long long){}))", c.args[0]);
  return "(-" + c.args[0] + ")";
}

std::string is_inf_expr(const CudaExprCtx& c) {
  bool neg = c.node.attr_int("detect_negative") != 0, pos = c.node.attr_int("detect_positive") != 0;
  return fmt::format("(isinf({0}) && (({0} > 0 && {1}) || ({0} < 0 && {2})))", c.args[0], pos, neg);
}

std::string div_expr(const CudaExprCtx& c) {
  if (c.type == ComputeType::Float) {
    if (auto by = float_div_by_constant(c.args[0], c.args[1], is_half(c.out_dtype))) return *by;
  }
  if (is_floating(c.type)) return fmt::format("({} / {})", c.args[0], c.args[1]);
  return fmt::format("braze_idiv({}, {})", c.args[0], c.args[1]);
}

std::string pow_expr(const CudaExprCtx& c) {
  if (is_floating(c.type)) {
    // Small constant exponents (RMS norm's x^2) as multiplications: pow costs dozens of
    // instructions an element, enough to slow a memory-bound kernel.
    const std::string& e = c.args[1];
    if (e == cuda_literal(c.type, 2) || e == cuda_literal(ComputeType::Int, 2))
      return fmt::format("({0} * {0})", c.args[0]);
    if (e == cuda_literal(c.type, 1) || e == cuda_literal(ComputeType::Int, 1)) return c.args[0];
    if (e == cuda_literal(c.type, 3) || e == cuda_literal(ComputeType::Int, 3))
      return fmt::format("({0} * {0} * {0})", c.args[0]);
    return fmt::format("{}({}, ({}){})", cuda_math(c.type, "pow"), c.args[0], c.type, c.args[1]);
  }
  return fmt::format("(({})braze_ipow((long long){}, (long long){}))", c.type, c.args[0],
                     c.args[1]);
}

std::string bit_shift_expr(const CudaExprCtx& c) {
  return fmt::format("braze_shift({}, {}, {})", c.args[0], c.args[1],
                     c.node.attr_string("direction") == "LEFT");
}

std::string clip_expr(const CudaExprCtx& c) {
  bool flt = is_floating(c.type);
  auto bound = [&](size_t i, bool upper) {
    if (c.args.size() > i && !c.args[i].empty()) return c.args[i];
    if (flt) return cuda_literal(c.type, upper ? INFINITY : -INFINITY);
    return upper ? cuda_literal(c.type, dtype_max(c.arg_dtypes[0]))
                 : cuda_literal(c.type, dtype_min(c.arg_dtypes[0]));
  };
  return fmt::format("({0} != {0} ? {0} : ({0} < {1} ? ({3}){1} : ({0} > {2} ? ({3}){2} : {0})))",
                     c.args[0], bound(1, false), bound(2, true), c.type);
}

std::string softsign_expr(const CudaExprCtx& c) {
  return fmt::format("({0} / ({1} + {2}))", c.args[0], lit(c.type, 1),
                     fn1(c.type, "fabs", c.args[0]));
}

}  // namespace

void lower_elementwise_ops(LoweringTable& t) {
  t.add("HardSwish").expr = hard_swish_expr;
  t.add("Gelu").expr = gelu_expr;
  t.add("Elu").expr = elu_expr;
  t.add("Selu").expr = selu_expr;
  t.add("Celu").expr = celu_expr;
  t.add("LeakyRelu").expr = leaky_relu_expr;
  t.add("Swish").expr = swish_expr;
  t.add("HardSigmoid").expr = hard_sigmoid_expr;
  t.add("ThresholdedRelu").expr = thresholded_relu_expr;
  t.add("Shrink").expr = shrink_expr;
  t.add("Abs").expr = abs_expr;
  t.add("Neg").expr = neg_expr;
  t.add("Relu").expr = cuda_fmt("({a} > ({t})0 ? {a} : ({t})0)");
  t.add("Sign").expr = cuda_fmt("({a} > ({t})0 ? ({t})1 : ({a} < ({t})0 ? ({t})-1 : {a}))");
  t.add("Not").expr = cuda_fmt("(!{a})");
  t.add("Identity").expr = cuda_fmt("{a}");
  t.add("IsNaN").expr = cuda_fmt("isnan({a})");
  t.add("IsInf").expr = is_inf_expr;
  t.add("Add").expr = wrapping("+");
  t.add("Sub").expr = wrapping("-");
  t.add("Mul").expr = wrapping("*");
  t.add("Div").expr = div_expr;
  t.add("Pow").expr = pow_expr;
  t.add("Mod").expr = [](const CudaExprCtx& c) {
    return fmt::format("braze_mod({}, {}, {})", c.args[0], c.args[1], c.node.attr_int("fmod") != 0);
  };
  t.add("BitShift").expr = bit_shift_expr;
  t.add("PRelu").expr = cuda_fmt("({a} < ({t})0 ? ({t})({b} * {a}) : {a})");
  t.add("And").expr = cuda_fmt("({a} && {b})");
  t.add("Or").expr = cuda_fmt("({a} || {b})");
  t.add("Xor").expr = cuda_fmt("({a} != {b})");
  t.add("Max").expr = folding([](const CudaExprCtx&, const std::string& a, const std::string& b) {
    return fmt::format("braze_max({}, {})", a, b);
  });
  t.add("Min").expr = folding([](const CudaExprCtx&, const std::string& a, const std::string& b) {
    return fmt::format("braze_min({}, {})", a, b);
  });
  t.add("Sum").expr = folding([](const CudaExprCtx& c, const std::string& a, const std::string& b) {
    return wrapping("+")(CudaExprCtx{c.node, c.type, {a, b}, c.arg_dtypes, c.out_dtype});
  });
  t.add("Mean").expr = folding([](const CudaExprCtx&, const std::string& a,
                                  const std::string& b) { return fmt::format("({} + {})", a, b); },
                               true);
  t.add("Equal").expr = cuda_fmt("({a} == {b})");
  t.add("Less").expr = cuda_fmt("({a} < {b})");
  t.add("Greater").expr = cuda_fmt("({a} > {b})");
  t.add("LessOrEqual").expr = cuda_fmt("({a} <= {b})");
  t.add("GreaterOrEqual").expr = cuda_fmt("({a} >= {b})");
  t.add("Where").expr = [](const CudaExprCtx& c) {
    return fmt::format("({} ? {} : {})", c.args[0], c.args[1], c.args[2]);
  };
  t.add("Clip").expr = clip_expr;
  t.add("Cast").expr = [](const CudaExprCtx& c) {
    return cuda_cast(c.args[0], c.arg_dtypes[0], c.out_dtype);
  };
  t.add("CastLike").expr = [](const CudaExprCtx& c) {
    return cuda_cast(c.args[0], c.arg_dtypes[0], c.out_dtype);
  };
  t.add("Exp").expr = math("exp");
  t.add("Log").expr = math("log");
  t.add("Sqrt").expr = math("sqrt");
  t.add("Reciprocal").expr = [](const CudaExprCtx& c) {
    return "(" + lit(c.type, 1) + " / " + c.args[0] + ")";
  };
  t.add("Sigmoid").expr = [](const CudaExprCtx& c) {
    return fmt::format("braze_sigmoid({})", c.args[0]);
  };
  t.add("Tanh").expr = math("tanh");
  t.add("Erf").expr = math("erf");
  t.add("Sin").expr = math("sin");
  t.add("Cos").expr = math("cos");
  t.add("Tan").expr = math("tan");
  t.add("Asin").expr = math("asin");
  t.add("Acos").expr = math("acos");
  t.add("Atan").expr = math("atan");
  t.add("Sinh").expr = math("sinh");
  t.add("Cosh").expr = math("cosh");
  t.add("Asinh").expr = math("asinh");
  t.add("Acosh").expr = math("acosh");
  t.add("Atanh").expr = math("atanh");
  t.add("Floor").expr = math("floor");
  t.add("Ceil").expr = math("ceil");
  t.add("Round").expr = math("rint");
  t.add("Softplus").expr = cuda_fmt("braze_softplus({a})");
  t.add("Softsign").expr = softsign_expr;
  t.add("Mish").expr = [](const CudaExprCtx& c) {
    return fmt::format("({0} * {1}(braze_softplus({0})))", c.args[0], cuda_math(c.type, "tanh"));
  };
}

}  // namespace braze::codegen
