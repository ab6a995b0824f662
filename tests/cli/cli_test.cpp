// The braze executable end to end: exit codes and messages for good and bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "frontend/onnx_proto.h"
#include "frontend/tensor_io.h"
#include "tests/cli/cli_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;
using test::braze;
using test::Result;
using test::write_text_model;

// y = Relu(x + w), x float[2,3].
fs::path write_model(const fs::path& dir) {
  return write_text_model(dir / "model.onnx", R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,3] y)
    <float[3] w = {1, -2, 0.5}> { t = Add(x, w)  y = Relu(t) })");
}

TEST(Cli, Version) {
  Result r = braze("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("braze "), std::string::npos);
}

TEST(Cli, RunWritesOutputsAndChecksThem) {
  fs::path d = test::temp_dir("cli_test", "run");
  fs::path model = write_model(d);
  Tensor x = test::floats({2, 3}, {0.5f, 1.f, -1.f, -2.f, 3.f, 0.25f});
  frontend::write_tensor_pb(d / "input_0.pb", x, "x");
  Tensor y = test::floats({2, 3}, {1.5f, 0.f, 0.f, 0.f, 1.f, 0.75f});
  fs::create_directories(d / "expected");
  frontend::write_tensor_pb(d / "expected" / "output_0.pb", y, "y");
  Result r = braze(fmt::format("run {} --inputs {} --outputs {} --check {}", model.string(),
                               (d / "input_0.pb").string(), (d / "out").string(),
                               (d / "expected").string()));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(frontend::read_tensor_file(d / "out" / "y.npy").tensor.bitwise_equal(y));

  Tensor wrong = y.clone();
  wrong.set_f64(0, 9.0);
  frontend::write_tensor_pb(d / "expected" / "output_0.pb", wrong, "y");
  r = braze(fmt::format("run {} --inputs {} --check {}", model.string(),
                        (d / "input_0.pb").string(), (d / "expected").string()));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos) << r.out;
  // The failure is said on stderr too (stdout alone was silent where it is not shown).
  r = braze(fmt::format("run {} --inputs {} --check {}", model.string(),
                        (d / "input_0.pb").string(), (d / "expected").string()),
            "2>&1 >/dev/null");  // stderr alone
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("error: 1 of 1 output differs from " + (d / "expected").string() + " (y)"),
            std::string::npos)
      << r.out;
}

TEST(Cli, RunOnRandomInputs) {
  fs::path d = test::temp_dir("cli_test", "random");
  Result r = braze("run " + write_model(d).string() + " --seed 3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("is random float32[2,3] (seed 3)"), std::string::npos) << r.out;
}

TEST(Cli, InputOfTheWrongShapeOrDtype) {
  fs::path d = test::temp_dir("cli_test", "wrong_input");
  fs::path model = write_model(d);
  frontend::write_tensor_pb(d / "bad_shape.pb", test::floats({3, 2}, {1, 2, 3, 4, 5, 6}), "x");
  Result r = braze(fmt::format("run {} --inputs {} --shapes x:2x3", model.string(),
                               (d / "bad_shape.pb").string()));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("input 'x' is float32[3,2], but the model expects float32[2,3]"),
            std::string::npos)
      << r.out;
  frontend::write_tensor_pb(d / "bad_dtype.pb", test::int64s({2, 3}, {1, 2, 3, 4, 5, 6}), "x");
  r = braze(fmt::format("run {} --inputs {}", model.string(), (d / "bad_dtype.pb").string()));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("input 'x' is int64[2,3], but the model expects float32[2,3]"),
            std::string::npos)
      << r.out;
}

