// Element-wise ops: unary math and activations, binary arithmetic, comparisons and logic
// with numpy broadcasting, variadic Max/Min/Sum/Mean, Where, Clip, Cast, Identity, Dropout.
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

#include <fmt/format.h>

#include "graph/ops/families.h"
#include "graph/ops/helpers.h"
#include "graph/onnx_dtype.h"

namespace braze::graph {
namespace {

using namespace ops;

// ---- the reference, from the scalar expression ----------------------------------------
ScalarValue read_value(const Tensor& t, int64_t i) {
  ScalarValue v{};
  switch (compute_type(t.dtype())) {
    case ComputeType::Float:
    case ComputeType::Double:
      v.f = t.get_f64(i);
      break;
    case ComputeType::UInt:
      v.u = t.get_u64(i);
      break;
    default:
      v.i = t.get_i64(i);
      break;
  }
  return v;
}

void store_value(Tensor& t, int64_t i, ScalarValue v, ComputeType type) {
  if (is_floating(type))
    t.set_f64(i, v.f);
  else if (type == ComputeType::UInt)
    t.set_u64(i, v.u);
  else
    t.set_i64(i, v.i);
}

// Each output element is the op's scalar expression of its inputs' elements (numpy
// broadcasting), each read in its compute type; the result converts to the output's dtype as
// it is stored.
void scalar_reference(RefCtx& ctx) {
  std::vector<std::optional<DType>> dtypes;
  std::vector<const Shape*> shapes;
  std::vector<size_t> present;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    dtypes.push_back(ctx.has_input(i) ? std::optional(ctx.input(i).dtype()) : std::nullopt);
    if (!ctx.has_input(i)) continue;
    present.push_back(i);
    shapes.push_back(&ctx.input(i).shape());
  }
  ScalarEvaluator eval(scalar_expr(ctx.node(), dtypes));
  const ComputeType type = eval.result_type();
  Tensor& y = ctx.output(0);
  std::vector<ScalarValue> args(dtypes.size());
  for_each_broadcast(y.shape(), shapes, [&](int64_t o, const std::vector<int64_t>& off) {
    for (size_t k = 0; k < present.size(); ++k)
      args[present[k]] = read_value(ctx.input(present[k]), off[k]);
    store_value(y, o, eval(args.data()), type);
  });
}

// ---- unary -----------------------------------------------------------------------------
using S = ScalarOp;

// One scalar op of operand 0.
ScalarFn apply(ScalarOp op) {
  return [op](ScalarBuilder& b, const Node&) { return b.unary(op, b.arg(0)); };
}

OpDef unary(std::string name, DTypeSet types, ScalarFn scalar, std::vector<AttrSpec> attrs = {},
            int since = 1) {
  OpDef d;
  d.name = std::move(name);
  d.since = since;
  d.oldest = 1;  // unary ops kept their meaning since opset 1 (only consumed_inputs went)
  d.kind = FusionKind::ElemWise;
  d.types = types;
  d.attrs = std::move(attrs);
  d.infer = infer_same_as_input0;
  d.scalar = std::move(scalar);
  d.reference = scalar_reference;
  return d;
}

// A unary op with no attributes over floating types, one scalar op.
OpDef unary_float(std::string name, ScalarOp op, int since = 1) {
  return unary(std::move(name), kFloatTypes, apply(op), {}, since);
}

// Math functions and rounding.
void add_math_ops(std::vector<OpDef>& r) {
  for (auto [name, op, since] : std::initializer_list<std::tuple<const char*, ScalarOp, int>>{
           {"Exp", S::Exp, 1},
           {"Log", S::Log, 1},
           {"Sqrt", S::Sqrt, 1},
           {"Reciprocal", S::Reciprocal, 1},
           {"Sigmoid", S::Sigmoid, 1},
           {"Tanh", S::Tanh, 1},
           {"Erf", S::Erf, 9},
           {"Sin", S::Sin, 7},
           {"Cos", S::Cos, 7},
           {"Tan", S::Tan, 7},
           {"Asin", S::Asin, 7},
           {"Acos", S::Acos, 7},
           {"Atan", S::Atan, 7},
           {"Sinh", S::Sinh, 9},
           {"Cosh", S::Cosh, 9},
           {"Asinh", S::Asinh, 9},
           {"Acosh", S::Acosh, 9},
           {"Atanh", S::Atanh, 9},
           {"Softplus", S::Softplus, 1}})
    r.push_back(unary_float(name, op, since));
  for (auto [name, op, since] : std::initializer_list<std::tuple<const char*, ScalarOp, int>>{
           {"Floor", S::Floor, 1}, {"Ceil", S::Ceil, 1}, {"Round", S::Round, 11}}) {
    r.push_back(unary_float(name, op, since));  // Round: half to even
    r.back().rounds_half_inputs = true;
  }
}

// x / (1 + |x|), x · tanh(softplus(x)), x · clamp(x / 6 + 1/2, 0, 1).
void add_composite_activations(std::vector<OpDef>& r) {
  r.push_back(unary("Softsign", kFloatTypes, [](ScalarBuilder& b, const Node&) {
    ScalarId x = b.arg(0);
    return b.binary(S::Div, x, b.binary(S::Add, b.like(x, 1), b.unary(S::Abs, x)));
  }));
  r.push_back(unary(
      "Mish", kFloatTypes,
      [](ScalarBuilder& b, const Node&) {
        ScalarId x = b.arg(0);
        return b.binary(S::Mul, x, b.unary(S::Tanh, b.unary(S::Softplus, x)));
      },
      {}, 18));
  r.push_back(unary(
      "HardSwish", kFloatTypes,
      [](ScalarBuilder& b, const Node&) {
        ScalarId x = b.arg(0);
        ScalarId t = b.binary(S::Add, b.binary(S::Div, x, b.like(x, 6)), b.like(x, 0.5));
        return b.binary(S::Mul, x,
                        b.binary(S::FMax, b.like(x, 0), b.binary(S::FMin, b.like(x, 1), t)));
      },
      {}, 14));
  // The erf form with a float16 / bfloat16 result renders as a tuned device helper (10-12
  // instructions and an ex2 against ~24, within 1/12 of the type's ulp), the tanh form with a
  // float16 result too (5 and two MUFU against ~20): codegen/scalar_render.cpp.
  r.push_back(unary(
      "Gelu", kFloatTypes,
      [](ScalarBuilder& b, const Node& n) {
        const std::string& form = n.attr_string("approximate");
        if (form != "none" && form != "tanh")
          throw UserError(n.describe() + ": approximate must be \"none\" or \"tanh\"");
        return b.unary(form == "tanh" ? S::GeluTanh : S::GeluErf, b.arg(0));
      },
      {attr_s("approximate", "none")}, 20));
}

// x >= 0 ? x : alpha (e^x - 1) and its relatives.
void add_exponential_units(std::vector<OpDef>& r) {
  auto expm1 = [](ScalarBuilder& b, ScalarId x) {
    return b.binary(S::Sub, b.unary(S::Exp, x), b.like(x, 1));
  };
  r.push_back(unary("Elu", kFloatTypes,
                    [expm1](ScalarBuilder& b, const Node& n) {
                      ScalarId x = b.arg(0);
                      return b.where(
                          b.binary(S::GreaterEqual, x, b.like(x, 0)), x,
                          b.binary(S::Mul, b.like(x, n.attr_float("alpha")), expm1(b, x)));
                    },
                    {attr_f("alpha", 1.0)}));
  r.push_back(unary(
      "Selu", kFloatTypes,
      [expm1](ScalarBuilder& b, const Node& n) {
        ScalarId x = b.arg(0);
        double a = n.attr_float("alpha"), g = n.attr_float("gamma");
        return b.where(b.binary(S::Greater, x, b.like(x, 0)), b.binary(S::Mul, b.like(x, g), x),
                       b.binary(S::Mul, b.like(x, g * a), expm1(b, x)));
      },
      {attr_f("alpha", 1.67326319217681884765625), attr_f("gamma", 1.05070102214813232421875)}));
  r.push_back(unary(
      "Celu", kFloatTypes,
      [expm1](ScalarBuilder& b, const Node& n) {
        ScalarId x = b.arg(0);
        ScalarId a = b.like(x, n.attr_float("alpha"));
        ScalarId neg = b.binary(S::Mul, a, expm1(b, b.binary(S::Div, x, a)));
        return b.binary(S::Add, b.binary(S::FMax, x, b.like(x, 0)),
                        b.binary(S::FMin, b.like(x, 0), neg));
      },
      {attr_f("alpha", 1.0)}, 12));
}

// Piecewise-linear activations and Swish.
void add_linear_units(std::vector<OpDef>& r) {
  r.push_back(unary("LeakyRelu", kFloatTypes,
                    [](ScalarBuilder& b, const Node& n) {
                      ScalarId x = b.arg(0);
                      return b.where(b.binary(S::GreaterEqual, x, b.like(x, 0)), x,
                                     b.binary(S::Mul, b.like(x, n.attr_float("alpha")), x));
                    },
                    {attr_f("alpha", 0.01)}));
  r.push_back(unary(  // Swish (opset 24): x · sigmoid(alpha · x)
      "Swish", kFloatTypes,
      [](ScalarBuilder& b, const Node& n) {
        ScalarId x = b.arg(0);
        ScalarId e = b.unary(S::Exp, b.binary(S::Mul, b.like(x, -n.attr_float("alpha")), x));
        return b.binary(S::Div, x, b.binary(S::Add, b.like(x, 1), e));
      },
      {attr_f("alpha", 1.0)}, 24));
  r.push_back(unary("HardSigmoid", kFloatTypes,
                    [](ScalarBuilder& b, const Node& n) {
                      ScalarId x = b.arg(0);
                      ScalarId t =
                          b.binary(S::Add, b.binary(S::Mul, b.like(x, n.attr_float("alpha")), x),
                                   b.like(x, n.attr_float("beta")));
                      return b.binary(S::FMax, b.like(x, 0), b.binary(S::FMin, b.like(x, 1), t));
                    },
                    {attr_f("alpha", 0.2), attr_f("beta", 0.5)}));
  r.push_back(unary(
      "ThresholdedRelu", kFloatTypes,
      [](ScalarBuilder& b, const Node& n) {
        ScalarId x = b.arg(0);
        return b.where(b.binary(S::Greater, x, b.like(x, n.attr_float("alpha"))), x, b.like(x, 0));
      },
      {attr_f("alpha", 1.0)}, 10));
  // Shrink computes in double whatever its type: lambd and bias are floats.
  r.push_back(unary(
      "Shrink", kNumericTypes,
      [](ScalarBuilder& b, const Node& n) {
        double l = n.attr_float("lambd"), bias = n.attr_float("bias");
        ScalarId x = b.convert(b.arg(0), ComputeType::Double);
        auto d = [&](double v) { return b.constant(v, ComputeType::Double); };
        ScalarId r =
            b.where(b.binary(S::Less, x, d(-l)), b.binary(S::Add, x, d(bias)),
                    b.where(b.binary(S::Greater, x, d(l)), b.binary(S::Sub, x, d(bias)), d(0)));
        return b.convert(r, b.type(b.arg(0)));
      },
      {attr_f("lambd", 0.5), attr_f("bias", 0.0)}, 9));
}

// Sign, logic, identity and the float tests.
void add_sign_and_logic_ops(std::vector<OpDef>& r) {
  r.push_back(unary("Abs", kNumericTypes, apply(S::Abs)));
  r.push_back(unary("Neg", kFloatTypes | kSignedTypes, apply(S::Neg)));
  r.push_back(unary("Relu", kFloatTypes | kSignedTypes, [](ScalarBuilder& b, const Node&) {
    ScalarId x = b.arg(0);
    return b.where(b.binary(S::Greater, x, b.like(x, 0)), x, b.like(x, 0));
  }));
  r.push_back(unary(  // NaN stays NaN, zero zero
      "Sign", kNumericTypes,
      [](ScalarBuilder& b, const Node&) {
        ScalarId x = b.arg(0);
        return b.where(b.binary(S::Greater, x, b.like(x, 0)), b.like(x, 1),
                       b.where(b.binary(S::Less, x, b.like(x, 0)), b.like(x, -1), x));
      },
      {}, 9));
  r.back().rounds_half_inputs = true;
  r.push_back(unary("Not", DTypeSet{DType::Bool}, apply(S::Not)));
  r.push_back(unary("Identity", kAllTypes, [](ScalarBuilder& b, const Node&) { return b.arg(0); }));
  r.back().passes_through = [](const Graph&, const Node&) { return true; };

  auto infer_bool = [](InferCtx& ctx) {
    ctx.set_dtype(0, DType::Bool);
    ctx.set_shape(0, ctx.shape(0));
  };
  r.push_back(unary_float("IsNaN", S::IsNaN, 9));
  r.back().infer = infer_bool;
  r.push_back(unary(
      "IsInf", kFloatTypes,
      [](ScalarBuilder& b, const Node& n) {
        return b.is_inf(b.arg(0), n.attr_int("detect_positive") != 0,
                        n.attr_int("detect_negative") != 0);
      },
      {attr_i("detect_negative", 1), attr_i("detect_positive", 1)}, 10));
  r.back().infer = infer_bool;
  r.back().rounds_half_inputs = true;  // a float past 65504 is a float16 infinity
}

// ---- binary and variadic with broadcasting ---------------------------------------------
void infer_broadcast(InferCtx& ctx, DType out_dtype) {
  ctx.set_dtype(0, out_dtype);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) shapes.push_back(ctx.shape(i));
  ctx.set_shape(0, broadcast_shapes(ctx, shapes));
}

