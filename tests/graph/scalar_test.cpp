// The scalar IR of element-wise ops (graph/scalar.h): the op table's properties, the
// builder's type rules, and the CPU evaluation the reference executor runs.
#include "graph/scalar.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include <braze/error.h>

#include "graph/ir.h"
#include "graph/registry.h"

namespace braze::graph {
namespace {

using S = ScalarOp;

ScalarValue f(double v) { return ScalarValue{.f = v}; }
ScalarValue i(int64_t v) { return ScalarValue{.i = v}; }
ScalarValue u(uint64_t v) { return ScalarValue{.u = v}; }

// op(a, b) over two operands of dtype dt.
ScalarValue eval2(ScalarOp op, DType dt, ScalarValue a, ScalarValue b) {
  ScalarBuilder sb({dt, dt});
  ScalarEvaluator e(sb.finish(sb.binary(op, sb.arg(0), sb.arg(1))));
  ScalarValue args[] = {a, b};
  return e(args);
}

TEST(Scalar, OpTableHasOneNameAndArityPerOp) {
  std::set<std::string_view> names;
  for (int k = 0; k < kNumScalarOps; ++k) {
    const ScalarOp op = static_cast<ScalarOp>(k);
    EXPECT_TRUE(names.insert(scalar_op_name(op)).second) << scalar_op_name(op);
    const int arity = scalar_arity(op);
    EXPECT_EQ(arity == 0, has_prop(op, kLeaf)) << scalar_op_name(op);
    EXPECT_EQ(arity == 2, has_prop(op, kBinary)) << scalar_op_name(op);
  }
  EXPECT_TRUE(has_prop(S::Less, kCompare));
  EXPECT_TRUE(has_prop(S::Max, kNanAware));
  EXPECT_FALSE(has_prop(S::FMax, kNanAware));
  EXPECT_TRUE(has_prop(S::Exp, kMath));
  EXPECT_EQ(scalar_arity(S::Where), 3);
}

TEST(Scalar, BuilderTypesComparisonsBoolAndWhereByItsBranches) {
  ScalarBuilder b({DType::Bool, DType::Float16, DType::Float16, DType::Int8});
  EXPECT_EQ(b.type(b.arg(1)), ComputeType::Float);
  EXPECT_EQ(b.type(b.arg(3)), ComputeType::Int);
  EXPECT_EQ(b.type(b.binary(S::Less, b.arg(1), b.arg(2))), ComputeType::Bool);
  EXPECT_EQ(b.type(b.where(b.arg(0), b.arg(1), b.arg(2))), ComputeType::Float);
  EXPECT_EQ(b.type(b.cast(b.arg(1), DType::Int32)), ComputeType::Int);
  EXPECT_EQ(b.type(b.unary(S::IsNaN, b.arg(1))), ComputeType::Bool);
  EXPECT_THROW(b.where(b.arg(0), b.arg(1), b.arg(3)), InternalError);
  EXPECT_THROW(b.unary(S::Add, b.arg(1)), InternalError);
}

TEST(Scalar, AbsentOperandsAndCastsAwayFromTheRootAreRefused) {
  ScalarBuilder b({DType::Float32, std::nullopt});
  EXPECT_TRUE(b.has(0));
  EXPECT_FALSE(b.has(1));
  EXPECT_THROW(b.arg(1), InternalError);
  ScalarId c = b.cast(b.arg(0), DType::Int64);
  ScalarId r = b.unary(S::Neg, c);
  EXPECT_THROW(b.finish(r), InternalError);
}

TEST(Scalar, IntegerArithmeticWrapsAndDividesByZeroToZero) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(eval2(S::Add, DType::Int64, i(big), i(1)).i, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(eval2(S::Mul, DType::Int64, i(big), i(2)).i, -2);
  EXPECT_EQ(eval2(S::Div, DType::Int32, i(7), i(0)).i, 0);
  EXPECT_EQ(eval2(S::Div, DType::Int64, i(std::numeric_limits<int64_t>::min()), i(-1)).i,
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(eval2(S::Div, DType::UInt8, u(7), u(0)).u, 0u);
  EXPECT_EQ(eval2(S::Pow, DType::Int64, i(3), i(4)).i, 81);
  EXPECT_EQ(eval2(S::Pow, DType::Int64, i(-1), i(-3)).i, -1);
}

TEST(Scalar, ModTakesTheDivisorsSignAndFModTheDividends) {
  EXPECT_EQ(eval2(S::Mod, DType::Int32, i(-7), i(3)).i, 2);
  EXPECT_EQ(eval2(S::FMod, DType::Int32, i(-7), i(3)).i, -1);
  EXPECT_DOUBLE_EQ(eval2(S::Mod, DType::Float32, f(-7.5), f(2)).f, 0.5);
  EXPECT_DOUBLE_EQ(eval2(S::FMod, DType::Float32, f(-7.5), f(2)).f, -1.5);
  EXPECT_EQ(eval2(S::Mod, DType::Int32, i(5), i(0)).i, 0);
}

TEST(Scalar, MaxPropagatesNanAndFMaxIgnoresIt) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(eval2(S::Max, DType::Float32, f(nan), f(1)).f));
  EXPECT_TRUE(std::isnan(eval2(S::Min, DType::Float32, f(1), f(nan)).f));
  EXPECT_DOUBLE_EQ(eval2(S::FMax, DType::Float32, f(nan), f(1)).f, 1);
  EXPECT_DOUBLE_EQ(eval2(S::FMin, DType::Float32, f(1), f(nan)).f, 1);
}

TEST(Scalar, ShiftsPastTheWidthGiveZero) {
  EXPECT_EQ(eval2(S::ShiftLeft, DType::UInt64, u(1), u(63)).u, 1ull << 63);
  EXPECT_EQ(eval2(S::ShiftLeft, DType::UInt64, u(1), u(64)).u, 0u);
  EXPECT_EQ(eval2(S::ShiftRight, DType::UInt32, u(256), u(4)).u, 16u);
}

TEST(Scalar, ComparisonsConvertTheSecondOperandToTheFirstsType) {
  ScalarBuilder b({DType::Float32, DType::Int64});
  ScalarEvaluator e(b.finish(b.binary(S::Pow, b.arg(0), b.arg(1))));
  ScalarValue args[] = {f(1.5), i(2)};
  EXPECT_DOUBLE_EQ(e(args).f, 2.25);
  EXPECT_EQ(eval2(S::Less, DType::Float32, f(1), f(2)).i, 1);
  EXPECT_EQ(eval2(S::Equal, DType::Bool, i(1), i(0)).i, 0);
}

TEST(Scalar, LowestAndHighestAreTheDtypesExtremes) {
  ScalarBuilder b({DType::Int8});
  ScalarId lo = b.lowest(b.arg(0)), hi = b.highest(b.arg(0));
  ScalarEvaluator e(b.finish(b.binary(S::Sub, hi, lo)));
  ScalarValue args[] = {i(0)};
  EXPECT_EQ(e(args).i, 255);
  ScalarBuilder fb({DType::Float16});
  ScalarEvaluator fe(fb.finish(fb.lowest(fb.arg(0))));
  EXPECT_EQ(fe(args).f, -std::numeric_limits<double>::infinity());
}

TEST(Scalar, ARootCastPassesTheValueOnForTheStoreToConvert) {
  ScalarBuilder b({DType::Float32});
  ScalarEvaluator e(b.finish(b.cast(b.arg(0), DType::Int8)));
  ScalarValue args[] = {f(300.7)};
  EXPECT_EQ(e.result_type(), ComputeType::Float);
  EXPECT_DOUBLE_EQ(e(args).f, 300.7);
}

TEST(Scalar, ConvertSaturatesFloatsIntoIntegers) {
  ScalarBuilder b({DType::Float64});
  ScalarEvaluator e(b.finish(b.convert(b.arg(0), ComputeType::Int)));
  ScalarValue big[] = {f(1e300)}, nan[] = {f(std::nan(""))};
  EXPECT_EQ(e(big).i, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(e(nan).i, 0);
}

// Every element-wise op of the registry builds its expression for its first accepted dtype.
TEST(Scalar, EveryRegistryElementwiseOpHasAnExpression) {
  int count = 0;
  for (const OpDef* op : all_ops()) {
    if (!op->scalar) continue;
    ++count;
    Graph g;
    std::vector<ValueId> ins;
    std::vector<std::optional<DType>> dts;
    const DType dt = op->types.contains(DType::Float32) ? DType::Float32
                     : op->types.contains(DType::Bool)  ? DType::Bool
                                                        : DType::UInt32;
    const int n = std::max(op->min_inputs, op->name == "Where" ? 3 : op->min_inputs);
    for (int k = 0; k < n; ++k) {
      const DType kdt = op->name == "Where" && k == 0 ? DType::Bool : dt;
      ins.push_back(g.add_value("x" + std::to_string(k), kdt, {2}));
      dts.push_back(kdt);
    }
    ValueId y = g.add_value("y", dt, {2});
    NodeId id = g.add_node(op, "n", ins, {y});
    Node& node = g.node(id);
    for (const AttrSpec& a : op->attrs)
      if (a.required && a.name == "to")
        node.attrs["to"] = int64_t{1};
      else if (a.required && a.name == "direction")
        node.attrs["direction"] = std::string("LEFT");
    EXPECT_NO_THROW(scalar_expr(node, dts)) << op->name;
  }
  EXPECT_GT(count, 60);
}

}  // namespace
}  // namespace braze::graph