// --int-range is inclusive at both ends, and must fit the dtype of every integer input it
// fills (it used to wrap into int8 inputs, and to reject a HI of INT64_MAX by overflowing).
TEST(Cli, IntRangeFitsTheInputs) {
  fs::path d = test::temp_dir("cli_test", "int_range");
  auto model = [&](const char* dtype) {
    return write_text_model(d / fmt::format("{}.onnx", dtype), fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 17]>
      g ({}[2,3] x) => (float[2,3] y) {{ y = Cast<to = 1>(x) }})",
                                                                           dtype))
        .string();
  };
  const std::string i8 = model("int8"), i64 = model("int64");
  Result r = braze(fmt::format("run {} --int-range 0,300", i8));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(
                "input 'x': --int-range: integer range 0,300 does not fit int8 (from -128 to 127)"),
            std::string::npos)
      << r.out;
  r = braze(fmt::format("run {} --int-range 5,1", i8));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--int-range 5,1 is empty"), std::string::npos) << r.out;
  r = braze(fmt::format("run {} --int-range -128,127 --outputs {}", i8, (d / "out8").string()));
  EXPECT_EQ(r.code, 0) << r.out;
  r = braze(fmt::format("run {} --int-range 7,7 --outputs {}", i8, (d / "out7").string()));
  EXPECT_EQ(r.code, 0) << r.out;
  Tensor y = frontend::read_tensor_file(d / "out7" / "y.npy").tensor;
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.get_f64(i), 7.0);
  r = braze(fmt::format("run {} --int-range -9223372036854775808,9223372036854775807", i64));
  EXPECT_EQ(r.code, 0) << r.out;
}

// numpy has no bfloat16: bfloat16 outputs are written as float32 files holding them exactly,
// and float32 files holding exact bfloat16 values are read back for bfloat16 inputs.
TEST(Cli, BFloat16InputsFromFloat32Files) {
  fs::path d = test::temp_dir("cli_test", "bf16_inputs");
  const fs::path model = write_text_model(d / "bf16.onnx", R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bfloat16[2,3] x) => (bfloat16[2,3] y) { y = Add(x, x) })");
  frontend::write_npy(d / "x.npy",
                      test::floats({2, 3}, {1.5f, -2.f, 0.375f, 256.f, -0.0078125f, 3.f}));
  Result r = braze(fmt::format("run {} --inputs {} --outputs {} --backend reference",
                               model.string(), (d / "x.npy").string(), (d / "out").string()));
  ASSERT_EQ(r.code, 0) << r.out;
  Tensor y = frontend::read_tensor_file(d / "out" / "y.npy").tensor;
  test::expect_floats(y, {2, 3}, {3.f, -4.f, 0.75f, 512.f, -0.015625f, 6.f});
  frontend::write_npy(d / "inexact.npy", test::floats({2, 3}, {1.f, 2.f, 3.f, 4.f, 1.1f, 6.f}));
  r = braze(fmt::format("run {} --inputs {} --backend reference", model.string(),
                        (d / "inexact.npy").string()));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("input 'x' is float32 and the model expects bfloat16, but element 4 (1.1) "
                       "is not a bfloat16 value"),
            std::string::npos)
      << r.out;
}

TEST(Cli, CorruptInputHeaderIsEscapedInTheMessage) {
  fs::path d = test::temp_dir("cli_test", "corrupt_npy");
  fs::path model = write_model(d);
  std::string header = "{'descr': '<f4\xf9', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  std::ofstream(d / "x.npy", std::ios::binary)
      << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>((header.size() + 1) & 0xff)
      << static_cast<char>((header.size() + 1) >> 8) << header << '\n'
      << std::string(24, '\0');
  Result r = braze(fmt::format("run {} --inputs {}", model.string(), (d / "x.npy").string()));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(".npy dtype '<f4\\xf9' is not supported"), std::string::npos) << r.out;
}

TEST(Cli, BadModelFilesExitTwoWithAMessage) {
  fs::path d = test::temp_dir("cli_test", "bad_models");
  std::ofstream(d / "empty.onnx").close();
  std::ofstream(d / "text.onnx") << "hello";
  for (const char* f : {"missing.onnx", "empty.onnx", "text.onnx"}) {
    Result r = braze("inspect " + (d / f).string());
    EXPECT_EQ(r.code, 2) << f << ": " << r.out;
    EXPECT_EQ(r.out.rfind("error: ", 0), 0u) << f << ": " << r.out;
    EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
  }
}

