// --precision fp16 / bf16 as a graph pass: float32 interface kept, everything inside in the
// half type (weights, activations, Cast targets, ConstantOfShape values), shape-like float
// inputs (Resize's scales) and integer values untouched; the converted graph computes the
// model within the half type's error (relative L2 under 1e-2, ‖a − b‖ / ‖b‖).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "graph/half.h"
#include "graph/passes/pipeline.h"
#include "graph/passes/precision.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/test_util.h"

namespace braze {
namespace {

constexpr const char* kModel = R"(<ir_version: 8, opset_import: ["" : 18]>
  g (float[2,3,4,4] x, int64[2] idx) => (float[2,3,8,8] y, float[2,7] s, int64[2] j) {
    w = Constant <value = float[3,1,1] {0.5, -1.25, 2.0}> ()
    a = Mul(x, w)  e = Erf(a)  c = Cast <to = 1> (e)
    sc = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
    y = Resize <mode = "linear"> (c, , sc)
    shp = Constant <value = int64[2] {2, 7}> ()
    o = ConstantOfShape <value = float[1] {0.25}> (shp)
    ra = Constant <value = int64[2] {2, 3}> ()  rb = Constant <value = int64[2] {1, 2}> ()
    r1 = ReduceMean <keepdims = 0> (x, ra)  r2 = ReduceMax <keepdims = 0> (x, rb)
    t = Concat <axis = 1> (r1, r2)
    s = Add(t, o)
    j = Add(idx, idx) })";

TEST(Precision, HalfInsideFloatOutside) {
  for (DType to : {DType::Float16, DType::BFloat16}) {
    graph::Graph g = test::graph_from_text(kModel);
    graph::passes::run_pipeline(g);
    graph::Graph low = g;
    graph::passes::convert_precision(low, to);
    graph::passes::run_pipeline(low);
    graph::verify(low);
    // The interface is unchanged.
    ASSERT_EQ(low.inputs().size(), g.inputs().size());
    for (size_t i = 0; i < g.inputs().size(); ++i)
      EXPECT_EQ(low.value(low.inputs()[i]).dtype, g.value(g.inputs()[i]).dtype);
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      EXPECT_EQ(low.outputs()[i].name, g.outputs()[i].name);
      EXPECT_EQ(low.value(low.outputs()[i].value).dtype, g.value(g.outputs()[i].value).dtype);
    }
    // Inside: every float value is the half type except Resize's scales and the float32
    // ends of the boundary casts.
    size_t half = 0;
    for (graph::NodeId id : low.topo_order()) {
      const graph::Node& n = low.node(id);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] == graph::kNoValue) continue;
        const graph::Value& v = low.value(n.inputs[k]);
        if (v.dtype == DType::Float32) {
          EXPECT_TRUE((n.op_type() == "Resize" && k == 2) ||
                      (n.op_type() == "Cast" && low.is_graph_input(n.inputs[k])))
              << n.describe() << " reads float32 %" << v.name;
        }
        half += v.dtype == to;
      }
    }
    EXPECT_GT(half, 6u);
    // Same function within the half type's error.
    std::vector<Tensor> in;
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const graph::Value& v = g.value(g.inputs()[i]);
      in.push_back(runtime::random_tensor(v.dtype, v.shape, 11 + i, {}));
    }
    std::vector<Tensor> want = runtime::run_reference(g, in), got = runtime::run_reference(low, in);
    for (size_t i = 0; i < want.size(); ++i) {
      runtime::Comparison c = runtime::compare(got[i], want[i], runtime::default_tolerance(to));
      EXPECT_TRUE(c.ok) << g.outputs()[i].name << ": " << c.summary(got[i], want[i]);
      EXPECT_LT(c.rel_l2, 1e-2) << g.outputs()[i].name;
      if (want[i].dtype() == DType::Float32) {
        EXPECT_GT(c.rel_l2, 0.0) << "really computed in the half type";
      }
    }
  }
}