// One scalar op of operands 0 and 1.
ScalarFn apply2(ScalarOp op) {
  return [op](ScalarBuilder& b, const Node&) { return b.binary(op, b.arg(0), b.arg(1)); };
}

// Operand 1 is converted to operand 0's compute type (Pow's exponent).
OpDef binary(std::string name, DTypeSet types, ScalarFn scalar, std::vector<AttrSpec> attrs = {},
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
  d.scalar = std::move(scalar);
  d.reference = scalar_reference;
  return d;
}

// Folds the operands left to right with op; Mean divides the sum by their count.
OpDef variadic(std::string name, DTypeSet types, ScalarOp op, bool mean = false) {
  OpDef d = binary(std::move(name), types, [op, mean](ScalarBuilder& b, const Node&) {
    ScalarId acc = b.arg(0);
    for (size_t i = 1; i < b.num_args(); ++i) acc = b.binary(op, acc, b.arg(i));
    if (mean) acc = b.binary(S::Div, acc, b.like(acc, static_cast<double>(b.num_args())));
    return acc;
  });
  d.max_inputs = -1;
  d.min_inputs = 1;
  return d;
}

// Comparisons: the result is bool, operand 1 read in operand 0's compute type.
OpDef comparison(std::string name, DTypeSet types, ScalarOp op, int since = 1) {
  OpDef d = binary(std::move(name), types, apply2(op), {}, since);
  d.infer = [](InferCtx& ctx) { infer_broadcast(ctx, DType::Bool); };
  d.rounds_half_inputs = true;
  return d;
}