// Files that cannot be written whole (here: a file-size limit of 0, the signal it raises
// ignored, so that each write fails with EFBIG) are errors naming the file, never "wrote".
TEST(Cli, WriteFailuresAreErrors) {
  fs::path d = test::temp_dir("cli_test", "write_failures");
  const std::string model = write_model(d).string(), out = (d / "out").string();
  fs::create_directories(d / "outputs");
  auto limited = [&](const std::string& args) {
    return braze("--version >/dev/null; trap '' XFSZ; ulimit -f 0; exec " +
                 std::string(BRAZE_BINARY) + " " + args);
  };
  for (const std::string& args :
       {"compile " + model + " -o " + out, "inspect " + model + " --html " + out,
        "inspect " + model + " --dot " + out,
        "run " + model + " --backend reference --outputs " + (d / "outputs").string(),
        "inspect " + model + " --json > " + out}) {
    Result r = limited(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    if (args.find('>') == std::string::npos) {  // else stderr went to the file too
      EXPECT_NE(r.out.find("error: "), std::string::npos) << args << ": " << r.out;
    }
    EXPECT_EQ(r.out.find("wrote"), std::string::npos) << args << ": " << r.out;
  }
  EXPECT_NE(
      limited("compile " + model + " -o " + out).out.find(out + ": write failed (File too large)"),
      std::string::npos);
  EXPECT_FALSE(fs::exists(out + ".tmp"));
  EXPECT_EQ(braze("compile " + model + " -o " + out).code, 0);  // without the limit
  // A device is written in place: an engine file's write-then-rename replaced the node.
  EXPECT_EQ(braze("compile " + model + " -o /dev/null").code, 0);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(braze("").code, 2);
  EXPECT_EQ(braze("run").code, 2);
  EXPECT_EQ(braze("run x.onnx --backend nowhere").code, 2);
  // Counts and tolerances out of range (iters 0 left nothing to take a median of; a NaN or
  // negative tolerance fell back to the default, inf passed everything).
  fs::path d = test::temp_dir("cli_test", "usage");
  const std::string model = write_model(d).string();
  for (const char* args :
       {"bench {} --iters 0", "bench {} --warmup -1", "diff {} --rtol nan", "diff {} --atol -1",
        "diff {} --atol inf", "doctor --megabytes 0{}", "doctor --iters 0{}"}) {
    Result r =
        braze(fmt::format(fmt::runtime(args), std::string(args).find("doctor") == 0 ? "" : model));
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
  }
  Result r = braze(fmt::format("diff {} --rtol nan", model));
  EXPECT_NE(r.out.find("'nan' is not a tolerance"), std::string::npos) << r.out;
  EXPECT_EQ(braze(fmt::format("diff {} --atol 0 --rtol 0", model)).code, 0);
}

// A value no GPU could hold is refused when the engine is planned: its byte count would
// overflow (3e9 x 3e9 float32 wrapped to 16 million TiB, and a wrap to a small size would
// let the kernel write past its buffer).
TEST(Cli, ValuesLargerThanAnyGpuAreRefused) {
  fs::path d = test::temp_dir("cli_test", "huge");
  const fs::path p = write_text_model(d / "huge.onnx", R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (float[3000000000,3000000000] y)
    <int64[2] s = {3000000000, 3000000000}> { y = Expand(x, s) })");
  Result r =
      braze(fmt::format("compile {} -o {} --arch sm_90", p.string(), (d / "huge.braze").string()));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("value 'y' (float32[3000000000,3000000000]) is larger than a GPU holds"),
            std::string::npos)
      << r.out;
}

// Options that shape how a model is compiled are refused for an engine (they were ignored:
// `run m.braze --shapes x:4x3` ran the engine's [2,3]).
TEST(Cli, CompileOptionsAreRefusedForEngines) {
  fs::path d = test::temp_dir("cli_test", "engine_options");
  const std::string engine = (d / "m.braze").string();
  ASSERT_EQ(
      braze(fmt::format("compile {} -o {} --arch sm_90", write_model(d).string(), engine)).code, 0);
  for (const char* opt :
       {"--shapes x:4x3", "--precision fp16", "--no-fuse", "--tune", "--arch sm_80"}) {
    for (const char* cmd : {"run", "bench"}) {
      Result r = braze(fmt::format("{} {} {}", cmd, engine, opt));
      EXPECT_EQ(r.code, 2) << cmd << " " << opt << ": " << r.out;
      EXPECT_NE(r.out.find("is an engine (compiled at --precision fp32)"), std::string::npos)
          << r.out;
    }
  }
  EXPECT_EQ(braze(fmt::format("run {} --precision fp32", engine)).code, 0);
  // An explicit --precision fp32 for an engine built at fp16 is refused too (it looked like the
  // default and was ignored); the engine's own precision, or none, runs.
  const std::string half = (d / "h.braze").string();
  ASSERT_EQ(
      braze(fmt::format("compile {} -o {} --precision fp16", write_model(d).string(), half)).code,
      0);
  Result f = braze(fmt::format("run {} --precision fp32", half));
  EXPECT_EQ(f.code, 2) << f.out;
  EXPECT_NE(f.out.find("is an engine (compiled at --precision fp16)"), std::string::npos) << f.out;
  EXPECT_EQ(braze(fmt::format("run {} --precision fp16", half)).code, 0);
  EXPECT_EQ(braze("run " + half).code, 0);
  // Its graph runs on the reference when asked; the emulator and unfused kernels need the model.
  Result r = braze(fmt::format("run {} --backend reference", engine));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("on the CPU reference"), std::string::npos) << r.out;
  for (const char* backend : {"emulator", "gpu-unfused"}) {
    r = braze(fmt::format("run {} --backend {}", engine, backend));
    EXPECT_EQ(r.code, 2) << backend << ": " << r.out;
    EXPECT_NE(r.out.find("give the model for"), std::string::npos) << r.out;
  }
  // The commands that take only models say what the file is.
  for (const std::string& cmd : {std::string("inspect"), std::string("diff"),
                                 "compile -o " + (d / "again.braze").string()}) {
    r = braze(fmt::format("{} {}", cmd, engine));
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("is a braze engine file; this command takes the ONNX model"),
              std::string::npos)
        << r.out;
  }
}

