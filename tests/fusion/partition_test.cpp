// The fusion partitioner on the patterns it must fuse, written in ONNX text syntax: group
// counts and kinds, and the fused kernels' outputs (run by the CPU emulator) equal the
// reference executor's on fresh random inputs.
#include <gtest/gtest.h>

#include <set>

#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/emulator.h"
#include "runtime/gpu/engine.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/test_util.h"

namespace braze {
namespace {

struct Fused {
  graph::Graph g;
  fusion::Plan plan;
};

Fused fuse(const std::string& text) {
  Fused f{test::graph_from_text(text), {}};
  graph::passes::run_pipeline(f.g);
  f.plan = fusion::plan_fused(f.g);
  fusion::check_plan(f.g, f.plan);
  return f;
}

std::multiset<std::string> kinds(const fusion::Plan& p) {
  std::multiset<std::string> k;
  for (const auto& grp : p.groups) k.insert(std::string(fusion::group_kind_name(grp.kind)));
  return k;
}

// Runs the fused kernels on the emulator and compares with the reference; also checks
// that codegen took every group whole (no split, no fallback).
void expect_correct(const Fused& f, uint64_t seed = 7) {
  for (const gpu::Step& s : gpu::generate_steps(f.g, f.plan, codegen::Target{})) {
    EXPECT_TRUE(s.split_note.empty()) << s.split_note;
    EXPECT_TRUE(s.kernel.has_value()) << s.fallback_reason;
  }
  std::vector<Tensor> in;
  for (size_t i = 0; i < f.g.inputs().size(); ++i) {
    const graph::Value& v = f.g.value(f.g.inputs()[i]);
    in.push_back(runtime::random_tensor(v.dtype, v.shape, seed + i, {}));
  }
  std::vector<Tensor> got = runtime::run_emulated(f.g, f.plan, in);
  std::vector<Tensor> want = runtime::run_reference(f.g, in);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(test::tensors_close(got[i], want[i])) << f.g.outputs()[i].name;
}

TEST(Fusion, DecomposedSoftmaxIsOneKernel) {
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,37] x, float[4,37] mask) => (float[4,37] y) {
      s = Constant <value = float {0.125}> ()  a = Mul(x, s)  b = Add(a, mask)
      ax = Constant <value = int64[1] {1}> ()
      m = ReduceMax(b, ax)  d = Sub(b, m)  e = Exp(d)  z = ReduceSum(e, ax)  y = Div(e, z) })");
  EXPECT_EQ(f.plan.groups.size(), 1u);
  EXPECT_EQ(kinds(f.plan), (std::multiset<std::string>{"reduction"}));
  expect_correct(f);
}

TEST(Fusion, DecomposedLayerNormIsOneKernel) {
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[3,5,64] x, float[64] w, float[64] b) => (float[3,5,64] y) {
      ax = Constant <value = int64[1] {-1}> ()
      mu = ReduceMean(x, ax)  d = Sub(x, mu)  two = Constant <value = float {2.0}> ()  sq = Pow(d, two)
      var = ReduceMean(sq, ax)  eps = Constant <value = float {1e-5}> ()  ve = Add(var, eps)  sd = Sqrt(ve)
      n = Div(d, sd)  s = Mul(n, w)  y = Add(s, b) })");
  EXPECT_EQ(f.plan.groups.size(), 1u);
  expect_correct(f);
}

TEST(Fusion, LlamaRmsNormIsOneKernel) {
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[2,7,96] x, float16[96] w) => (float16[2,7,96] y) {
      xf = Cast <to = 1> (x)  two = Constant <value = float {2.0}> ()  p = Pow(xf, two)
      ax = Constant <value = int64[1] {-1}> ()  m = ReduceMean(p, ax)
      eps = Constant <value = float {1e-6}> ()  a = Add(m, eps)  s = Sqrt(a)  r = Reciprocal(s)
      n = Mul(xf, r)  nh = Cast <to = 10> (n)  y = Mul(w, nh) })");
  EXPECT_EQ(f.plan.groups.size(), 1u);
  expect_correct(f);
}

TEST(Fusion, MatMulBiasErfGeluIsOneKernel) {
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,9,32] x, float[32,48] w, float[48] b) => (float[2,9,48] y) {
      mm = MatMul(x, w)  h = Add(mm, b)
      r2 = Constant <value = float {1.4142135}> ()  d = Div(h, r2)  e = Erf(d)
      one = Constant <value = float {1.0}> ()  e1 = Add(e, one)  m = Mul(h, e1)
      half = Constant <value = float {0.5}> ()  y = Mul(m, half) })");
  EXPECT_EQ(f.plan.groups.size(), 1u);
  EXPECT_EQ(kinds(f.plan), (std::multiset<std::string>{"gemm"}));
  expect_correct(f);
}

