// The fusion partitioner on the patterns it must fuse, written in ONNX text syntax: group
// counts and kinds, and the fused kernels' outputs (run by the CPU emulator) equal the
// reference executor's on fresh random inputs.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include <fmt/format.h>

#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/emulator.h"
#include "runtime/gpu/engine.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/fusion_cases.h"
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
  f.plan = fusion::plan_fused(f.g, codegen::kernel_lowerings());
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
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(test::tensors_close(got[i], want[i])) << f.g.outputs()[i].name;
}

class FusionPatterns : public ::testing::TestWithParam<test::FusionCase> {};

TEST_P(FusionPatterns, BecomeTheExpectedKernels) {
  const test::FusionCase& c = GetParam();
  Fused f = fuse(c.text);
  EXPECT_EQ(f.plan.groups.size(), c.kernels);
  if (c.kernels == 1 && *c.kind) {
    EXPECT_EQ(kinds(f.plan), (std::multiset<std::string>{c.kind}));
  }
  expect_correct(f);
}

INSTANTIATE_TEST_SUITE_P(Cases, FusionPatterns, ::testing::ValuesIn(test::fusion_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

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
  Fused f = fuse(R"(<ir_version: 8, opset_import: ["" : 17]> g (float[9] x) => (float[9] y) { )" +
                 body + " }");
  EXPECT_GT(f.plan.groups.size(), 1u);
  bool recorded = false;
  for (const auto& r : f.plan.refused)
    recorded |= r.reason.find("would exceed") != std::string::npos;
  EXPECT_TRUE(recorded);
  expect_correct(f);
}

// A random DAG over [4,8] floats: element-wise ops reading any earlier values (diamonds),
// row reductions broadcast back, products with a weight, layout round trips and TopK (a kernel
// of its own that paths go around), some values also graph outputs.
std::string random_dag(std::mt19937& rng, int nodes) {
  std::vector<std::string> vals = {"x"};
  std::string body =
      "ax = Constant <value = int64[1] {1}> ()  k = Constant <value = int64[1] {8}> ()\n";
  auto pick = [&] { return vals[std::uniform_int_distribution<size_t>(0, vals.size() - 1)(rng)]; };
  auto recent = [&] {
    return vals[vals.size() - 1 -
                std::uniform_int_distribution<size_t>(0,
                                                      std::min<size_t>(vals.size() - 1, 3))(rng)];
  };
  for (int i = 0; i < nodes; ++i) {
    const std::string v = "v" + std::to_string(i), a = recent();
    switch (std::uniform_int_distribution<int>(0, 6)(rng)) {
      case 0:
        body += fmt::format("{} = Relu({})\n", v, a);
        break;
      case 1:
        body += fmt::format("{} = Neg({})\n", v, a);
        break;
      case 2:
        body += fmt::format("{} = Add({}, {})\n", v, a, pick());
        break;
      case 3:
        body += fmt::format("{0}r = ReduceMax({1}, ax)  {0} = Sub({1}, {0}r)\n", v, a);
        break;
      case 4:
        body += fmt::format("{} = MatMul({}, w)\n", v, a);
        break;
      case 5:
        body += fmt::format(
            "{0}t = Transpose <perm = [1, 0]> ({1})  {0} = Transpose <perm = [1, 0]> ({0}t)\n", v,
            a);
        break;
      default:
        body += fmt::format("{0}, {0}i = TopK({1}, k)\n", v, a);
        break;
    }
    vals.push_back(v);
  }
  std::string outs = "float[4,8] " + vals.back();
  std::set<std::string> named = {vals.back()};
  for (int i = 0; i < 2; ++i)
    if (std::string o = pick(); o != "x" && named.insert(o).second) outs += ", float[4,8] " + o;
  return "<ir_version: 8, opset_import: [\"\" : 18]>\ng (float[4,8] x, float[8,8] w) => (" + outs +
         ") {\n" + body + "}";
}

TEST(Fusion, RandomDagsPartitionIntoAcyclicPlans) {
  std::mt19937 rng(2026);
  size_t refused_cycles = 0;
  for (int t = 0; t < 300; ++t) {
    const std::string text = random_dag(rng, 8 + t % 40);
    graph::Graph g = test::graph_from_text(text);
    graph::passes::run_pipeline(g);
    const fusion::Plan plan = fusion::plan_fused(g, codegen::kernel_lowerings());
    EXPECT_NO_THROW(fusion::check_plan(g, plan)) << text;
    for (const auto& r : plan.refused)
      refused_cycles += r.reason.find("cycle") != std::string::npos;
  }
  EXPECT_GT(refused_cycles, 0u) << "no random graph put a merge's cycle check to work";
}

}  // namespace
}  // namespace braze