// bench ENGINE --inputs matches the files to the engine's own inputs (it tried to import the
// engine as an ONNX model: "does not parse as a ModelProto"). Without a GPU it then says
// there is nothing to time (exit 1); too many files is an error naming the engine's inputs.
TEST(Cli, BenchAnEngineOnGivenInputs) {
  fs::path d = test::temp_dir("cli_test", "bench_engine_inputs");
  const std::string engine = (d / "m.braze").string();
  ASSERT_EQ(
      braze(fmt::format("compile {} -o {} --arch sm_90", write_model(d).string(), engine)).code, 0);
  frontend::write_npy(d / "x.npy", test::floats({2, 3}, {0.5f, 1.f, -1.f, -2.f, 3.f, 0.25f}));
  Result r = braze(
      fmt::format("bench {} --inputs {} --iters 3 --warmup 1", engine, (d / "x.npy").string()));
  EXPECT_EQ(r.out.find("ModelProto"), std::string::npos) << r.out;
  EXPECT_TRUE(r.code == 0 || (r.code == 1 && r.out.find("no GPU") != std::string::npos)) << r.out;
  r = braze(fmt::format("bench {} --inputs {} {}", engine, (d / "x.npy").string(),
                        (d / "x.npy").string()));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("takes 1 input (x), 2 given"), std::string::npos) << r.out;
}

// Architectures NVRTC does not compile for are refused up front with what it does compile
// for (sm_72, sm_91 and sm_999 used to fail inside the first kernel's compilation, an
// internal error with the kernel's source), as is the "a" suffix before sm_90a.
TEST(Cli, ArchitecturesNvrtcCannotCompileFor) {
  fs::path d = test::temp_dir("cli_test", "arch");
  const std::string model = write_model(d).string(), out = (d / "m.braze").string();
  for (const char* arch : {"sm_72", "sm_91", "sm_999"}) {
    Result r = braze(fmt::format("compile {} -o {} --arch {}", model, out, arch));
    EXPECT_EQ(r.code, 2) << arch << ": " << r.out;
    EXPECT_NE(r.out.find(fmt::format("--arch {}: NVRTC", arch)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("sm_90"), std::string::npos) << r.out;
  }
  Result r = braze(fmt::format("compile {} -o {} --arch sm_80a", model, out));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("begin at sm_90a"), std::string::npos) << r.out;
  for (const char* arch : {"sm_80", "sm_90a"})
    EXPECT_EQ(braze(fmt::format("compile {} -o {} --arch {}", model, out, arch)).code, 0) << arch;
}

// --precision fp16: the emulated kernels run the model in float16 and diff reports the
// error against the float32 reference, with the relative L2 error.
TEST(Cli, DiffAtReducedPrecision) {
  fs::path d = test::temp_dir("cli_test", "precision");
  fs::path m = write_model(d);
  Result r = braze(fmt::format("diff {} --a emulator --b reference --precision fp16", m.string()));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("at --precision fp16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rel l2 err"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("agree within tolerance"), std::string::npos) << r.out;
  EXPECT_EQ(braze(fmt::format("diff {} --precision fp8", m.string())).code, 2);
  Result pk = braze(fmt::format("diff {} --a emulator --precision bf16 --per-kernel", m.string()));
  EXPECT_NE(pk.code, 0);
  EXPECT_NE(pk.out.find("without --precision"), std::string::npos) << pk.out;
}

