#include "graph/scalar.h"

#include <braze/error.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace braze::graph {

ComputeType compute_type(DType dt) {
  if (dt == DType::Float64) return ComputeType::Double;
  if (is_float(dt)) return ComputeType::Float;
  if (dt == DType::Bool) return ComputeType::Bool;
  if (is_unsigned_int(dt)) return ComputeType::UInt;
  return ComputeType::Int;
}

namespace {

struct OpInfo {
  ScalarOp op;
  std::string_view name;
  uint32_t props;
};

constexpr uint32_t kMathUnary = kUnary | kMath;
constexpr uint32_t kArith = kBinary | kWrapping;

// In ScalarOp's order (checked where the table is read).
constexpr OpInfo kOps[] = {
    {ScalarOp::Arg, "Arg", kLeaf},
    {ScalarOp::Const, "Const", kLeaf},
    {ScalarOp::Lowest, "Lowest", kLeaf},
    {ScalarOp::Highest, "Highest", kLeaf},
    {ScalarOp::Neg, "Neg", kUnary | kWrapping},
    {ScalarOp::Abs, "Abs", kUnary | kWrapping},
    {ScalarOp::Not, "Not", kUnary | kLogic},
    {ScalarOp::Reciprocal, "Reciprocal", kUnary},
    {ScalarOp::Exp, "Exp", kMathUnary},
    {ScalarOp::Log, "Log", kMathUnary},
    {ScalarOp::Sqrt, "Sqrt", kMathUnary},
    {ScalarOp::Tanh, "Tanh", kMathUnary},
    {ScalarOp::Erf, "Erf", kMathUnary},
    {ScalarOp::Sin, "Sin", kMathUnary},
    {ScalarOp::Cos, "Cos", kMathUnary},
    {ScalarOp::Tan, "Tan", kMathUnary},
    {ScalarOp::Asin, "Asin", kMathUnary},
    {ScalarOp::Acos, "Acos", kMathUnary},
    {ScalarOp::Atan, "Atan", kMathUnary},
    {ScalarOp::Sinh, "Sinh", kMathUnary},
    {ScalarOp::Cosh, "Cosh", kMathUnary},
    {ScalarOp::Asinh, "Asinh", kMathUnary},
    {ScalarOp::Acosh, "Acosh", kMathUnary},
    {ScalarOp::Atanh, "Atanh", kMathUnary},
    {ScalarOp::Floor, "Floor", kMathUnary},
    {ScalarOp::Ceil, "Ceil", kMathUnary},
    {ScalarOp::Round, "Round", kMathUnary},
    {ScalarOp::Sigmoid, "Sigmoid", kMathUnary},
    {ScalarOp::Softplus, "Softplus", kMathUnary},
    {ScalarOp::GeluErf, "GeluErf", kMathUnary},
    {ScalarOp::GeluTanh, "GeluTanh", kMathUnary},
    {ScalarOp::IsNaN, "IsNaN", kUnary},
    {ScalarOp::IsInf, "IsInf", kUnary},
    {ScalarOp::Cast, "Cast", kUnary},
    {ScalarOp::Convert, "Convert", kUnary},
    {ScalarOp::Add, "Add", kArith | kCommutative},
    {ScalarOp::Sub, "Sub", kArith},
    {ScalarOp::Mul, "Mul", kArith | kCommutative},
    {ScalarOp::Div, "Div", kBinary},
    {ScalarOp::Pow, "Pow", kBinary},
    {ScalarOp::Mod, "Mod", kBinary},
    {ScalarOp::FMod, "FMod", kBinary},
    {ScalarOp::Max, "Max", kBinary | kNanAware | kCommutative},
    {ScalarOp::Min, "Min", kBinary | kNanAware | kCommutative},
    {ScalarOp::FMax, "FMax", kBinary | kCommutative},
    {ScalarOp::FMin, "FMin", kBinary | kCommutative},
    {ScalarOp::ShiftLeft, "ShiftLeft", kBinary},
    {ScalarOp::ShiftRight, "ShiftRight", kBinary},
    {ScalarOp::And, "And", kBinary | kLogic | kCommutative},
    {ScalarOp::Or, "Or", kBinary | kLogic | kCommutative},
    {ScalarOp::Xor, "Xor", kBinary | kLogic | kCommutative},
    {ScalarOp::Equal, "Equal", kBinary | kCompare | kCommutative},
    {ScalarOp::NotEqual, "NotEqual", kBinary | kCompare | kCommutative},
    {ScalarOp::Less, "Less", kBinary | kCompare},
    {ScalarOp::LessEqual, "LessEqual", kBinary | kCompare},
    {ScalarOp::Greater, "Greater", kBinary | kCompare},
    {ScalarOp::GreaterEqual, "GreaterEqual", kBinary | kCompare},
    {ScalarOp::Where, "Where", kTernary},
};
static_assert(std::size(kOps) == kNumScalarOps, "one kOps entry per ScalarOp");

const OpInfo& info(ScalarOp op) {
  const OpInfo& i = kOps[static_cast<int>(op)];
  BRAZE_CHECK(i.op == op, "kOps is out of ScalarOp's order");
  return i;
}

// The dtype a value converted to compute type t is taken to have.
DType widest_dtype(ComputeType t) {
  switch (t) {
    case ComputeType::Bool:
      return DType::Bool;
    case ComputeType::Int:
      return DType::Int64;
    case ComputeType::UInt:
      return DType::UInt64;
    case ComputeType::Float:
      return DType::Float32;
    case ComputeType::Double:
      return DType::Float64;
  }
  return DType::Float64;
}

}  // namespace

