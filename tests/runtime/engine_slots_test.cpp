// The engine's memory plan as the runtime uses it: graph inputs and outputs keep their arena
// bytes for the whole run, so a second run (or a CUDA-graph replay) on inputs uploaded once
// reads them unchanged. Builds need no GPU (NVRTC runs on CPU machines).
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/capabilities.h"
#include "fusion/plan.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/engine.h"
#include "tests/test_util.h"

namespace braze {
namespace {

// x's last reader is the first kernel; every later kernel's value could take its bytes.
const char* kInputReadFirst = R"(<ir_version: 8, opset_import: ["" : 17]>
  g (float[64,64] x) => (float[64,64] y) {
    a = Relu(x)  b = Exp(a)  c = Sigmoid(b)  d = Tanh(c)  y = Neg(d) })";

bool overlap(const gpu::Slot& a, const gpu::Slot& b) {
  return a.where == b.where && a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

TEST(EngineSlots, GraphInputsAndOutputsShareNoBytesWithAnyOtherValue) {
  graph::Graph g = test::graph_from_text(kInputReadFirst);
  graph::passes::run_pipeline(g);
  gpu::EngineOptions o = gpu::default_engine_options("sm_90");
  o.cache_dir =
      std::filesystem::temp_directory_path() / ("braze_slots_test_" + std::to_string(::getpid()));
  auto e = gpu::Engine::build(g, fusion::plan_unfused(g), o);
  ASSERT_EQ(e->steps().size(), 5u);
  std::vector<graph::ValueId> kept(g.inputs().begin(), g.inputs().end());
  for (const auto& out : g.outputs()) kept.push_back(out.value);
  for (graph::ValueId k : kept) {
    const gpu::Slot& ks = e->slots().at(k);
    ASSERT_EQ(ks.where, gpu::Slot::Arena) << g.value(k).name;
    for (size_t v = 0; v < g.num_values(); ++v) {
      if (static_cast<graph::ValueId>(v) == k) continue;
      EXPECT_FALSE(overlap(ks, e->slots()[v]))
          << "%" << g.value(k).name << " shares arena bytes with %"
          << g.value(static_cast<graph::ValueId>(v)).name;
    }
  }
  std::filesystem::remove_all(o.cache_dir);
}

// Fused, the same chain is one kernel: a, b, c and d live in its registers and take no
// device memory; the arena holds x and y alone.
TEST(EngineSlots, ValuesInsideAKernelTakeNoDeviceMemory) {
  graph::Graph g = test::graph_from_text(kInputReadFirst);
  graph::passes::run_pipeline(g);
  gpu::EngineOptions o = gpu::default_engine_options("sm_90");
  o.cache_dir =
      std::filesystem::temp_directory_path() / ("braze_slots_test_" + std::to_string(::getpid()));
  auto e = gpu::Engine::build(g, codegen::plan_for(g, true, o.target), o);
  ASSERT_EQ(e->steps().size(), 1u);
  size_t placed = 0;
  for (size_t v = 0; v < g.num_values(); ++v) placed += e->slots()[v].where == gpu::Slot::Arena;
  EXPECT_EQ(placed, 2u);
  EXPECT_EQ(e->intermediate_bytes(), 2u * 64 * 64 * 4);
  std::filesystem::remove_all(o.cache_dir);
}

}  // namespace
}  // namespace braze
