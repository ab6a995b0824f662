// Element-wise ops: unary math and activations, binary arithmetic, comparisons and logic
// with numpy broadcasting, variadic Max/Min/Sum/Mean, Where, Clip, Cast, Identity, Dropout.
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "graph/ops/families.h"
#include "graph/ops/helpers.h"
#include "graph/onnx_dtype.h"

namespace braze::graph {
namespace {

using namespace ops;

// ---- unary -----------------------------------------------------------------------------
// A unary op is given as a factory: node -> generic lambda over the compute type.
template <class Factory>
RefFn unary_ref(Factory factory) {
  return [factory](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    auto f = factory(ctx.node());
    with_compute(x.dtype(), [&](auto c) {
      using C = decltype(c);
      for (int64_t i = 0; i < x.numel(); ++i) y.set<C>(i, static_cast<C>(f(x.get<C>(i))));
    });
  };
}

template <class Factory>
OpDef unary(std::string name, DTypeSet types, Factory factory, std::vector<AttrSpec> attrs = {},
            int since = 1) {
  OpDef d;
  d.name = std::move(name);
  d.since = since;
  d.oldest = 1;  // unary ops kept their meaning since opset 1 (only consumed_inputs went)
  d.kind = FusionKind::ElemWise;
  d.types = types;
  d.attrs = std::move(attrs);
  d.infer = infer_same_as_input0;
  d.reference = unary_ref(factory);
  return d;
}

// A unary op with no attributes over floating types, from a double -> double function.
OpDef unary_float(std::string name, double (*f)(double), int since = 1) {
  return unary(
      std::move(name), kFloatTypes, [f](const Node&) { return [f](double x) { return f(x); }; }, {},
      since);
}

double sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
}
double softplus(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

template <class C>
C nan_aware_max(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
  }
  return a > b ? a : b;
}
template <class C>
C nan_aware_min(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
  }
  return a < b ? a : b;
}

// Math functions and rounding.
void add_math_ops(std::vector<OpDef>& r) {
  r.push_back(unary_float("Exp", [](double x) { return std::exp(x); }));
  r.push_back(unary_float("Log", [](double x) { return std::log(x); }));
  r.push_back(unary_float("Sqrt", [](double x) { return std::sqrt(x); }));
  r.push_back(unary_float("Reciprocal", [](double x) { return 1.0 / x; }));
  r.push_back(unary_float("Sigmoid", sigmoid));
  r.push_back(unary_float("Tanh", [](double x) { return std::tanh(x); }));
  r.push_back(unary_float(
      "Erf", [](double x) { return std::erf(x); }, 9));
  r.push_back(unary_float(
      "Sin", [](double x) { return std::sin(x); }, 7));
  r.push_back(unary_float(
      "Cos", [](double x) { return std::cos(x); }, 7));
  r.push_back(unary_float(
      "Tan", [](double x) { return std::tan(x); }, 7));
  r.push_back(unary_float(
      "Asin", [](double x) { return std::asin(x); }, 7));
  r.push_back(unary_float(
      "Acos", [](double x) { return std::acos(x); }, 7));
  r.push_back(unary_float(
      "Atan", [](double x) { return std::atan(x); }, 7));
  r.push_back(unary_float(
      "Sinh", [](double x) { return std::sinh(x); }, 9));
  r.push_back(unary_float(
      "Cosh", [](double x) { return std::cosh(x); }, 9));
  r.push_back(unary_float(
      "Asinh", [](double x) { return std::asinh(x); }, 9));
  r.push_back(unary_float(
      "Acosh", [](double x) { return std::acosh(x); }, 9));
  r.push_back(unary_float(
      "Atanh", [](double x) { return std::atanh(x); }, 9));
  r.push_back(unary_float("Floor", [](double x) { return std::floor(x); }));
  r.back().rounds_half_inputs = true;
  r.push_back(unary_float("Ceil", [](double x) { return std::ceil(x); }));
  r.back().rounds_half_inputs = true;
  r.push_back(unary_float(
      "Round", [](double x) { return std::nearbyint(x); }, 11));  // half to even
  r.back().rounds_half_inputs = true;
}