// y = Gelu(a b + c) with a float[77,64], b float[64,200].
fs::path write_matmul_model(const fs::path& dir) {
  return write_text_model(dir / "matmul.onnx", R"(
    <ir_version: 8, opset_import: ["" : 20]>
    g (float[77,64] a, float[64,200] b, float[200] c) => (float[77,200] y) {
      p = MatMul(a, b)  s = Add(p, c)  y = Gelu(s) })");
}

// The "rel l2 err" column of diff's row for output `name`.
double diff_rel_l2(const std::string& out, const std::string& name) {
  size_t p = out.find("\n  " + name + " ");
  if (p == std::string::npos) return -1;
  std::istringstream row(out.substr(p + 3 + name.size()));
  double max_abs = -1, max_rel = -1, rel_l2 = -1;
  row >> max_abs >> max_rel >> rel_l2;
  return rel_l2;
}

// --precision tf32: the graph stays float32, the MatMul runs on the tensor-core schedule
// with tf32 operands (here on the emulator), within 1e-3 relative L2 of the reference;
// fp32 keeps the exact SIMT kernel. compile records the precision in the engine file.
TEST(Cli, Tf32Precision) {
  fs::path d = test::temp_dir("cli_test", "tf32");
  fs::path m = write_matmul_model(d);
  Result r = braze(fmt::format("diff {} --a emulator --b reference --precision tf32", m.string()));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("at --precision tf32"), std::string::npos) << r.out;
  const double tf32 = diff_rel_l2(r.out, "y");
  EXPECT_LE(tf32, 1e-3) << r.out;
  EXPECT_GT(tf32, 1e-5) << "operands rounded to tf32: " << r.out;
  Result exact = braze(fmt::format("diff {} --a emulator --b reference", m.string()));
  EXPECT_EQ(exact.code, 0) << exact.out;
  const double fp32 = diff_rel_l2(exact.out, "y");
  EXPECT_GE(fp32, 0) << exact.out;
  EXPECT_LT(fp32, 1e-6) << "fp32 stays exact: " << exact.out;

  Result c = braze(fmt::format("compile {} --precision tf32 --dump cuda --no-cache -o {}",
                               m.string(), (d / "tf32.braze").string()));
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("braze_tc_gemm<float, "), std::string::npos) << c.out;
  Result c32 = braze(fmt::format("compile {} --precision fp32 --dump cuda --no-cache -o {}",
                                 m.string(), (d / "fp32.braze").string()));
  EXPECT_EQ(c32.code, 0) << c32.out;
  EXPECT_EQ(c32.out.find("braze_tc_gemm"), std::string::npos) << "fp32 keeps the SIMT kernel";
  EXPECT_NE(c32.out.find("== cuda braze_gemm_MatMul"), std::string::npos) << c32.out;
  Result run = braze("run " + (d / "tf32.braze").string());
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("at --precision tf32"), std::string::npos) << run.out;
  EXPECT_NE(braze("run " + (d / "fp32.braze").string()).out.find("at --precision fp32"),
            std::string::npos);
  EXPECT_EQ(
      braze(fmt::format("compile {} --precision tf16 -o {}", m.string(), (d / "x.braze").string()))
          .code,
      2);
}

TEST(Cli, InspectJson) {
  fs::path d = test::temp_dir("cli_test", "inspect");
  Result r = braze("inspect --json " + write_model(d).string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"op_counts\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"Relu\": 1"), std::string::npos) << r.out;
}

