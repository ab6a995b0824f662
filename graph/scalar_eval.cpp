// The CPU evaluation of scalar expressions (graph/scalar.h), the reference executor's
// element-wise semantics.
#include <braze/error.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "graph/scalar.h"

namespace braze::graph {
namespace {

enum class Kind { F, I, U };  // where a ScalarValue of a compute type keeps its value
Kind kind(ComputeType t) {
  if (is_floating(t)) return Kind::F;
  return t == ComputeType::UInt ? Kind::U : Kind::I;
}

// double -> int64 saturating, NaN to 0 (C's conversion is undefined past the range).
int64_t saturate_i64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// double -> uint64 saturating, NaN and negatives to 0.
uint64_t saturate_u64(double v) {
  if (!(v > 0)) return 0;
  if (v >= 18446744073709551615.0) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(v);
}

ScalarValue convert_value(ScalarValue v, ComputeType from, ComputeType to) {
  ScalarValue r{};
  const Kind f = kind(from);
  if (to == ComputeType::Bool) {
    r.i = f == Kind::F ? v.f != 0 : f == Kind::U ? v.u != 0 : v.i != 0;
    return r;
  }
  switch (kind(to)) {
    case Kind::F:
      r.f = f == Kind::F ? v.f : f == Kind::U ? static_cast<double>(v.u) : static_cast<double>(v.i);
      break;
    case Kind::I:
      r.i = f == Kind::F ? saturate_i64(v.f) : f == Kind::I ? v.i : static_cast<int64_t>(v.u);
      break;
    case Kind::U:
      r.u = f == Kind::F   ? static_cast<uint64_t>(saturate_i64(v.f))
            : f == Kind::I ? static_cast<uint64_t>(v.i)
                           : v.u;
      break;
  }
  return r;
}

ScalarValue leaf_value(const ScalarNode& n) {
  ScalarValue r{};
  const bool low = n.op == ScalarOp::Lowest;
  switch (kind(n.type)) {
    case Kind::F:
      r.f = n.op == ScalarOp::Const ? n.value
            : low                   ? -std::numeric_limits<double>::infinity()
                                    : std::numeric_limits<double>::infinity();
      break;
    case Kind::I:
      r.i = n.op == ScalarOp::Const ? saturate_i64(n.value)
            : low                   ? int_dtype_min(n.dtype)
                                    : static_cast<int64_t>(int_dtype_max(n.dtype));
      if (n.type == ComputeType::Bool) r.i = r.i != 0;
      break;
    case Kind::U:
      r.u = n.op == ScalarOp::Const ? saturate_u64(n.value) : low ? 0 : int_dtype_max(n.dtype);
      break;
  }
  return r;
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

double math(ScalarOp op, double x) {
  switch (op) {
    case ScalarOp::Neg:
      return -x;
    case ScalarOp::Abs:
      return x < 0 ? -x : x;
    case ScalarOp::Reciprocal:
      return 1.0 / x;
    case ScalarOp::Exp:
      return std::exp(x);
    case ScalarOp::Log:
      return std::log(x);
    case ScalarOp::Sqrt:
      return std::sqrt(x);
    case ScalarOp::Tanh:
      return std::tanh(x);
    case ScalarOp::Erf:
      return std::erf(x);
    case ScalarOp::Sin:
      return std::sin(x);
    case ScalarOp::Cos:
      return std::cos(x);
    case ScalarOp::Tan:
      return std::tan(x);
    case ScalarOp::Asin:
      return std::asin(x);
    case ScalarOp::Acos:
      return std::acos(x);
    case ScalarOp::Atan:
      return std::atan(x);
    case ScalarOp::Sinh:
      return std::sinh(x);
    case ScalarOp::Cosh:
      return std::cosh(x);
    case ScalarOp::Asinh:
      return std::asinh(x);
    case ScalarOp::Acosh:
      return std::acosh(x);
    case ScalarOp::Atanh:
      return std::atanh(x);
    case ScalarOp::Floor:
      return std::floor(x);
    case ScalarOp::Ceil:
      return std::ceil(x);
    case ScalarOp::Round:
      return std::nearbyint(x);  // half to even
    case ScalarOp::Sigmoid:
      return sigmoid(x);
    case ScalarOp::Softplus:
      return softplus(x);
    case ScalarOp::GeluErf:
      return gelu_erf(x);
    case ScalarOp::GeluTanh:
      return gelu_tanh(x);
    default:
      break;
  }
  throw InternalError(fmt::format("scalar {} has no floating evaluation", scalar_op_name(op)));
}

ScalarValue unary(const ScalarNode& n, ScalarValue a, ComputeType at) {
  ScalarValue r{};
  const Kind k = kind(at);
  if (n.op == ScalarOp::Not) {
    r.i = k == Kind::F ? a.f == 0 : k == Kind::U ? a.u == 0 : a.i == 0;
  } else if (n.op == ScalarOp::IsNaN) {
    r.i = k == Kind::F && std::isnan(a.f);
  } else if (n.op == ScalarOp::IsInf) {
    const bool pos = n.index & 1, neg = n.index & 2;
    r.i = k == Kind::F && std::isinf(a.f) && ((a.f > 0 && pos) || (a.f < 0 && neg));
  } else if (k == Kind::F) {
    r.f = math(n.op, a.f);
  } else if (n.op == ScalarOp::Neg || (n.op == ScalarOp::Abs && k == Kind::I && a.i < 0)) {
    r.u = 0ull - (k == Kind::I ? static_cast<uint64_t>(a.i) : a.u);  // -INT64_MIN wraps
  } else if (n.op == ScalarOp::Abs) {
    r = a;
  } else {
    throw InternalError(fmt::format("scalar {} has no integer evaluation", scalar_op_name(n.op)));
  }
  return r;
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

// Max and Min: a NaN operand gives NaN.
double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : a > b ? a : b;
}
double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : a < b ? a : b;
}

double float_mod(double a, double b) {  // the sign of the divisor, as Python's %
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// Comparisons of two values of one type; nullopt for other ops.
template <class C>
std::optional<bool> compare(ScalarOp op, C a, C b) {
  switch (op) {
    case ScalarOp::Equal:
      return a == b;
    case ScalarOp::NotEqual:
      return a != b;
    case ScalarOp::Less:
      return a < b;
    case ScalarOp::LessEqual:
      return a <= b;
    case ScalarOp::Greater:
      return a > b;
    case ScalarOp::GreaterEqual:
      return a >= b;
    default:
      return std::nullopt;
  }
}

double float_binary(ScalarOp op, double a, double b) {
  switch (op) {
    case ScalarOp::Add:
      return a + b;
    case ScalarOp::Sub:
      return a - b;
    case ScalarOp::Mul:
      return a * b;
    case ScalarOp::Div:
      return a / b;
    case ScalarOp::Pow:
      return std::pow(a, b);
    case ScalarOp::Mod:
      return float_mod(a, b);
    case ScalarOp::FMod:
      return std::fmod(a, b);
    case ScalarOp::Max:
      return nan_max(a, b);
    case ScalarOp::Min:
      return nan_min(a, b);
    case ScalarOp::FMax:
      return std::fmax(a, b);
    case ScalarOp::FMin:
      return std::fmin(a, b);
    default:
      break;
  }
  throw InternalError(fmt::format("scalar {} has no floating evaluation", scalar_op_name(op)));
}

int64_t signed_binary(ScalarOp op, int64_t a, int64_t b) {
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case ScalarOp::Add:
      return static_cast<int64_t>(ua + ub);
    case ScalarOp::Sub:
      return static_cast<int64_t>(ua - ub);
    case ScalarOp::Mul:
      return static_cast<int64_t>(ua * ub);
    case ScalarOp::Div:  // by zero: 0 rather than a trap; by -1 wraps
      return b == 0 ? 0 : b == -1 ? static_cast<int64_t>(0ull - ua) : a / b;
    case ScalarOp::Pow:
      return int_pow<int64_t>(a, b);
    case ScalarOp::Mod:
    case ScalarOp::FMod: {
      if (b == 0 || b == -1) return 0;
      int64_t m = a % b;  // the sign of the dividend (C's fmod); Mod: of the divisor
      if (op == ScalarOp::Mod && m != 0 && ((m < 0) != (b < 0))) m += b;
      return m;
    }
    case ScalarOp::Max:
    case ScalarOp::FMax:
      return a > b ? a : b;
    case ScalarOp::Min:
    case ScalarOp::FMin:
      return a < b ? a : b;
    case ScalarOp::And:
      return a && b;
    case ScalarOp::Or:
      return a || b;
    case ScalarOp::Xor:
      return (a != 0) != (b != 0);
    default:
      break;
  }
  throw InternalError(fmt::format("scalar {} has no signed evaluation", scalar_op_name(op)));
}

uint64_t unsigned_binary(ScalarOp op, uint64_t a, uint64_t b) {
  switch (op) {
    case ScalarOp::Add:
      return a + b;
    case ScalarOp::Sub:
      return a - b;
    case ScalarOp::Mul:
      return a * b;
    case ScalarOp::Div:
      return b == 0 ? 0 : a / b;
    case ScalarOp::Pow:
      return int_pow<uint64_t>(a, b);
    case ScalarOp::Mod:
    case ScalarOp::FMod:
      return b == 0 ? 0 : a % b;
    case ScalarOp::Max:
    case ScalarOp::FMax:
      return a > b ? a : b;
    case ScalarOp::Min:
    case ScalarOp::FMin:
      return a < b ? a : b;
    case ScalarOp::ShiftLeft:
      return b >= 64 ? 0 : a << b;
    case ScalarOp::ShiftRight:
      return b >= 64 ? 0 : a >> b;
    default:
      break;
  }
  throw InternalError(fmt::format("scalar {} has no unsigned evaluation", scalar_op_name(op)));
}

// a op b, both of type t (b converted to a's type by the caller).
ScalarValue binary(ScalarOp op, ScalarValue a, ScalarValue b, ComputeType t) {
  ScalarValue r{};
  const Kind k = kind(t);
  std::optional<bool> c = k == Kind::F   ? compare(op, a.f, b.f)
                          : k == Kind::U ? compare(op, a.u, b.u)
                                         : compare(op, a.i, b.i);
  if (c)
    r.i = *c;
  else if (k == Kind::F)
    r.f = float_binary(op, a.f, b.f);
  else if (k == Kind::U)
    r.u = unsigned_binary(op, a.u, b.u);
  else
    r.i = signed_binary(op, a.i, b.i);
  return r;
}

bool truth(ScalarValue v, ComputeType t) {
  const Kind k = kind(t);
  return k == Kind::F ? v.f != 0 : k == Kind::U ? v.u != 0 : v.i != 0;
}

}  // namespace

ScalarEvaluator::ScalarEvaluator(ScalarExpr e) : e_(std::move(e)), vals_(e_.nodes.size()) {
  for (size_t i = 0; i < e_.nodes.size(); ++i)
    if (e_.nodes[i].op != ScalarOp::Arg && has_prop(e_.nodes[i].op, kLeaf))
      vals_[i] = leaf_value(e_.nodes[i]);
}

ComputeType ScalarEvaluator::result_type() const {
  const ScalarNode& r = e_.result();
  return r.op == ScalarOp::Cast ? e_.node(r.args[0]).type : r.type;
}

ScalarValue ScalarEvaluator::operator()(const ScalarValue* args) {
  for (size_t i = 0; i < e_.nodes.size(); ++i) {
    const ScalarNode& n = e_.nodes[i];
    auto val = [&](int k) { return vals_[static_cast<size_t>(n.args[k])]; };
    auto type = [&](int k) { return e_.node(n.args[k]).type; };
    switch (scalar_arity(n.op)) {
      case 0:
        if (n.op == ScalarOp::Arg) vals_[i] = args[n.index];
        break;
      case 1:
        vals_[i] = n.op == ScalarOp::Cast      ? val(0)
                   : n.op == ScalarOp::Convert ? convert_value(val(0), type(0), n.type)
                                               : unary(n, val(0), type(0));
        break;
      case 2:
        vals_[i] = binary(n.op, val(0), convert_value(val(1), type(1), type(0)), type(0));
        break;
      default:
        vals_[i] = truth(val(0), type(0)) ? val(1) : val(2);
        break;
    }
  }
  return vals_[static_cast<size_t>(e_.root)];
}

}  // namespace braze::graph
