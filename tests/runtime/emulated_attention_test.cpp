// Attention (tests/attention_cases.h) on the CPU emulator: the partitioner makes one
// attention kernel of each, the flash schedule (mma.sync) generates it, and its output
// matches the reference executor's element by element, the outputs poisoned first.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <stdexcept>
#include <utility>
#include <vector>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/pipeline.h"
#include "runtime/emulator.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/attention_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class EmulatedAttention
    : public ::testing::TestWithParam<std::tuple<test::AttentionCase, const char*>> {};

TEST_P(EmulatedAttention, OneFlashKernelMatchesTheReference) {
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::attention_text(c, dtype));
  graph::passes::run_pipeline(g);
  const codegen::Target target = runtime::emulator_target({});
  const fusion::Plan plan = codegen::plan_for(g, true, target);
  EXPECT_EQ(plan.groups.size(), c.kernels);
  size_t attention = 0;
  for (const gpu::Step& s : gpu::generate_steps(g, plan, target)) {
    ASSERT_TRUE(s.kernel) << s.fallback_reason;
    if (s.group.kind != fusion::GroupKind::Attention) continue;
    ++attention;
    EXPECT_EQ(codegen::schedule_name(*s.kernel), "flash");
  }
  EXPECT_EQ(attention, 1u);
  const std::vector<Tensor> in = test::random_inputs(g, 53);
  const Tensor want = runtime::run_reference(g, in).at(0);
  const Tensor got = test::emulate_with(g, plan, in, -1, c.name);
  ASSERT_TRUE(got.defined());
  EXPECT_TRUE(test::tensors_close(got, want)) << c.name << " " << dtype;
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedAttention,
                         ::testing::Combine(::testing::ValuesIn(test::attention_cases()),
                                            ::testing::Values("float16", "bfloat16", "float")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace braze

namespace braze {
namespace {

const test::AttentionCase& attention_case(const std::string& name) {
  for (const test::AttentionCase& c : test::attention_cases())
    if (c.name == name) return c;
  throw std::runtime_error("no attention case " + name);
}

// The float16 case's one kernel at 64 x 64 tiles, its source (empty where there is none).
std::string flash_source(const std::string& name) {
  graph::Graph g = test::graph_from_text(test::attention_text(attention_case(name), "float16"));
  graph::passes::run_pipeline(g);
  const codegen::Target target = runtime::emulator_target({});
  const fusion::Plan plan = codegen::plan_for(g, true, target);
  EXPECT_EQ(plan.groups.size(), 1u) << name;
  if (plan.groups.size() != 1) return "";
  const codegen::Tunables t{{"flash", 1}, {"bm", 64}, {"bn", 64}};
  codegen::GroupCode gc = codegen::generate(g, plan.groups[0], target, &t);
  EXPECT_TRUE(gc.kernel) << gc.fallback_reason;
  return gc.kernel ? gc.kernel->source : "";
}

// GPT-2's causal mask is a constant after the passes: the first query tile (rows 0-63) sees
// only key tile 0, so its key loop stops there; the second (rows 64-71) visits both.
TEST(AttentionPlans, CausalConstantMaskSkipsDeadKeyTiles) {
  EXPECT_NE(flash_source("Gpt2Causal").find("braze_key_tile_end[] = {1, 2};"), std::string::npos);
}

// A constant mask recognised as causal is checked element by element (row by row): one
// element off the triangle, above or below the diagonal, and the mask is loaded as it is.
TEST(AttentionPlans, AConstantMaskOneElementOffTheTriangleIsNotCausal) {
  for (const auto& [qi, kj] :
       std::vector<std::pair<int64_t, int64_t>>{{40, 3}, {5, 60}, {71, 71}}) {
    graph::Graph g =
        test::graph_from_text(test::attention_text(attention_case("Gpt2Causal"), "float16"));
    graph::passes::run_pipeline(g);
    int changed = 0;
    for (size_t v = 0; v < g.num_values(); ++v) {
      graph::Value& val = g.value(static_cast<graph::ValueId>(v));
      if (!val.constant || val.shape.size() < 2 || val.shape.back() != 72 ||
          val.shape[val.shape.size() - 2] != 72)
        continue;
      Tensor t = val.constant->clone();
      const int64_t at = qi * 72 + kj;
      t.set_f64(at, t.get_f64(at) == 0 ? -INFINITY : 0.0);  // live <-> dead
      val.constant = std::make_shared<const Tensor>(std::move(t));
      ++changed;
    }
    ASSERT_EQ(changed, 1) << "the case's one 72 x 72 mask";
    const codegen::Target target = runtime::emulator_target({});
    const fusion::Plan plan = codegen::plan_for(g, true, target);
    ASSERT_EQ(plan.groups.size(), 1u);
    const codegen::Tunables t{{"flash", 1}, {"bm", 64}, {"bn", 64}};
    codegen::GroupCode gc = codegen::generate(g, plan.groups[0], target, &t);
    ASSERT_TRUE(gc.kernel) << gc.fallback_reason;
    EXPECT_EQ(gc.kernel->source.find("braze_key_tile_end"), std::string::npos) << qi << ", " << kj;
    EXPECT_EQ(gc.kernel->source.find("(j <= i + "), std::string::npos) << qi << ", " << kj;
  }
}

// A boolean causal mask through Where(Not(tril), -inf, scores): the same index comparison
// and dead key tiles as an additive one; the mask is never loaded.
TEST(AttentionPlans, BooleanCausalMaskSkipsDeadKeyTiles) {
  const std::string src = flash_source("MaskedFillCausalBool");
  EXPECT_NE(src.find("braze_key_tile_end[] = {1, 2};"), std::string::npos);
  EXPECT_NE(src.find("(j <= i + 0) == false"), std::string::npos);
  const size_t lambda = src.find("auto score = ");
  ASSERT_NE(lambda, std::string::npos);
  EXPECT_EQ(src.substr(lambda, src.find("};", lambda) - lambda).find("braze_load("),
            std::string::npos);
}

// At float32 (no --precision) the attention is one kernel too, exact: the flash schedule's
// float32 path (FMAs, not mma), with no mma or half conversion in its code.
TEST(AttentionPlans, Float32IsOneExactKernel) {
  graph::Graph g =
      test::graph_from_text(test::attention_text(attention_case("LlamaGroupedQuery"), "float"));
  graph::passes::run_pipeline(g);
  const codegen::Target target = runtime::emulator_target({});
  const fusion::Plan plan = codegen::plan_for(g, true, target);
  ASSERT_EQ(plan.groups.size(), 1u);
  ASSERT_EQ(plan.groups[0].kind, fusion::GroupKind::Attention);
  codegen::GroupCode gc = codegen::generate(g, plan.groups[0], target);
  ASSERT_TRUE(gc.kernel) << gc.fallback_reason;
  const std::string& src = gc.kernel->source;
  const size_t generated = src.find("// ---- generated ----");
  ASSERT_NE(generated, std::string::npos);
  EXPECT_NE(src.find("typedef braze_flash<float, ", generated), std::string::npos);
}

// The attention group holds the exporters' layout ops: BERT's Q, K and V slices of one QKV
// activation and their Reshape / Transpose chains, Kᵀ's second Transpose, and the output's
// Transpose back to [B, S, H, D]; the Reshape to [B, S, H·D] after it is a free view.
TEST(AttentionPlans, TheGroupReadsQkvThroughTheirLayoutChains) {
  graph::Graph g =
      test::graph_from_text(test::attention_text(attention_case("BertSdpaMasked"), "float16"));
  graph::passes::run_pipeline(g);
  const fusion::Plan plan = codegen::plan_for(g, true, runtime::emulator_target({}));
  const fusion::Group* att = nullptr;
  for (const fusion::Group& grp : plan.groups)
    if (grp.kind == fusion::GroupKind::Attention) att = &grp;
  ASSERT_NE(att, nullptr);
  std::map<std::string, int> ops;
  for (graph::NodeId id : att->nodes) ++ops[g.node(id).op_type()];
  EXPECT_EQ(ops["MatMul"], 2);
  EXPECT_EQ(ops["Softmax"], 1);
  EXPECT_EQ(ops["Slice"], 3);
  EXPECT_EQ(ops["Transpose"], 5);
  size_t computed = 0;  // x and the mask; the rest are constants (shapes, the scale)
  for (graph::ValueId v : att->inputs) computed += !g.value(v).constant;
  EXPECT_EQ(computed, 2u);
}

}  // namespace
}  // namespace braze

namespace braze {
namespace {

// Every candidate of the search space (tiles of 32 to 128 keys, 64 or 128 query rows, one to
// four warp groups sharing the key tiles) on the emulator, for the causal case whose first
// query tile skips its dead key tile; in float16, and in float32 (its P staged in shared
// memory, the key-sharing groups' merge after it).
class EmulatedAttentionSearchSpace : public ::testing::TestWithParam<const char*> {};

TEST_P(EmulatedAttentionSearchSpace, EveryCandidateMatchesTheReference) {
  const test::AttentionCase* c = nullptr;
  for (const test::AttentionCase& x : test::attention_cases())
    if (std::string(x.name) == "Gpt2Causal") c = &x;
  ASSERT_NE(c, nullptr);
  graph::Graph g = test::graph_from_text(test::attention_text(*c, GetParam()));
  graph::passes::run_pipeline(g);
  const codegen::Target target = runtime::emulator_target({});
  const fusion::Plan plan = codegen::plan_for(g, true, target);
  ASSERT_EQ(plan.groups.size(), 1u);
  const std::vector<Tensor> in = test::random_inputs(g, 67);
  const Tensor want = runtime::run_reference(g, in).at(0);
  const size_t n = codegen::candidates(g, plan.groups[0], target).size();
  EXPECT_GE(n, 8u);
  for (size_t k = 0; k < n; ++k) {
    const Tensor got =
        test::emulate_with(g, plan, in, static_cast<int>(k), "candidate " + std::to_string(k));
    ASSERT_TRUE(got.defined());
    EXPECT_TRUE(test::tensors_close(got, want)) << "candidate " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, EmulatedAttentionSearchSpace, ::testing::Values("float16", "float"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace braze

namespace braze {
namespace {

// A softmax over the wrong axis between two products is no attention: the plan keeps three
// kernels and says which condition failed.
TEST(AttentionPlans, ANearMatchSaysWhichConditionFailed) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[1,2,32,32] q, float16[1,2,32,32] k, float16[1,2,32,32] v) => (float16[1,2,32,32] y) {
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  s = MatMul(q, kt)  p = Softmax <axis = 2> (s)  y = MatMul(p, v) })");
  graph::passes::run_pipeline(g);
  const fusion::Plan plan = codegen::plan_for(g, true, runtime::emulator_target({}));
  EXPECT_EQ(plan.groups.size(), 3u);
  bool said = false;
  for (const fusion::RefusedMerge& r : plan.refused)
    said =
        said ||
        r.reason == "not one attention kernel: the Softmax is not over the last axis of a matrix";
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace braze

namespace braze {
namespace {

// An upcast softmax (HF's softmax(·, dtype=float32).to(dtype)): the scores cast to float32,
// the Softmax in float32, P cast back before P V. One attention kernel, matching the
// reference.
TEST(EmulatedAttention, UpcastSoftmaxIsOneKernel) {
  for (const auto& [dtype, code] : {std::pair<std::string, int>{"float16", 10}, {"bfloat16", 16}}) {
    const std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g ({0}[1,2,24,32] q, {0}[1,2,24,32] k, {0}[1,2,24,32] v) => ({0}[1,2,24,32] y) {{
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  s = MatMul(q, kt)  sf = Cast <to = 1> (s)
      cf = Constant <value = float {{0.17677669}}> ()  ss = Mul(sf, cf)  p = Softmax <axis = -1> (ss)
      pb = Cast <to = {1}> (p)  y = MatMul(pb, v) }})",
                                         dtype, code);
    graph::Graph g = test::graph_from_text(text);
    graph::passes::run_pipeline(g);
    const codegen::Target target = runtime::emulator_target({});
    const fusion::Plan plan = codegen::plan_for(g, true, target);
    ASSERT_EQ(plan.groups.size(), 1u) << dtype;
    EXPECT_EQ(plan.groups[0].kind, fusion::GroupKind::Attention) << dtype;
    const std::vector<Tensor> in = test::random_inputs(g, 71);
    const Tensor want = runtime::run_reference(g, in).at(0);
    const Tensor got = test::emulate_with(g, plan, in, -1, dtype);
    ASSERT_TRUE(got.defined());
    EXPECT_TRUE(test::tensors_close(got, want)) << dtype;
  }
}

}  // namespace
}  // namespace braze

namespace braze {
namespace {

// What `braze bench --json` reports of an attention kernel (bench/models.py times PyTorch's
// SDPA on it): batch x heads, the lengths, the head dim, and the mask's kind.
TEST(AttentionPlans, ShapeForTheBenchReport) {
  const std::tuple<const char*, int64_t, int64_t, int64_t, int64_t, const char*> want[] = {
      {"BertSdpaMasked", 4, 40, 40, 32, "additive"},
      {"Gpt2Causal", 2, 72, 72, 32, "causal"},
      {"LlamaGroupedQuery", 4, 24, 24, 32, "none"},
      {"CrossHeadDim80", 2, 20, 100, 80, "additive"}};
  for (const auto& [name, batch, sq, sk, d, mask] : want) {
    const test::AttentionCase* c = nullptr;
    for (const test::AttentionCase& x : test::attention_cases())
      if (std::string(x.name) == name) c = &x;
    ASSERT_NE(c, nullptr) << name;
    graph::Graph g = test::graph_from_text(test::attention_text(*c, "float16"));
    graph::passes::run_pipeline(g);
    std::optional<codegen::AttentionShape> s;
    for (const fusion::Group& grp : codegen::plan_for(g, true, runtime::emulator_target({})).groups)
      if (grp.kind == fusion::GroupKind::Attention) s = codegen::attention_shape(g, grp);
    ASSERT_TRUE(s) << name;
    EXPECT_EQ(s->batch, batch) << name;
    EXPECT_EQ(s->sq, sq) << name;
    EXPECT_EQ(s->sk, sk) << name;
    EXPECT_EQ(s->d, d) << name;
    EXPECT_EQ(s->mask, mask) << name;
  }
}

}  // namespace
}  // namespace braze