// Activations.
void add_activation_ops(std::vector<OpDef>& r) {
  r.push_back(unary_float("Softplus", softplus));
  r.push_back(unary_float("Softsign", [](double x) { return x / (1.0 + std::fabs(x)); }));
  r.push_back(unary_float(
      "Mish", [](double x) { return x * std::tanh(softplus(x)); }, 18));
  r.push_back(unary(
      "HardSwish", kFloatTypes,
      [](const Node&) {
        return [](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); };
      },
      {}, 14));
  r.push_back(unary(
      "Gelu", kFloatTypes,
      [](const Node& n) {
        bool tanh_form = n.attr_string("approximate") == "tanh";
        if (!tanh_form && n.attr_string("approximate") != "none")
          throw UserError(n.describe() + ": approximate must be \"none\" or \"tanh\"");
        return [tanh_form](double x) { return tanh_form ? gelu_tanh(x) : gelu_erf(x); };
      },
      {attr_s("approximate", "none")}, 20));
  // The erf form with a float16 / bfloat16 result takes braze_gelu_erf_f16 / _bf16 (ops.cuh:
  // 10-12 instructions and an ex2 against ~24, within 1/12 of the type's ulp), the tanh form
  // with a float16 result braze_gelu_tanh_f16 (5 and two MUFU against ~20).
  r.push_back(unary("Elu", kFloatTypes,
                    [](const Node& n) {
                      double a = n.attr_float("alpha");
                      return [a](double x) { return x >= 0 ? x : a * (std::exp(x) - 1.0); };
                    },
                    {attr_f("alpha", 1.0)}));
  r.push_back(unary(
      "Selu", kFloatTypes,
      [](const Node& n) {
        double a = n.attr_float("alpha"), g = n.attr_float("gamma");
        return [a, g](double x) { return x > 0 ? g * x : g * a * (std::exp(x) - 1.0); };
      },
      {attr_f("alpha", 1.67326319217681884765625), attr_f("gamma", 1.05070102214813232421875)}));
  r.push_back(unary(
      "Celu", kFloatTypes,
      [](const Node& n) {
        double a = n.attr_float("alpha");
        return
            [a](double x) { return std::max(0.0, x) + std::min(0.0, a * (std::exp(x / a) - 1.0)); };
      },
      {attr_f("alpha", 1.0)}, 12));
  r.push_back(unary("LeakyRelu", kFloatTypes,
                    [](const Node& n) {
                      double a = n.attr_float("alpha");
                      return [a](double x) { return x >= 0 ? x : a * x; };
                    },
                    {attr_f("alpha", 0.01)}));
  // Swish (opset 24): x · sigmoid(alpha · x).
  r.push_back(unary(
      "Swish", kFloatTypes,
      [](const Node& n) {
        double a = n.attr_float("alpha");
        return [a](double x) { return x / (1.0 + std::exp(-a * x)); };
      },
      {attr_f("alpha", 1.0)}, 24));
  r.push_back(unary("HardSigmoid", kFloatTypes,
                    [](const Node& n) {
                      double a = n.attr_float("alpha"), b = n.attr_float("beta");
                      return [a, b](double x) { return std::max(0.0, std::min(1.0, a * x + b)); };
                    },
                    {attr_f("alpha", 0.2), attr_f("beta", 0.5)}));
  r.push_back(unary(
      "ThresholdedRelu", kFloatTypes,
      [](const Node& n) {
        double a = n.attr_float("alpha");
        return [a](double x) { return x > a ? x : 0.0; };
      },
      {attr_f("alpha", 1.0)}, 10));
  r.push_back(unary(
      "Shrink", kNumericTypes,
      [](const Node& n) {
        double l = n.attr_float("lambd"), b = n.attr_float("bias");
        return [l, b](auto x) -> decltype(x) {
          double v = static_cast<double>(x);
          return static_cast<decltype(x)>(v < -l ? v + b : v > l ? v - b : 0.0);
        };
      },
      {attr_f("lambd", 0.5), attr_f("bias", 0.0)}, 9));
}