void add_binary_ops(std::vector<OpDef>& r) {
  const DTypeSet arith = kNumericTypes;
  r.push_back(binary("Add", arith, apply2(S::Add)));
  r.push_back(binary("Sub", arith, apply2(S::Sub)));
  r.push_back(binary("Mul", arith, apply2(S::Mul)));
  r.push_back(binary("Div", arith, apply2(S::Div)));  // integers: by zero gives 0
  r.push_back(binary("Pow", arith, apply2(S::Pow)));
  r.push_back(binary(  // the sign of the divisor (Python's %), or with fmod of the dividend
      "Mod", arith,
      [](ScalarBuilder& b, const Node& n) {
        return b.binary(n.attr_int("fmod") != 0 ? S::FMod : S::Mod, b.arg(0), b.arg(1));
      },
      {attr_i("fmod", 0)}, 10));
  r.back().rounds_half_inputs = true;
}

// BitShift, PRelu and the Boolean And, Or, Xor.
void add_shift_prelu_and_logic_ops(std::vector<OpDef>& r) {
  r.push_back(binary(
      "BitShift", kUnsignedTypes,
      [](ScalarBuilder& b, const Node& n) {
        const std::string& dir = n.attr_string("direction");
        if (dir != "LEFT" && dir != "RIGHT")
          throw UserError(n.describe() + ": direction must be \"LEFT\" or \"RIGHT\"");
        return b.binary(dir == "LEFT" ? S::ShiftLeft : S::ShiftRight, b.arg(0), b.arg(1));
      },
      {attr_req("direction", AttrType::String)}, 11));
  r.push_back(binary(
      "PRelu", kFloatTypes | kSignedTypes | kUnsignedTypes, [](ScalarBuilder& b, const Node&) {
        ScalarId x = b.arg(0);
        return b.where(b.binary(S::Less, x, b.like(x, 0)), b.binary(S::Mul, b.arg(1), x), x);
      }));
  // PRelu broadcasts the slope to X's shape (unidirectionally); X's shape is the output's.
  r.back().infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    Shape out = broadcast_shapes(ctx, {ctx.shape(0), ctx.shape(1)});
    if (out != ctx.shape(0)) ctx.fail("slope must broadcast to the shape of X");
    ctx.set_output(0, ctx.dtype(0), out);
  };
  r.push_back(binary("And", DTypeSet{DType::Bool}, apply2(S::And)));
  r.push_back(binary("Or", DTypeSet{DType::Bool}, apply2(S::Or)));
  r.push_back(binary("Xor", DTypeSet{DType::Bool}, apply2(S::Xor)));
}