std::string_view scalar_op_name(ScalarOp op) { return info(op).name; }
uint32_t scalar_props(ScalarOp op) { return info(op).props; }
int scalar_arity(ScalarOp op) {
  uint32_t p = scalar_props(op);
  return p & kLeaf ? 0 : p & kUnary ? 1 : p & kBinary ? 2 : 3;
}

// ---- builder ---------------------------------------------------------------------------

ScalarBuilder::ScalarBuilder(std::vector<std::optional<DType>> arg_dtypes) {
  for (size_t i = 0; i < arg_dtypes.size(); ++i) {
    if (!arg_dtypes[i]) {
      args_.push_back(kNoScalar);
      continue;
    }
    ScalarNode n{ScalarOp::Arg, compute_type(*arg_dtypes[i])};
    n.index = static_cast<int>(i);
    n.dtype = *arg_dtypes[i];
    args_.push_back(add(n));
  }
}

ScalarId ScalarBuilder::add(ScalarNode n) {
  for (int k = 0; k < scalar_arity(n.op); ++k)
    BRAZE_CHECK(n.args[k] >= 0 && n.args[k] < static_cast<ScalarId>(nodes_.size()),
                fmt::format("scalar {}: operand {} is not built", scalar_op_name(n.op), k));
  nodes_.push_back(n);
  return static_cast<ScalarId>(nodes_.size() - 1);
}

ScalarId ScalarBuilder::arg(size_t i) const {
  BRAZE_CHECK(has(i), fmt::format("scalar expression reads operand {}, which is absent", i));
  return args_[i];
}

ScalarId ScalarBuilder::constant(double v, ComputeType t) {
  ScalarNode n{ScalarOp::Const, t};
  n.value = v;
  return add(n);
}

ScalarId ScalarBuilder::lowest(ScalarId x) {
  ScalarNode n{ScalarOp::Lowest, type(x)};
  n.dtype = dtype(x);
  return add(n);
}

ScalarId ScalarBuilder::highest(ScalarId x) {
  ScalarNode n{ScalarOp::Highest, type(x)};
  n.dtype = dtype(x);
  return add(n);
}

ScalarId ScalarBuilder::unary(ScalarOp op, ScalarId a) {
  BRAZE_CHECK(scalar_arity(op) == 1 && op != ScalarOp::Cast && op != ScalarOp::Convert &&
                  op != ScalarOp::IsInf,
              fmt::format("ScalarBuilder::unary({}): use its own builder", scalar_op_name(op)));
  bool boolean = op == ScalarOp::IsNaN || op == ScalarOp::Not;
  ScalarNode n{op, boolean ? ComputeType::Bool : type(a), {a}};
  n.dtype = boolean ? DType::Bool : dtype(a);
  return add(n);
}

ScalarId ScalarBuilder::binary(ScalarOp op, ScalarId a, ScalarId b) {
  BRAZE_CHECK(scalar_arity(op) == 2, fmt::format("{} is not binary", scalar_op_name(op)));
  bool boolean = has_prop(op, kCompare | kLogic);
  ScalarNode n{op, boolean ? ComputeType::Bool : type(a), {a, b}};
  n.dtype = boolean ? DType::Bool : dtype(a);
  return add(n);
}

ScalarId ScalarBuilder::where(ScalarId cond, ScalarId x, ScalarId y) {
  BRAZE_CHECK(type(x) == type(y), "Where's branches must have one type");
  ScalarNode n{ScalarOp::Where, type(x), {cond, x, y}};
  n.dtype = dtype(x);
  return add(n);
}

ScalarId ScalarBuilder::is_inf(ScalarId a, bool positive, bool negative) {
  ScalarNode n{ScalarOp::IsInf, ComputeType::Bool, {a}};
  n.index = (positive ? 1 : 0) | (negative ? 2 : 0);
  n.dtype = DType::Bool;
  return add(n);
}

ScalarId ScalarBuilder::cast(ScalarId a, DType to) {
  ScalarNode n{ScalarOp::Cast, compute_type(to), {a}};
  n.dtype = to;
  n.from = dtype(a);
  return add(n);
}

ScalarId ScalarBuilder::convert(ScalarId a, ComputeType to) {
  ScalarNode n{ScalarOp::Convert, to, {a}};
  n.dtype = to == type(a) ? dtype(a) : widest_dtype(to);
  return add(n);
}

ScalarExpr ScalarBuilder::finish(ScalarId root) {
  BRAZE_CHECK(root >= 0 && root < static_cast<ScalarId>(nodes_.size()),
              "scalar expression without a root");
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].op == ScalarOp::Cast)
      BRAZE_CHECK(static_cast<ScalarId>(i) == root, "a Cast must be its expression's root");
  ScalarExpr e;
  e.nodes = std::move(nodes_);
  e.root = root;
  return e;
}

}  // namespace braze::graph