// Sign, logic, identity and the float tests.
void add_sign_and_logic_ops(std::vector<OpDef>& r) {
  r.push_back(unary("Abs", kNumericTypes, [](const Node&) {
    return [](auto x) -> decltype(x) {
      if constexpr (std::is_unsigned_v<decltype(x)>)
        return x;
      else
        return x < 0 ? -x : x;
    };
  }));
  r.push_back(unary("Neg", kFloatTypes | kSignedTypes, [](const Node&) {
    return [](auto x) -> decltype(x) {
      if constexpr (std::is_integral_v<decltype(x)>)
        return static_cast<decltype(x)>(0ull - static_cast<uint64_t>(x));
      else
        return -x;
    };
  }));
  r.push_back(unary("Relu", kFloatTypes | kSignedTypes, [](const Node&) {
    return [](auto x) -> decltype(x) { return x > 0 ? x : 0; };
  }));
  r.push_back(unary(
      "Sign", kNumericTypes,
      [](const Node&) {
        return [](auto x) -> decltype(x) {
          if constexpr (std::is_floating_point_v<decltype(x)>) {
            if (std::isnan(x)) return x;
          }
          return x > 0 ? 1 : (x < 0 ? static_cast<decltype(x)>(-1) : 0);
        };
      },
      {}, 9));
  r.back().rounds_half_inputs = true;
  r.push_back(unary("Not", DTypeSet{DType::Bool},
                    [](const Node&) { return [](auto x) -> decltype(x) { return x ? 0 : 1; }; }));
  r.push_back(unary("Identity", kAllTypes, [](const Node&) { return [](auto x) { return x; }; }));

  OpDef isnan = unary_float(
      "IsNaN", [](double x) { return std::isnan(x) ? 1.0 : 0.0; }, 9);
  isnan.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, DType::Bool);
    ctx.set_shape(0, ctx.shape(0));
  };
  r.push_back(isnan);
  OpDef isinf = unary(
      "IsInf", kFloatTypes,
      [](const Node& n) {
        bool neg = n.attr_int("detect_negative") != 0, pos = n.attr_int("detect_positive") != 0;
        return [neg, pos](double x) {
          return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg)) ? 1.0 : 0.0;
        };
      },
      {attr_i("detect_negative", 1), attr_i("detect_positive", 1)}, 10);
  isinf.infer = isnan.infer;
  isinf.rounds_half_inputs = true;  // a float past 65504 is a float16 infinity
  r.push_back(isinf);
}

// ---- binary and variadic with broadcasting ---------------------------------------------
void infer_broadcast(InferCtx& ctx, DType out_dtype) {
  ctx.set_dtype(0, out_dtype);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) shapes.push_back(ctx.shape(i));
  ctx.set_shape(0, broadcast_shapes(ctx, shapes));
}

// Inputs are read in the compute type of input 0's dtype, written in the output's.
template <class Factory>
RefFn nary_ref(Factory factory) {
  return [factory](RefCtx& ctx) {
    std::vector<const Tensor*> ins;
    std::vector<const Shape*> shapes;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      ins.push_back(&ctx.input(i));
      shapes.push_back(&ctx.input(i).shape());
    }
    Tensor& y = ctx.output(0);
    auto f = factory(ctx.node());
    with_compute(ins[0]->dtype(), [&](auto c) {
      using C = decltype(c);
      for_each_broadcast(y.shape(), shapes, [&](int64_t o, const std::vector<int64_t>& off) {
        C acc = ins[0]->get<C>(off[0]);
        for (size_t k = 1; k < ins.size(); ++k)
          acc = static_cast<C>(f(acc, ins[k]->get<C>(off[k])));
        if constexpr (requires { f.finish(acc, ins.size()); }) acc = f.finish(acc, ins.size());
        y.set<C>(o, acc);
      });
    });
  };
}

template <class Factory>
OpDef binary(std::string name, DTypeSet types, Factory factory, std::vector<AttrSpec> attrs = {},
             int since = 1) {
  OpDef d;
  d.name = std::move(name);
  d.since = since;
  d.oldest = std::max(since, 7);  // before opset 7 broadcasting took attributes
  d.kind = FusionKind::Broadcast;
  d.min_inputs = d.max_inputs = 2;
  d.types = types;
  d.attrs = std::move(attrs);
  d.infer = [](InferCtx& ctx) { infer_broadcast(ctx, ctx.dtype(0)); };
  d.reference = nary_ref(factory);
  return d;
}

