// The SIMT GEMM schedule's generated CUDA, compiled with NVRTC for sm_90 (no GPU needed):
// every candidate compiles for float and double with its accumulators in registers, reads
// 16-byte fragments from shared memory with at least eight FMAs a read for 8 x 8
// micro-tiles, loads plain operands 16 bytes at a time where their layout allows (or copies
// them by cp.async into st stages) and reads views through the emitter; the default tile
// follows the problem size.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/gemm_simt_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

const codegen::Target kH200{90, 132};

using test::gemm_group_of;
using test::GemmGroup;

std::string ptx_of(const codegen::Kernel& k, std::string* ptxas_log = nullptr) {
  gpu::Compiled c =
      gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90"), true, {"--ptxas-options=-v"});
  EXPECT_FALSE(c.cubin.empty()) << k.name;
  if (ptxas_log) *ptxas_log = c.log;
  return c.ptx;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::string matmul_text(const std::string& type, int64_t m, int64_t n, int64_t k) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 20]>
    g ({0}[{1},{3}] a, {0}[{3},{2}] b) => ({0}[{1},{2}] y) {{ y = MatMul(a, b) }})",
                     type, m, n, k);
}

// Every candidate compiles; the main loop's shared-memory reads are 16 bytes (two 16-byte
// reads for a double 4-vector), FMAs outnumber them by the micro-tile's ratio, nothing
// spills to local memory (ptxas's report). Prints each candidate's registers.
TEST(GemmSimtCodegen, EveryCandidateCompilesToVectorFragmentsInRegisters) {
  // A plain product in float and double, and a batched one (a loop over batches) with a
  // bias + Gelu epilogue.
  const std::vector<std::pair<const char*, std::string>> runs = {
      {"float", matmul_text("float", 8192, 8192, 8192)},
      {"double", matmul_text("double", 8192, 8192, 8192)},
      {"float", R"(<ir_version: 8, opset_import: ["" : 20]>
        g (float[4,1024,768] x, float[768,3072] w, float[3072] c) => (float[4,1024,3072] y) {
          m = MatMul(x, w)  s = Add(m, c)  y = Gelu(s) })"},
      // BERT's FFN down at batch 1: split-K candidates among the rest.
      {"float", matmul_text("float", 128, 768, 3072)},
  };
  for (const auto& [type, text] : runs) {
    GemmGroup gg = gemm_group_of(text);
    std::vector<codegen::Tunables> cands = codegen::candidates(gg.g, gg.group, kH200);
    ASSERT_GE(cands.size(), std::string(type) == "float" ? 8u : 5u);
    for (const codegen::Tunables& t : cands) {
      codegen::GroupCode gc = codegen::generate(gg.g, gg.group, kH200, &t);
      ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
      const codegen::Kernel& k = *gc.kernel;
      EXPECT_EQ(k.tunables, t);
      EXPECT_EQ(k.block[0],
                static_cast<unsigned>((t.at("bm") / t.at("tm")) * (t.at("bn") / t.at("tn"))));
      std::string log;
      const std::string ptx = ptx_of(k, &log);
      EXPECT_EQ(ptx.find("ld.local"), std::string::npos) << type << " " << k.name;
      EXPECT_EQ(ptx.find("st.local"), std::string::npos) << type << " " << k.name;
      // ptxas allocates registers without spilling within the launch bounds.
      EXPECT_NE(log.find(" 0 bytes spill stores, 0 bytes spill loads"), std::string::npos)
          << type << " " << k.name << "\n"
          << log;
      EXPECT_NE(log.find("Used "), std::string::npos) << log;
      const bool f32 = std::string(type) == "float";
      const size_t lds = count(ptx, f32 ? "ld.shared.v4.f32" : "ld.shared.v2.f64");
      const size_t fma = count(ptx, f32 ? "fma.rn.f32" : "fma.rn.f64");
      // Per k-step: (tm + tn) / 4 fragment reads (twice that for double), tm * tn FMAs; one
      // k-step's reads more than bk k-steps' FMAs in all (the first stage's first fragments).
      const double per_read = (f32 ? 1.0 : 0.5) * t.at("tm") * t.at("tn") /
                              ((t.at("tm") + t.at("tn")) / 4.0) * t.at("bk") / (t.at("bk") + 1);
      std::string tun;
      for (const auto& [key, v] : t) tun += fmt::format("{}={} ", key, v);
      std::printf("%s %s| fma %zu, 16-byte lds %zu | %s", type, tun.c_str(), fma, lds,
                  log.find("Used ") == std::string::npos ? log.c_str()
                                                         : log.substr(log.find("Used ")).c_str());
      ASSERT_GT(lds, 0u) << type << " " << k.name;
      EXPECT_GE(static_cast<double>(fma) / lds, 0.99 * per_read) << type << " " << k.name;
      if (f32 && t.at("tm") == 8 && t.at("tn") == 8) {
        EXPECT_GE(fma, 8 * lds);
      }
      // split-K: a cluster of `split` blocks a tile, summed through distributed shared memory.
      const int split = t.count("split") ? t.at("split") : 1;
      EXPECT_EQ(
          k.source.find(fmt::format("__cluster_dims__({}, 1, 1)", split)) != std::string::npos,
          split > 1)
          << k.name;
      EXPECT_EQ(ptx.find("barrier.cluster.wait") != std::string::npos, split > 1) << k.name;
      // A and B of this graph are plain inputs with sizes that take 16-byte loads; with
      // cp.async stages (st), B's are 16-byte copies and A's (k contiguous, transposed into
      // the k-major stage) 4-byte ones, st - 1 k-tiles of them in flight.
      if (t.count("st")) {
        EXPECT_TRUE(f32) << k.name;
        EXPECT_NE(ptx.find("cp.async.cg.shared.global [%r"), std::string::npos) << k.name;
        EXPECT_NE(ptx.find("], 4, %r"), std::string::npos) << k.name;
        EXPECT_NE(ptx.find(fmt::format("cp.async.wait_group {};", t.at("st") - 2)),
                  std::string::npos)
            << k.name;
      } else {
        EXPECT_NE(ptx.find(f32 ? "ld.global.nc.v4.f32" : "ld.global.nc.v2.f64"), std::string::npos)
            << type << " " << k.name;
      }
    }
  }
}

