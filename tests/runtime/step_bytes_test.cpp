// `braze bench`'s byte counts (runtime/gpu/bench.h step_bytes), the roofline column of its
// per-kernel table: a kernel reading an embedding table through a Gather (an index map, by the
// registry's kind) moves the rows it gathers, not the table (BERT-base's 47.9 MiB of word
// embeddings were counted whole, 180% of the copy bandwidth). Builds need no GPU.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/capabilities.h"
#include "fusion/plan.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/bench.h"
#include "runtime/gpu/engine.h"
#include "tests/test_util.h"

namespace braze {
namespace {

std::shared_ptr<const gpu::Engine> engine_of(graph::Graph& g) {
  graph::passes::run_pipeline(g);
  gpu::EngineOptions o = gpu::default_engine_options("sm_90");
  o.cache_dir = std::filesystem::temp_directory_path() /
                ("braze_step_bytes_test_" + std::to_string(::getpid()));
  return gpu::Engine::build(g, codegen::plan_for(g, true, o.target), o);
}

TEST(StepBytes, AGatheredTableCountsTheRowsGathered) {
  // A [1000, 64] float table, 2 x 5 int64 ids, the rows plus a [64] bias: one kernel.
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (int64[2,5] ids, float[1000,64] table, float[64] bias) => (float[2,5,64] y) {
      e = Gather(table, ids)  y = Add(e, bias) })");
  auto e = engine_of(g);
  ASSERT_EQ(e->steps().size(), 1u);
  // ids 80 bytes, 10 rows of 256 bytes read, the bias 256, the output 2560.
  EXPECT_EQ(gpu::step_bytes(g, e->steps()[0]), 80u + 2560u + 256u + 2560u);
}

TEST(StepBytes, ASliceCountsTheSlice) {
  // Rows 3 .. 12 of a [1000, 64] float table, negated: 10 rows read, 10 written.
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1000,64] table) => (float[10,64] y) {
      st = Constant <value = int64[1] {3}> ()  en = Constant <value = int64[1] {13}> ()
      ax = Constant <value = int64[1] {0}> ()
      r = Slice(table, st, en, ax)  y = Neg(r) })");
  auto e = engine_of(g);
  ASSERT_EQ(e->steps().size(), 1u);
  EXPECT_EQ(gpu::step_bytes(g, e->steps()[0]), 2560u + 2560u);
}

TEST(StepBytes, ATableAlsoReadWholeCountsWhole) {
  // The table also added to itself element-wise: the kernel reads all of it.
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (int64[3] ids, float[40,8] table) => (float[3,8] y, float[40,8] z) {
      y = Gather(table, ids)  z = Add(table, table) })");
  auto e = engine_of(g);
  ASSERT_EQ(e->steps().size(), 2u);
  uint64_t table_bytes_counted = 0;
  for (const gpu::Step& s : e->steps()) {
    uint64_t b = gpu::step_bytes(g, s);
    bool gathers = false;
    for (graph::NodeId id : s.group.nodes) gathers = gathers || g.node(id).op_type() == "Gather";
    // The Gather's kernel: 24 bytes of ids, 3 rows of 32 read, 96 written.
    if (gathers) EXPECT_EQ(b, 24u + 96u + 96u);
    if (!gathers) table_bytes_counted = b;
  }
  EXPECT_EQ(table_bytes_counted, 1280u + 1280u);  // Add: the whole table read, the sum written
}

}  // namespace
}  // namespace braze