TEST(Fusion, TransposeReshapeAddSiluIsOneKernel) {
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,6,4,5] x, float[6,20] b) => (float[2,6,20] y) {
      t = Transpose <perm = [0, 2, 1, 3]> (x)  sh = Constant <value = int64[3] {2, 6, 20}> ()
      r = Reshape(t, sh)  a = Add(r, b)  s = Sigmoid(a)  y = Mul(a, s) })");
  EXPECT_EQ(f.plan.groups.size(), 1u);
  EXPECT_EQ(kinds(f.plan), (std::multiset<std::string>{"pointwise"}));
  expect_correct(f);
}

TEST(Fusion, AttentionProjectionWritesTheHeadLayout) {
  // [B,S,H*D] -> bias -> [B,S,H,D] -> [B,H,S,D]: one GEMM kernel storing in head layout.
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,7,32] x, float[32,32] w, float[32] b) => (float[2,4,7,8] y) {
      mm = MatMul(x, w)  h = Add(mm, b)  sh = Constant <value = int64[4] {2, 7, 4, 8}> ()
      r = Reshape(h, sh)  y = Transpose <perm = [0, 2, 1, 3]> (r) })");
  EXPECT_EQ(f.plan.groups.size(), 1u);
  expect_correct(f);
}

TEST(Fusion, TransposedOperandIsALayout) {
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3,5,8] q, float[2,3,5,8] k) => (float[2,3,5,5] y) {
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  mm = MatMul(q, kt)
      s = Constant <value = float {0.35}> ()  y = Mul(mm, s) })");
  EXPECT_EQ(f.plan.groups.size(), 1u);
  expect_correct(f);
}

TEST(Fusion, DiamondsMultipleConsumersAndGraphOutputs) {
  // a feeds two branches that meet again; b is also a graph output; c has a consumer in
  // another kernel (the reduction), so it is written once.
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[5,11] x) => (float[5,11] b, float[5,11] y, float[5,1] r) {
      a = Exp(x)  b = Neg(a)  c = Sigmoid(a)  d = Mul(b, c)  y = Add(d, a)
      ax = Constant <value = int64[1] {1}> ()  mm = ReduceMax(c, ax)  r = Add(mm, mm) })");
  expect_correct(f);
  std::set<graph::ValueId> crossing;
  for (const auto& grp : f.plan.groups)
    for (graph::ValueId v : grp.outputs) crossing.insert(v);
  EXPECT_TRUE(crossing.count(f.g.find_value("b")));
  EXPECT_LE(f.plan.groups.size(), 3u);
}

TEST(Fusion, NoCycleThroughAnotherKernel) {
  // n is in the reduction's kernel; TopK (a kernel of its own) reads n, and c reads both n
  // and TopK's result. Merging c into the reduction's kernel would make that kernel feed
  // TopK and consume its result: a cycle, refused with its reason.
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,6] x) => (float[4,1] y) {
      ax = Constant <value = int64[1] {1}> ()  m = ReduceMax(x, ax)  n = Neg(m)
      k = Constant <value = int64[1] {1}> ()  v, i = TopK(n, k)  y = Add(n, v) })");
  bool cycle = false;
  for (const auto& r : f.plan.refused) cycle |= r.reason.find("cycle") != std::string::npos;
  EXPECT_TRUE(cycle);
  EXPECT_EQ(f.plan.groups.size(), 3u);
}

TEST(Fusion, SizeBoundIsRecorded) {
  std::string body;
  std::string prev = "x";
  for (int i = 0; i < 60; ++i) {
    body += "t" + std::to_string(i) + " = Sin(" + prev + ")  ";
    prev = "t" + std::to_string(i);
  }
  body += "y = Cos(" + prev + ")";
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 17]> g (float[9] x) => (float[9] y) { )" + body + " }");
  EXPECT_GT(f.plan.groups.size(), 1u);
  bool recorded = false;
  for (const auto& r : f.plan.refused) recorded |= r.reason.find("would exceed") != std::string::npos;
  EXPECT_TRUE(recorded);
  expect_correct(f);
}

}  // namespace
}  // namespace braze