// The fast loop against the exact scalar rounding, over a sweep of every 997th float32 bit
// pattern (both signs, zeros, subnormals, normals, overflow, infinities, NaNs) and the edges.
TEST(Precision, RoundFloatsMatchesTheScalarRounding) {
  std::vector<uint32_t> bits;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 997) bits.push_back(static_cast<uint32_t>(u));
  for (float f :
       {65504.f, 65519.99f, 65520.f, 6.1035156e-05f, 6.1035149e-05f, 5.9604645e-08f, 0.f, -0.f})
    bits.push_back(float_bits(f));
  Tensor t(DType::Float32, {static_cast<int64_t>(bits.size())});
  std::memcpy(t.raw(), bits.data(), bits.size() * 4);
  const Tensor h = graph::passes::round_floats(t, DType::Float16);
  const Tensor b = graph::passes::round_floats(t, DType::BFloat16);
  const auto* hv = static_cast<const uint16_t*>(h.raw());
  const auto* bv = static_cast<const uint16_t*>(b.raw());
  size_t bad = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    const float f = bits_float(bits[i]);
    if (hv[i] != float_to_half(f) || bv[i] != float_to_bf16(f)) {
      if (++bad <= 5)
        ADD_FAILURE() << std::hex << "bits 0x" << bits[i] << ": fp16 0x" << hv[i] << " want 0x"
                      << float_to_half(f);
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(Precision, NamesAndErrors) {
  EXPECT_EQ(graph::passes::precision_dtype("fp16"), DType::Float16);
  EXPECT_EQ(graph::passes::precision_dtype("bf16"), DType::BFloat16);
  EXPECT_EQ(graph::passes::precision_dtype("fp32"), DType::Float32);
  test::expect_user_error([] { graph::passes::precision_dtype("fp8"); },
                          {"--precision fp8", "fp16"});
  // tf32 is a codegen choice (tensor-core float32 GEMMs): the graph stays float32.
  EXPECT_EQ(graph::passes::precision_dtype("tf32"), DType::Float32);
  test::expect_user_error([] { graph::passes::precision_dtype("TF32"); },
                          {"--precision TF32", "tf32"});
  graph::Graph g = test::graph_from_text(kModel);
  EXPECT_EQ(graph::passes::convert_precision(g, DType::Float32), 0);
}

// A float32 model's "compute this in float" Casts become Casts from the half type to itself
// at --precision fp16: the pipeline drops them (they would keep ops apart in the plan).
TEST(Precision, CastsToTheirOwnTypeAreDropped) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,8] x) => (float[4,8] y) {
      a = Cast <to = 1> (x)  p = Softmax <axis = -1> (a)  y = Cast <to = 1> (p) })");
  graph::passes::run_pipeline(g);
  graph::passes::convert_precision(g, DType::Float16);
  graph::passes::run_pipeline(g);
  graph::verify(g);
  size_t casts = 0;
  for (graph::NodeId id : g.topo_order()) {
    const graph::Node& n = g.node(id);
    if (n.op_type() != "Cast") continue;
    ++casts;
    EXPECT_NE(g.value(n.inputs[0]).dtype, g.value(n.outputs[0]).dtype) << n.describe();
  }
  EXPECT_EQ(casts, 2u);  // float32 in, float32 out: the interface's
  EXPECT_EQ(g.num_live_nodes(), 3u);
}

// A float32 weight read as a product's B is rounded as it is stored k-major ([n, k] behind a
// Transpose): each element the rounding of its float32 value, over whole 64 x 64 tiles, their
// edges and the columns past the last 8 (72 x 70: k 72, n 70); the float32 weight itself is
// not converted as well.
TEST(Precision, ProductWeightsAreRoundedAsTheyAreStoredKMajor) {
  constexpr int64_t kK = 72, kN = 70;
  std::string vals;
  std::vector<float> w(kK * kN);
  for (int64_t e = 0; e < kK * kN; ++e) {
    w[e] = std::sin(0.37f * static_cast<float>(e)) * (e % 7 == 0 ? 1e-5f : 3.f);
    vals += fmt::format("{}{:.9g}", e ? ", " : "", w[e]);
  }
  for (DType to : {DType::Float16, DType::BFloat16}) {
    graph::Graph g = test::graph_from_text(fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
      g (float[5,{0}] x) => (float[5,{1}] y) {{
        w = Constant <value = float[{0},{1}] {{{2}}}> ()  y = MatMul(x, w) }})",
                                                       kK, kN, vals));
    graph::passes::run_pipeline(g);
    graph::passes::convert_precision(g, to);
    graph::verify(g);
    const graph::Node* mm = nullptr;
    for (graph::NodeId id : g.topo_order())
      if (g.node(id).op_type() == "MatMul") mm = &g.node(id);
    ASSERT_NE(mm, nullptr);
    const graph::Value& view = g.value(mm->inputs[1]);
    ASSERT_NE(view.producer, graph::kNoNode);
    const graph::Node& t = g.node(view.producer);
    ASSERT_EQ(t.op_type(), "Transpose");
    const Tensor& kmajor = *g.value(t.inputs[0]).constant;
    ASSERT_EQ(kmajor.dtype(), to);
    ASSERT_EQ(kmajor.shape(), (Shape{kN, kK}));
    const auto* h = static_cast<const uint16_t*>(kmajor.raw());
    size_t bad = 0;
    for (int64_t i = 0; i < kK; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        const uint16_t want =
            to == DType::Float16 ? float_to_half(w[i * kN + j]) : float_to_bf16(w[i * kN + j]);
        bad += h[j * kK + i] != want;
      }
    EXPECT_EQ(bad, 0u) << dtype_name(to);
    for (size_t i = 0; i < g.num_values(); ++i) {
      const graph::Value& v = g.value(static_cast<graph::ValueId>(i));
      if (v.constant && v.shape == Shape{kK, kN}) {
        EXPECT_EQ(v.dtype, DType::Float32) << "the [k, n] weight was converted too: " << v.name;
      }
    }
  }
}

}  // namespace
}  // namespace braze