// Every case of the emulator's and GPU tests compiles with its default tile.
TEST(GemmSimtCodegen, EveryCaseCompiles) {
  for (const test::GemmSimtCase& c : test::gemm_simt_cases()) {
    GemmGroup gg = gemm_group_of(test::gemm_simt_text(c, "float"));
    codegen::GroupCode gc = codegen::generate(gg.g, gg.group, kH200);
    ASSERT_TRUE(gc.kernel.has_value()) << c.name << ": " << gc.fallback_reason;
    EXPECT_NE(gc.kernel->source.find("braze_simt_gemm<float"), std::string::npos) << c.name;
    EXPECT_FALSE(ptx_of(*gc.kernel).empty()) << c.name;
  }
}

// Plain operands are read from their pointers, 16 bytes a load when their contiguous dim
// is a multiple of 4 floats; a fused Transpose or Cast, or a vector, through the emitter.
TEST(GemmSimtCodegen, OperandReaders) {
  auto source_of = [](const char* name) {
    for (const test::GemmSimtCase& c : test::gemm_simt_cases())
      if (std::string(c.name) == name) {
        GemmGroup gg = gemm_group_of(test::gemm_simt_text(c, "float"));
        const std::string src = codegen::generate(gg.g, gg.group, kH200).kernel->source;
        return src.substr(src.find("// ---- generated ----"));
      }
    ADD_FAILURE() << name;
    return std::string();
  };
  // A [131, 260] (k contiguous, 4 | 260) and B [260, 68] (n contiguous, 4 | 68).
  std::string s = source_of("aligned_many_k_tiles");
  EXPECT_NE(s.find("braze_simt_gmem<float, float, "), std::string::npos);
  EXPECT_NE(s.find("true, 4> la"), std::string::npos);
  EXPECT_NE(s.find("false, 4> lb"), std::string::npos);
  EXPECT_NE(s.find("braze_vstore_typed<4>"), std::string::npos) << "4 | 68: vector stores";
  // transA / transB: A [36, 132] stored m-contiguous, B [72, 36] k-contiguous.
  s = source_of("aligned_transa_transb");
  EXPECT_NE(s.find("false, 4> la"), std::string::npos);
  EXPECT_NE(s.find("true, 4> lb"), std::string::npos);
  // k = 7 and n = 129 take scalar loads and stores.
  s = source_of("gemm_transb_bias_k7");
  EXPECT_NE(s.find("true, 1> la"), std::string::npos);
  EXPECT_NE(s.find("true, 1> lb"), std::string::npos);
  EXPECT_EQ(s.find("braze_vstore"), std::string::npos);
  // A Transpose fused in front of B is read in place as a view (its input's pointer, k
  // contiguous), not element by element.
  s = source_of("fused_transpose_operand");
  EXPECT_EQ(s.find("braze_simt_fn<"), std::string::npos);
  EXPECT_NE(s.find("true, 1> lb("), std::string::npos);  // k = 7: scalar loads
  EXPECT_NE(s.find("> la("), std::string::npos);
  s = source_of("cast_operand");
  EXPECT_NE(s.find("decltype(la_at)> la"), std::string::npos);
  s = source_of("matrix_vector");
  EXPECT_NE(s.find("decltype(lb_at)> lb"), std::string::npos);
  // An output stored transposed is written element by element.
  s = source_of("epilogue_transpose");
  EXPECT_EQ(s.find("braze_vstore"), std::string::npos);
}