template <class Factory>
OpDef variadic(std::string name, DTypeSet types, Factory factory) {
  OpDef d = binary(std::move(name), types, factory);
  d.max_inputs = -1;
  d.min_inputs = 1;
  return d;
}

// Comparisons: result is bool; read in the compute type of input 0.
template <class Cmp>
OpDef comparison(std::string name, DTypeSet types, Cmp cmp, int since = 1) {
  OpDef d;
  d.name = std::move(name);
  d.since = since;
  d.oldest = std::max(since, 7);
  d.kind = FusionKind::Broadcast;
  d.min_inputs = d.max_inputs = 2;
  d.types = types;
  d.infer = [](InferCtx& ctx) { infer_broadcast(ctx, DType::Bool); };
  d.rounds_half_inputs = true;
  d.reference = [cmp](RefCtx& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    with_compute(a.dtype(), [&](auto c) {
      using C = decltype(c);
      for_each_broadcast(y.shape(), {&a.shape(), &b.shape()},
                         [&](int64_t o, const std::vector<int64_t>& off) {
                           y.set_i64(o, cmp(a.get<C>(off[0]), b.get<C>(off[1])) ? 1 : 0);
                         });
    });
  };
  return d;
}

template <class C>
C int_pow(C base, C exp) {
  if constexpr (std::is_signed_v<C>) {
    if (exp < 0) return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  uint64_t e = static_cast<uint64_t>(exp);
  while (e) {
    if (e & 1) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<C>(result);
}

struct MeanFn {
  template <class C>
  C operator()(C a, C b) const {
    return a + b;
  }
  template <class C>
  C finish(C acc, size_t n) const {
    return static_cast<C>(acc / static_cast<C>(n));
  }
};

void add_binary_ops(std::vector<OpDef>& r) {
  const DTypeSet arith = kNumericTypes;
  r.push_back(binary(
      "Add", arith,
      [](const Node&) {
        return [](auto a, auto b) -> decltype(a) { return static_cast<decltype(a)>(a + b); };
      },
      {}, 1));
  r.push_back(binary(
      "Sub", arith,
      [](const Node&) {
        return [](auto a, auto b) -> decltype(a) { return static_cast<decltype(a)>(a - b); };
      },
      {}, 1));
  r.push_back(binary(
      "Mul", arith,
      [](const Node&) {
        return [](auto a, auto b) -> decltype(a) {
          if constexpr (std::is_integral_v<decltype(a)>)
            return static_cast<decltype(a)>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
          else
            return a * b;
        };
      },
      {}, 1));
  r.push_back(binary(
      "Div", arith,
      [](const Node&) {
        return [](auto a, auto b) -> decltype(a) {
          using C = decltype(a);
          if constexpr (std::is_integral_v<C>) {
            if (b == 0) return 0;  // integer division by zero: 0 rather than a trap
            if constexpr (std::is_signed_v<C>) {
              if (b == -1) return static_cast<C>(0ull - static_cast<uint64_t>(a));
            }
          }
          return a / b;
        };
      },
      {}, 1));
  r.push_back(binary(
      "Pow", arith,
      [](const Node&) {
        return [](auto a, auto b) -> decltype(a) {
          using C = decltype(a);
          if constexpr (std::is_integral_v<C>)
            return int_pow<C>(a, b);
          else
            return std::pow(a, b);
        };
      },
      {}, 1));
  r.push_back(binary(
      "Mod", arith,
      [](const Node& n) {
        bool fmod_mode = n.attr_int("fmod") != 0;
        return [fmod_mode](auto a, auto b) -> decltype(a) {
          using C = decltype(a);
          if constexpr (std::is_floating_point_v<C>) {
            if (fmod_mode) return std::fmod(a, b);
            C m = std::fmod(a, b);
            if (m != 0 && ((m < 0) != (b < 0))) m += b;
            return m;
          } else {
            if (b == 0) return 0;
            if constexpr (std::is_signed_v<C>) {
              if (b == -1) return 0;
              C m = a % b;  // sign of the dividend (C fmod)
              if (!fmod_mode && m != 0 && ((m < 0) != (b < 0))) m += b;  // sign of the divisor
              return m;
            } else {
              return a % b;
            }
          }
        };
      },
      {attr_i("fmod", 0)}, 10));
  r.back().rounds_half_inputs = true;
}

// BitShift, PRelu and the Boolean And, Or, Xor.
void add_shift_prelu_and_logic_ops(std::vector<OpDef>& r) {
  r.push_back(binary(
      "BitShift", kUnsignedTypes,
      [](const Node& n) {
        std::string dir = n.attr_string("direction");
        if (dir != "LEFT" && dir != "RIGHT")
          throw UserError(n.describe() + ": direction must be \"LEFT\" or \"RIGHT\"");
        bool left = dir == "LEFT";
        return [left](auto a, auto b) -> decltype(a) {
          uint64_t x = static_cast<uint64_t>(a), s = static_cast<uint64_t>(b);
          if (s >= 64) return 0;
          return static_cast<decltype(a)>(left ? x << s : x >> s);
        };
      },
      {attr_req("direction", AttrType::String)}, 11));
  r.push_back(binary(
      "PRelu", kFloatTypes | kSignedTypes | kUnsignedTypes,
      [](const Node&) {
        return [](auto x, auto slope) -> decltype(x) {
          return x < 0 ? static_cast<decltype(x)>(slope * x) : x;
        };
      },
      {}, 1));
  // PRelu broadcasts the slope to X's shape (unidirectionally); X's shape is the output's.
  r.back().infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    Shape out = broadcast_shapes(ctx, {ctx.shape(0), ctx.shape(1)});
    if (out != ctx.shape(0)) ctx.fail("slope must broadcast to the shape of X");
    ctx.set_output(0, ctx.dtype(0), out);
  };
  r.push_back(binary(
      "And", DTypeSet{DType::Bool},
      [](const Node&) { return [](auto a, auto b) -> decltype(a) { return (a && b) ? 1 : 0; }; },
      {}, 1));
  r.push_back(binary(
      "Or", DTypeSet{DType::Bool},
      [](const Node&) { return [](auto a, auto b) -> decltype(a) { return (a || b) ? 1 : 0; }; },
      {}, 1));
  r.push_back(binary(
      "Xor", DTypeSet{DType::Bool},
      [](const Node&) {
        return [](auto a, auto b) -> decltype(a) { return ((a != 0) != (b != 0)) ? 1 : 0; };
      },
      {}, 1));
}

// Variadic Max, Min, Sum, Mean and the comparisons.
void add_variadic_and_comparison_ops(std::vector<OpDef>& r) {
  r.push_back(variadic("Max", kNumericTypes, [](const Node&) {
    return [](auto a, auto b) { return nan_aware_max(a, b); };
  }));
  r.push_back(variadic("Min", kNumericTypes, [](const Node&) {
    return [](auto a, auto b) { return nan_aware_min(a, b); };
  }));
  r.push_back(variadic("Sum", kNumericTypes, [](const Node&) {
    return [](auto a, auto b) -> decltype(a) { return static_cast<decltype(a)>(a + b); };
  }));
  r.push_back(variadic("Mean", kFloatTypes, [](const Node&) { return MeanFn{}; }));

  r.push_back(comparison("Equal", kAllTypes, [](auto a, auto b) { return a == b; }));
  r.push_back(comparison("Less", kNumericTypes, [](auto a, auto b) { return a < b; }));
  r.push_back(comparison("Greater", kNumericTypes, [](auto a, auto b) { return a > b; }));
  r.push_back(comparison(
      "LessOrEqual", kNumericTypes, [](auto a, auto b) { return a <= b; }, 12));
  r.push_back(comparison(
      "GreaterOrEqual", kNumericTypes, [](auto a, auto b) { return a >= b; }, 12));
}

// ---- Where, Clip, Cast, Dropout ---------------------------------------------------------
OpDef where_op() {
  OpDef d;
  d.name = "Where";
  d.since = 9;
  d.kind = FusionKind::Broadcast;
  d.min_inputs = d.max_inputs = 3;
  d.types = DTypeSet{DType::Bool};
  d.infer = [](InferCtx& ctx) {
    if (ctx.dtype(1) != ctx.dtype(2)) ctx.fail("X and Y must have the same dtype");
    ctx.set_dtype(0, ctx.dtype(1));
    ctx.set_shape(0, broadcast_shapes(ctx, {ctx.shape(0), ctx.shape(1), ctx.shape(2)}));
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
    Tensor& out = ctx.output(0);
    for_each_broadcast(out.shape(), {&c.shape(), &x.shape(), &y.shape()},
                       [&](int64_t o, const std::vector<int64_t>& off) {
                         if (c.get_i64(off[0]))
                           copy_element(x, off[1], out, o);
                         else
                           copy_element(y, off[2], out, o);
                       });
  };
  return d;
}

OpDef clip_op() {
  OpDef d;
  d.name = "Clip";
  d.oldest = 6;  // opset 6 (min and max attributes) is upgraded to inputs
  d.kind = FusionKind::ElemWise;
  d.min_inputs = 1;
  d.max_inputs = 3;
  d.types = kNumericTypes;
  d.attrs = {attr_opt("min", AttrType::Float), attr_opt("max", AttrType::Float)};
  d.upgrade = [](Graph& g, NodeId n) {    // opset < 11: min and max are attributes
    if (!g.node(n).has_input(0)) return;  // inference reports the missing input
    DType dt = g.value(g.node(n).inputs[0]).dtype;
    move_attr_to_input(g, n, "min", 1, dt);
    move_attr_to_input(g, n, "max", 2, dt);
  };
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      if (ctx.dtype(i) != ctx.dtype(0)) ctx.fail("min and max must have the input's dtype");
      int64_t n = checked_numel(ctx.shape(i));
      if (n != 1) ctx.fail("min and max must be scalars");
    }
    infer_same_as_input0(ctx);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    with_compute(x.dtype(), [&](auto c) {
      using C = decltype(c);
      C lo = ctx.has_input(1) ? ctx.input(1).get<C>(0) : std::numeric_limits<C>::lowest();
      C hi = ctx.has_input(2) ? ctx.input(2).get<C>(0) : std::numeric_limits<C>::max();
      if constexpr (std::is_floating_point_v<C>) {
        if (!ctx.has_input(1)) lo = -std::numeric_limits<C>::infinity();
        if (!ctx.has_input(2)) hi = std::numeric_limits<C>::infinity();
      }
      for (int64_t i = 0; i < x.numel(); ++i) {
        C v = x.get<C>(i);
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(v)) {
            y.set<C>(i, v);
            continue;
          }
        }
        y.set<C>(i, v < lo ? lo : (v > hi ? hi : v));
      }
    });
  };
  return d;
}