// Each kernel's schedule in inspect --json: a depthwise 3x3 convolution (with the Relu it
// computes) is a direct loop, a float32 MatMul the SIMT GEMM.
TEST(Cli, InspectJsonNamesEachKernelsSchedule) {
  fs::path d = test::temp_dir("cli_test", "inspect_schedule");
  auto values = [](int n) {
    std::vector<std::string> v;
    for (int i = 0; i < n; ++i) v.push_back(fmt::format("{}", (i % 7 - 3) * 0.125));
    return fmt::format("{}", fmt::join(v, ", "));
  };
  fs::path m = write_text_model(d / "conv.onnx", fmt::format(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1,2,5,5] x) => (float[10,4] y)
    <float[2,1,3,3] w = {{{}}}, int64[2] s = {{10, 5}}, float[5,4] b = {{{}}}> {{
      c = Conv <group = 2, pads = [1, 1, 1, 1]> (x, w)  r = Relu(c)  f = Reshape(r, s)
      y = MatMul(f, b) }})",
                                                             values(18), values(20)));
  Result r = braze("inspect --json " + m.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::map<std::string, std::string> schedule_of;  // op -> schedule of the kernel computing it
  const nlohmann::json plan = nlohmann::json::parse(r.out);
  for (const auto& k : plan.at("kernels"))
    for (const auto& op : k.at("ops"))
      schedule_of[op.get<std::string>()] = k.at("schedule").get<std::string>();
  EXPECT_EQ(schedule_of["Conv"], "direct") << r.out;
  EXPECT_EQ(schedule_of["Relu"], "direct") << r.out;
  EXPECT_EQ(schedule_of["MatMul"], "simt") << r.out;
}

// The compile script's steps: inspect lists them, --dump shows what each made after it.
TEST(Cli, InspectDumpsShowEachStepOfTheCompileScript) {
  fs::path d = test::temp_dir("cli_test", "inspect_dump");
  Result r = braze("inspect " + write_model(d).string() + " --dump=passes,plan,log");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* mark : {"== after fold_constants (round 1) ==", "== step 2 passes:",
                           "== after plan ==\ngroup 0 pointwise (2 nodes)\n",
                           "== step 4 plan:", "== step 5 codegen:", "steps\n  import "}) {
    EXPECT_NE(r.out.find(mark), std::string::npos) << mark << " missing from:\n" << r.out;
  }
  EXPECT_EQ(r.out.find("== step 6"), std::string::npos) << "inspect stops after codegen";
  r = braze("inspect " + (d / "model.onnx").string() + " --dump=plans");
  EXPECT_EQ(r.code, 2) << r.out;
}

// A kernel compile past --compile-limit is cancelled: exit 2 naming the kernel and the limit.
TEST(Cli, CompileLimitCancelsAKernelThatRunsPastIt) {
  fs::path d = test::temp_dir("cli_test", "compile_limit");
  const std::string model = write_model(d).string(), out = (d / "m.braze").string();
  Result r = braze("compile " + model + " --no-cache --compile-limit 0.001 -o " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("error: NVRTC compiling kernel braze_"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("ran past the compile limit of 0.001 s per kernel (--compile-limit sets it)"),
      std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(out));
  r = braze("compile " + model + " --no-cache --compile-limit 0 -o " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--compile-limit: a positive number of seconds, not '0'"), std::string::npos)
      << r.out;
  EXPECT_EQ(braze("compile " + model + " --no-cache --compile-limit 120 -o " + out).code, 0);
}

TEST(Cli, ConformanceOnOneCase) {
  fs::path d = test::temp_dir("cli_test", "conformance");
  fs::path c = d / "relu_case";
  fs::create_directories(c / "test_data_set_0");
  write_model(c);
  Tensor x = test::floats({2, 3}, {0.5f, 1.f, -1.f, -2.f, 3.f, 0.25f});
  frontend::write_tensor_pb(c / "test_data_set_0" / "input_0.pb", x, "x");
  frontend::write_tensor_pb(c / "test_data_set_0" / "output_0.pb",
                            test::floats({2, 3}, {1.5f, 0.f, 0.f, 0.f, 1.f, 0.75f}), "y");
  Result r = braze("conformance " + d.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("PASS relu_case"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n1 passed, 0 failed, 0 skipped\n"), std::string::npos) << r.out;
  frontend::write_tensor_pb(c / "test_data_set_0" / "output_0.pb",
                            test::floats({2, 3}, {1.5f, 0.f, 0.f, 0.f, 1.f, 0.8f}), "y");
  r = braze("conformance " + d.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL relu_case"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("worst at [1,2]"), std::string::npos) << r.out;
  // A filter that matches no case is an error, not "0 passed".
  r = braze("conformance " + d.string() + " --filter relu_cas");
  EXPECT_EQ(r.code, 1) << r.out;
  r = braze("conformance " + d.string() + " --filter nothing_like_it");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--filter 'nothing_like_it' matches none of the cases"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace braze