// The default: 128 x 128 when there are two blocks an SM, then 128 x 64, then smaller tiles
// as M * N shrinks against 132 SMs; where even those leave SMs idle and k is long (float,
// sm_90), 64 x 64 split-K over a cluster of blocks.
TEST(GemmSimtCodegen, DefaultTileFollowsTheProblemSize) {
  auto default_of = [](const char* type, int64_t m, int64_t n, int64_t k,
                       codegen::Target t = kH200) {
    GemmGroup gg = gemm_group_of(matmul_text(type, m, n, k));
    codegen::Tunables c = codegen::candidates(gg.g, gg.group, t).front();
    return std::make_tuple(c.at("bm"), c.at("bn"), c.count("split") ? c.at("split") : 1);
  };
  EXPECT_EQ(default_of("float", 8192, 8192, 8192), std::make_tuple(128, 128, 1));
  EXPECT_EQ(default_of("float", 4096, 3072, 768), std::make_tuple(128, 128, 1));
  // Fewer than two blocks an SM of 128 x 128: the 64 x 64 cp.async tile (4096 x 768: 768
  // tiles, unsplit).
  EXPECT_EQ(default_of("float", 4096, 768, 3072), std::make_tuple(64, 64, 1));
  // Small outputs of float32 operands: 64 x 64 or 32 x 64 tiles of 128 threads in four
  // cp.async stages, split over a cluster: the most blocks up to three an SM with 8 k-tiles
  // or more each. 128 x 3072: 96 tiles x 4; 128 x 2304: 72 x 5; 128 x 768: 48 tiles of 32 x
  // 64, x 6 over 768 (8 k-tiles each), x 8 over 3072.
  EXPECT_EQ(default_of("float", 128, 3072, 768), std::make_tuple(64, 64, 4));
  EXPECT_EQ(default_of("float", 128, 2304, 768), std::make_tuple(64, 64, 5));
  EXPECT_EQ(default_of("float", 128, 768, 768), std::make_tuple(32, 64, 6));
  EXPECT_EQ(default_of("float", 128, 768, 3072), std::make_tuple(32, 64, 8));
  {
    GemmGroup gg = gemm_group_of(matmul_text("float", 128, 768, 768));
    const codegen::Tunables c = codegen::candidates(gg.g, gg.group, kH200).front();
    EXPECT_EQ(c.at("st"), 4);
    EXPECT_EQ(c.at("tm") * c.at("tn"), 16);
  }
  EXPECT_EQ(default_of("double", 8192, 8192, 8192), std::make_tuple(128, 64, 1));
  // No clusters before sm_90, none in the emulator, no float sums of doubles: no split-K.
  EXPECT_EQ(default_of("float", 128, 768, 768, codegen::Target{80, 108}),
            std::make_tuple(32, 32, 1));
  codegen::Target emu = kH200;
  emu.emulated = true;
  EXPECT_EQ(default_of("float", 128, 768, 768, emu), std::make_tuple(32, 32, 1));
  EXPECT_EQ(std::get<2>(default_of("double", 128, 768, 768)), 1);
}

// A tile the main loop cannot take is refused with the reason.
TEST(GemmSimtCodegen, UnsupportedTileSaysWhy) {
  GemmGroup gg = gemm_group_of(matmul_text("float", 64, 64, 64));
  codegen::Tunables t{{"bm", 64}, {"bn", 64}, {"bk", 8}, {"tm", 6}, {"tn", 4}};
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, kH200, &t);
  EXPECT_FALSE(gc.kernel.has_value());
  EXPECT_NE(gc.fallback_reason.find("not supported"), std::string::npos) << gc.fallback_reason;
}

}  // namespace
}  // namespace braze