void convert_into(const Tensor& x, Tensor& y) {
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (is_float(x.dtype()))
      y.set_f64(i, x.get_f64(i));
    else if (is_unsigned_int(x.dtype()))
      y.set_u64(i, x.get_u64(i));
    else
      y.set_i64(i, x.get_i64(i));
  }
}

OpDef cast_op() {
  OpDef d;
  d.name = "Cast";
  d.kind = FusionKind::ElemWise;
  // round_mode (opset 24) applies to float8e8m0 only, a type braze does not take.
  d.attrs = {attr_req("to", AttrType::Int), attr_i("saturate", 1), attr_s("round_mode", "up")};
  d.infer = [](InferCtx& ctx) {
    auto dt = dtype_from_onnx(ctx.node().attr_int("to"));
    if (!dt)
      throw UnsupportedError(fmt::format("{}: cast to dtype {} is not supported",
                                         ctx.node().describe(),
                                         onnx_dtype_name(ctx.node().attr_int("to"))));
    ctx.set_dtype(0, *dt);
    ctx.set_shape(0, ctx.shape(0));
  };
  d.reference = [](RefCtx& ctx) { convert_into(ctx.input(0), ctx.output(0)); };
  d.rounds_half_inputs = true;
  return d;
}

OpDef castlike_op() {
  OpDef d;
  d.name = "CastLike";
  d.since = 15;
  d.kind = FusionKind::ElemWise;
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {attr_i("saturate", 1), attr_s("round_mode", "up")};
  // Input 1 gives only its type: the node becomes Cast to it, so no pass or kernel reads
  // input 1 (of any shape) as an operand, and CastLike of a constant folds.
  d.upgrade = [](Graph& g, NodeId id) {
    Node& n = g.node(id);
    if (!n.has_input(1)) return;
    n.attrs["to"] = dtype_to_onnx(g.value(n.inputs[1]).dtype);
    n.inputs.resize(1);
    n.op = &op("Cast");
  };
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(1));
    ctx.set_shape(0, ctx.shape(0));
  };
  d.reference = [](RefCtx& ctx) { convert_into(ctx.input(0), ctx.output(0)); };
  d.rounds_half_inputs = true;
  return d;
}

