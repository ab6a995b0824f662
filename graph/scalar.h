// Element-wise ops as typed scalar expressions: what an element-wise op computes, written once
// in the registry (OpDef::scalar) as an expression over its operands in a small IR, an op enum
// with property sets (tinygrad's GroupOp). The reference executor evaluates the expression on
// the CPU (ScalarEvaluator); codegen renders it as CUDA (codegen/scalar_render.cpp, the only place
// that does). No CUDA text here: the ops are abstract, and ops such as GeluErf, whose device
// forms are tuned helpers, stay single ops so the renderer can pick the helper.
#pragma once

#include <braze/dtype.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace braze::graph {

// The types element-wise arithmetic is done in: Float for float16 / bfloat16 / float32 (the
// reference computes it in double, kernels in float), Double, Int for signed integers (64
// bits), UInt for unsigned ones, Bool.
enum class ComputeType { Bool, Int, UInt, Float, Double };
ComputeType compute_type(DType dt);
inline bool is_floating(ComputeType t) {
  return t == ComputeType::Float || t == ComputeType::Double;
}

enum class ScalarOp : uint8_t {
  // leaves
  Arg,      // operand `index` of the op
  Const,    // `value` in the node's type
  Lowest,   // the smallest value of `dtype` (-inf for floats)
  Highest,  // the largest value of `dtype` (+inf for floats)
  // unary
  Neg,
  Abs,
  Not,
  Reciprocal,
  Exp,
  Log,
  Sqrt,
  Tanh,
  Erf,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Floor,
  Ceil,
  Round,
  Sigmoid,
  Softplus,
  GeluErf,
  GeluTanh,
  IsNaN,
  IsInf,    // `index`: 1 detects +inf, 2 detects -inf
  Cast,     // ONNX Cast to `dtype` (the expression's root only: the value converts on store)
  Convert,  // a plain conversion to the node's type
  // binary
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Mod,
  FMod,
  Max,
  Min,
  FMax,
  FMin,
  ShiftLeft,
  ShiftRight,
  And,
  Or,
  Xor,
  Equal,
  NotEqual,
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  // ternary
  Where,
};
inline constexpr int kNumScalarOps = static_cast<int>(ScalarOp::Where) + 1;

// Property sets of the ops (bit flags).
enum ScalarProp : uint32_t {
  kLeaf = 1u << 0,
  kUnary = 1u << 1,
  kBinary = 1u << 2,
  kTernary = 1u << 3,
  kMath = 1u << 4,      // a floating-point function of the math library (or a composite)
  kCompare = 1u << 5,   // a comparison: bool result, operands of one type
  kLogic = 1u << 6,     // bool operands and result
  kWrapping = 1u << 7,  // integer arithmetic that wraps around (done unsigned)
  kNanAware = 1u << 8,  // a NaN operand gives NaN (Max, Min)
  kCommutative = 1u << 9,
};
std::string_view scalar_op_name(ScalarOp op);
uint32_t scalar_props(ScalarOp op);
inline bool has_prop(ScalarOp op, uint32_t props) { return (scalar_props(op) & props) != 0; }
int scalar_arity(ScalarOp op);

using ScalarId = int;  // a node of a ScalarExpr
inline constexpr ScalarId kNoScalar = -1;

struct ScalarNode {
  ScalarOp op;
  ComputeType type;  // the type of the node's value
  std::array<ScalarId, 3> args{kNoScalar, kNoScalar, kNoScalar};
  double value = 0;  // Const
  int index = 0;     // Arg: the operand; IsInf: its flags
  // The dtype the value stands for (Arg: the operand's, boolean results Bool), which Lowest and
  // Highest take the extremes of; Cast: the target.
  DType dtype = DType::Float32;
  DType from = DType::Float32;  // Cast: the operand's dtype
};

struct ScalarExpr {
  std::vector<ScalarNode> nodes;  // operands before their users
  ScalarId root = kNoScalar;
  const ScalarNode& node(ScalarId id) const { return nodes.at(static_cast<size_t>(id)); }
  const ScalarNode& result() const { return node(root); }
};

// Builds one op's expression, given its operands' dtypes (nullopt: an optional input left out).
// Type rules: unary and arithmetic results take their first operand's type (a second operand
// of another type — Pow's exponent — is converted to it), comparisons, logic, IsNaN and IsInf
// give Bool, Where its second operand's type, Cast its target's compute type.
class ScalarBuilder {
 public:
  explicit ScalarBuilder(std::vector<std::optional<DType>> arg_dtypes);
  size_t num_args() const { return args_.size(); }
  bool has(size_t i) const { return i < args_.size() && args_[i] != kNoScalar; }
  ScalarId arg(size_t i) const;  // InternalError when absent
  ComputeType type(ScalarId x) const { return nodes_.at(static_cast<size_t>(x)).type; }
  DType dtype(ScalarId x) const { return nodes_.at(static_cast<size_t>(x)).dtype; }

  ScalarId constant(double v, ComputeType t);
  ScalarId like(ScalarId x, double v) { return constant(v, type(x)); }  // a Const of x's type
  ScalarId lowest(ScalarId x);   // x's dtype's smallest value
  ScalarId highest(ScalarId x);  // x's dtype's largest value
  ScalarId unary(ScalarOp op, ScalarId a);
  ScalarId binary(ScalarOp op, ScalarId a, ScalarId b);
  ScalarId where(ScalarId cond, ScalarId x, ScalarId y);
  ScalarId is_inf(ScalarId a, bool positive, bool negative);
  ScalarId cast(ScalarId a, DType to);
  ScalarId convert(ScalarId a, ComputeType to);

  ScalarExpr finish(ScalarId root);

 private:
  ScalarId add(ScalarNode n);
  std::vector<ScalarNode> nodes_;
  std::vector<ScalarId> args_;
};

// A value of a ScalarExpr on the CPU: Float and Double in f (double), Int and Bool in i,
// UInt in u.
union ScalarValue {
  double f;
  int64_t i;
  uint64_t u;
};

// Evaluates an expression on the CPU, as the reference executor does: Float and Double in
// double, integers in 64 bits with wrapping arithmetic, integer division by zero giving 0.
// A root Cast gives its operand's value: the caller converts it as it stores it in the target
// dtype, reading it as result_type() says.
class ScalarEvaluator {
 public:
  explicit ScalarEvaluator(ScalarExpr e);
  // args[i]: operand i in its Arg's compute type (absent operands are never read).
  ScalarValue operator()(const ScalarValue* args);
  ComputeType result_type() const;
  const ScalarExpr& expr() const { return e_; }

 private:
  ScalarExpr e_;
  std::vector<ScalarValue> vals_;
};

}  // namespace braze::graph