// Variadic Max, Min, Sum, Mean and the comparisons.
void add_variadic_and_comparison_ops(std::vector<OpDef>& r) {
  r.push_back(variadic("Max", kNumericTypes, S::Max));  // NaN if any operand is NaN
  r.push_back(variadic("Min", kNumericTypes, S::Min));
  r.push_back(variadic("Sum", kNumericTypes, S::Add));
  r.push_back(variadic("Mean", kFloatTypes, S::Add, true));

  r.push_back(comparison("Equal", kAllTypes, S::Equal));
  r.push_back(comparison("Less", kNumericTypes, S::Less));
  r.push_back(comparison("Greater", kNumericTypes, S::Greater));
  r.push_back(comparison("LessOrEqual", kNumericTypes, S::LessEqual, 12));
  r.push_back(comparison("GreaterOrEqual", kNumericTypes, S::GreaterEqual, 12));
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
  d.scalar = [](ScalarBuilder& b, const Node&) { return b.where(b.arg(0), b.arg(1), b.arg(2)); };
  d.reference = scalar_reference;
  return d;
}

// NaN stays NaN; a bound left out is the type's extreme (an infinity for floats).
ScalarId clip_scalar(ScalarBuilder& b, const Node&) {
  ScalarId x = b.arg(0);
  ScalarId lo = b.has(1) ? b.arg(1) : b.lowest(x);
  ScalarId hi = b.has(2) ? b.arg(2) : b.highest(x);
  return b.where(
      b.binary(S::NotEqual, x, x), x,
      b.where(b.binary(S::Less, x, lo), lo, b.where(b.binary(S::Greater, x, hi), hi, x)));
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
  d.scalar = clip_scalar;
  d.reference = scalar_reference;
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
  d.attrs = {with_role(attr_req("to", AttrType::Int), AttrRole::OutputDType), attr_i("saturate", 1),
             attr_s("round_mode", "up")};
  // A Cast to the type its input has already (what --precision leaves of an fp32 model's
  // "compute this in float" casts) changes nothing.
  d.passes_through = [](const Graph& g, const Node& n) {
    return n.outputs[0] != kNoValue && g.value(n.inputs[0]).dtype == g.value(n.outputs[0]).dtype;
  };
  d.infer = [](InferCtx& ctx) {
    auto dt = dtype_from_onnx(ctx.node().attr_int("to"));
    if (!dt)
      throw UnsupportedError(fmt::format("{}: cast to dtype {} is not supported",
                                         ctx.node().describe(),
                                         onnx_dtype_name(ctx.node().attr_int("to"))));
    ctx.set_dtype(0, *dt);
    ctx.set_shape(0, ctx.shape(0));
  };
  d.scalar = [](ScalarBuilder& b, const Node& n) {
    auto to = dtype_from_onnx(n.attr_int("to"));
    if (!to)
      throw UnsupportedError(fmt::format("{}: cast to dtype {} is not supported", n.describe(),
                                         onnx_dtype_name(n.attr_int("to"))));
    return b.cast(b.arg(0), *to);
  };
  d.reference = scalar_reference;
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
  d.scalar = [](ScalarBuilder& b, const Node&) { return b.cast(b.arg(0), b.dtype(b.arg(1))); };
  d.reference = scalar_reference;
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
  d.may_be_random = true;
  d.passes_through = [](const Graph& g, const Node& n) {  // inference mode
    if (!n.has_input(2)) return true;
    const Value& mode = g.value(n.inputs[2]);
    return mode.constant && mode.constant->numel() == 1 && mode.constant->get_i64(0) == 0;
  };
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
  add_composite_activations(r);
  add_exponential_units(r);
  add_linear_units(r);
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