// numpy's legacy RandomState: MT19937 seeded with init_genrand, doubles from two draws.
// ONNX's reference Dropout draws its training mask this way, so matching it makes the
// training-mode node tests reproducible.
class NumpyRandom {
 public:
  explicit NumpyRandom(uint32_t seed) : mt_(seed) {}
  double uniform() {
    uint32_t a = static_cast<uint32_t>(mt_()) >> 5, b = static_cast<uint32_t>(mt_()) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

 private:
  std::mt19937 mt_;
};

OpDef dropout_op() {
  OpDef d;
  d.name = "Dropout";
  d.kind = FusionKind::ElemWise;
  d.min_inputs = 1;
  d.max_inputs = 3;
  d.max_outputs = 2;
  d.types = kFloatTypes;
  d.attrs = {attr_opt("seed", AttrType::Int)};
  d.shape_inputs = {1, 2};
  d.upgrade = [](Graph& g, NodeId n) {
    // opset < 12: ratio attribute, inference unless is_test=0 (opset < 7, not imported).
    Node& node = g.node(n);
    if (node.opset < 12 && node.has_input(0)) {
      DType dt = g.value(node.inputs[0]).dtype;
      move_attr_to_input(g, n, "ratio", 1, dt);
      g.node(n).attrs.erase("is_test");
    }
  };
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    ctx.set_dtype(1, DType::Bool);
    ctx.set_shape(0, ctx.shape(0));
    ctx.set_shape(1, ctx.shape(0));
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    bool training = ctx.has_input(2) && ctx.input(2).get_i64(0) != 0;
    double ratio = ctx.has_input(1) ? ctx.input(1).get_f64(0) : 0.5;
    if (training && (ratio < 0 || ratio >= 1)) ctx.fail("ratio must be in [0, 1)");
    Tensor& y = ctx.output(0);
    Tensor* mask = ctx.has_output(1) ? &ctx.output(1) : nullptr;
    if (!training || ratio == 0) {
      convert_into(x, y);
      if (mask)
        for (int64_t i = 0; i < x.numel(); ++i) mask->set_i64(i, 1);
      return;
    }
    uint32_t seed = ctx.node().has_attr("seed") ? static_cast<uint32_t>(ctx.node().attr_int("seed"))
                                                : std::random_device{}();
    NumpyRandom rng(seed);
    double scale = 1.0 / (1.0 - ratio);
    for (int64_t i = 0; i < x.numel(); ++i) {
      bool keep = rng.uniform() >= ratio;
      y.set_f64(i, keep ? x.get_f64(i) * scale : 0.0 * x.get_f64(i));
      if (mask) mask->set_i64(i, keep);
    }
  };
  return d;
}

}  // namespace

void register_elementwise_ops(std::vector<OpDef>& r) {
  add_math_ops(r);
  add_activation_ops(r);
  add_sign_and_logic_ops(r);
  add_binary_ops(r);
  add_shift_prelu_and_logic_ops(r);
  add_variadic_and_comparison_ops(r);
  r.push_back(where_op());
  r.push_back(clip_op());
  r.push_back(cast_op());
  r.push_back(castlike_op());
  r.push_back(dropout_op());
}

}  // namespace braze::graph
