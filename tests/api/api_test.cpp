// The public C++ API (include/braze/braze.h) as an app uses it: compile a bundled model, run
// it on the CPU reference, save and load the engine, bad input and bad models as UserErrors,
// and eight threads each with its own Session on one shared Engine.
#include <braze/braze.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/compare.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(BRAZE_SOURCE_DIR) / "models" / "bert_tiny_legacy";

std::vector<Tensor> read_set(const std::string& prefix, size_t n) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(
        read_tensor((kModel / "test_data_set_0" / (prefix + std::to_string(i) + ".pb")).string()));
  return out;
}

class Api : public ::testing::Test {
 protected:
  // The model's symbolic batch and sequence dims at the test data's [2, 16].
  static CompileOptions options() {
    CompileOptions o;
    o.shapes = {{"input_0", {2, 16}}, {"input_1", {2, 16}}};
    return o;
  }
  static void SetUpTestSuite() {
    engine_ =
        std::make_unique<Engine>(Engine::compile((kModel / "model.onnx").string(), options()));
  }
  static void TearDownTestSuite() { engine_.reset(); }
  static std::unique_ptr<Engine> engine_;
};
std::unique_ptr<Engine> Api::engine_;

TEST_F(Api, CompiledModelRunsOnTheReferenceAndMatchesOnnxRuntime) {
  const Engine& e = *engine_;
  ASSERT_EQ(e.input_names().size(), 2u);
  ASSERT_EQ(e.output_names().size(), 1u);
  EXPECT_GT(e.kernels(), 0u);
  EXPECT_EQ(e.precision(), "fp32");
  EXPECT_FALSE(e.arch().empty());
  Session s(e, Backend::Reference);
  EXPECT_EQ(s.backend(), Backend::Reference);
  std::vector<Tensor> out = s.run(read_set("input_", 2));
  ASSERT_EQ(out.size(), 1u);
  const Tensor want = read_tensor((kModel / "test_data_set_0" / "output_0.pb").string());
  runtime::Comparison c = runtime::compare(out[0], want, runtime::default_tolerance(want.dtype()));
  EXPECT_TRUE(c.ok) << c.summary(out[0], want);
  const std::vector<TensorInfo> ins = e.inputs();
  EXPECT_EQ(ins[0].name, e.input_names()[0]);
  EXPECT_EQ(ins[0].shape, read_set("input_", 1)[0].shape());
}

// The GPU path's fusion and kernels, generated for the CPU emulator: ONNX Runtime's outputs
// without a GPU; the groups it ran on the CPU reference in its notes after the run.
TEST_F(Api, TheEmulatorRunsTheEnginesGraphInGeneratedKernels) {
  Session s(*engine_, Backend::Emulator);
  EXPECT_EQ(s.backend(), Backend::Emulator);
  const std::vector<Tensor> out = s.run(read_set("input_", 2));
  const Tensor want = read_tensor((kModel / "test_data_set_0" / "output_0.pb").string());
  runtime::Comparison c = runtime::compare(out[0], want, runtime::default_tolerance(want.dtype()));
  EXPECT_TRUE(c.ok) << c.summary(out[0], want);
  EXPECT_TRUE(s.notes().empty()) << s.notes().front();  // every group of BERT-tiny is a kernel
  test::expect_user_error([&] { s.run_device({}, {}); }, {"run_device", "CPU emulator"});
}

// An engine without kernels (no NVRTC) runs on the reference and the emulator only.
TEST(ApiNoKernels, RunsOnTheCpuBackendsOnlyAndIsNotSaved) {
  CompileOptions o;
  o.shapes = {{"input_0", {2, 16}}, {"input_1", {2, 16}}};
  o.kernels = false;
  const Engine e = Engine::compile((kModel / "model.onnx").string(), o);
  EXPECT_EQ(e.report().compiled + e.report().cache_hits, 0u);
  EXPECT_EQ(Session(e).backend(), Backend::Reference);
  test::expect_user_error([&] { Session(e, Backend::Gpu); }, {"without kernels", "Reference"});
  test::expect_user_error([&] { e.save(test::temp_dir("ApiNoKernels", "save") / "e.braze"); },
                          {"without kernels"});
  const std::vector<Tensor> in = {
      read_tensor((kModel / "test_data_set_0" / "input_0.pb").string()),
      read_tensor((kModel / "test_data_set_0" / "input_1.pb").string())};
  const Tensor want = read_tensor((kModel / "test_data_set_0" / "output_0.pb").string());
  const Tensor got = Session(e, Backend::Emulator).run(in)[0];
  runtime::Comparison c = runtime::compare(got, want, runtime::default_tolerance(want.dtype()));
  EXPECT_TRUE(c.ok) << c.summary(got, want);
}

// What the inspect, diff --per-kernel and bench commands read, without a GPU.
TEST_F(Api, InspectKernelValuesAndCostsDescribeTheEngine) {
  CompileOptions o;
  o.shapes = {{"input_0", {2, 16}}, {"input_1", {2, 16}}};
  const InspectReport r = inspect((kModel / "model.onnx").string(), o);
  EXPECT_NE(r.text.find("op counts"), std::string::npos);
  EXPECT_NE(r.json.find("\"kernels\""), std::string::npos);
  EXPECT_EQ(r.dot.rfind("digraph", 0), 0u) << r.dot.substr(0, 40);
  EXPECT_NE(r.html.find("<html"), std::string::npos);
  const std::vector<KernelCost> costs = kernel_costs(*engine_);
  EXPECT_EQ(costs.size(), engine_->kernels() + engine_->report().cpu_groups);
  EXPECT_TRUE(
      std::any_of(costs.begin(), costs.end(), [](const KernelCost& k) { return k.flops > 0; }));
  if (gpu_available()) return;  // on the GPU: ctest -L gpu's diff --per-kernel runs
  const std::vector<KernelValues> kv = kernel_values(*engine_, read_set("input_", 2));
  ASSERT_EQ(kv.size(), costs.size());
  for (const KernelValues& k : kv)
    for (const KernelValue& v : k.outputs) {
      runtime::Comparison c =
          runtime::compare(v.fused, v.reference, runtime::default_tolerance(v.reference.dtype()));
      EXPECT_TRUE(c.ok) << k.kernel << " %" << v.value << ": " << c.summary(v.fused, v.reference);
    }
  EXPECT_THROW(benchmark(*engine_, read_set("input_", 2)), UserError);
}

// Inputs from files matched by name, random ones by seed, shapes from their spec.
TEST(ApiInputs, FilesAreMatchedByNameAndRandomTensorsBySeed) {
  const std::string dir = (kModel / "test_data_set_0").string();
  const std::vector<Tensor> in =
      read_inputs({dir}, model_input_names((kModel / "model.onnx").string()));
  ASSERT_EQ(in.size(), 2u);
  EXPECT_TRUE(test::same_bytes(in[1], read_tensor(dir + "/input_1.pb")));
  test::expect_user_error([&] { read_inputs({dir}, {"input_0"}); }, {"2", "1"});
  // A stray file beside named inputs is an error, not taken by position.
  const fs::path stray = test::temp_dir("ApiInputs", "stray");
  write_npy((stray / "input_1.npy").string(), in[1]);
  write_npy((stray / "bogus.npy").string(), in[0]);
  test::expect_user_error(
      [&] {
        read_inputs({stray.string()}, {"input_0", "input_1"});
      },
      {"bogus.npy", "'bogus' is no input of the model (inputs: input_0, input_1)"});
  write_npy((stray / "other.npy").string(), in[1]);
  fs::remove(stray / "input_1.npy");  // none named: by position, as documented
  EXPECT_EQ(read_inputs({stray.string()}, {"input_0", "input_1"}).size(), 2u);
  const Tensor a = random_tensor(DType::Int64, {4, 8}, 7, {3, 5, -1, 1}),
               b = random_tensor(DType::Int64, {4, 8}, 7, {3, 5, -1, 1});
  EXPECT_TRUE(test::same_bytes(a, b));
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_TRUE(a.get_f64(i) >= 3 && a.get_f64(i) <= 5);
  EXPECT_FALSE(test::same_bytes(random_tensor(DType::Float32, {16}, 1),
                                random_tensor(DType::Float32, {16}, 2)));
  test::expect_user_error([&] { random_tensor(DType::UInt8, {2}, 1, {0, 300}); }, {"300"});
  EXPECT_EQ(parse_shapes("a:2x16,b:3").at("a"), (Shape{2, 16}));
  test::expect_user_error([&] { parse_shapes("a:2x"); }, {"2x"});
}

TEST_F(Api, SavedAndLoadedEngineKeepsItsInterfaceAndOutputs) {
  const fs::path dir = test::temp_dir("Api", "SaveLoad");
  const std::string path = (dir / "bert.braze").string();
  engine_->save(path);
  Engine loaded = Engine::load(path);
  EXPECT_EQ(loaded.input_names(), engine_->input_names());
  EXPECT_EQ(loaded.output_names(), engine_->output_names());
  EXPECT_EQ(loaded.arch(), engine_->arch());
  EXPECT_EQ(loaded.kernels(), engine_->kernels());
  const std::vector<Tensor> in = read_set("input_", 2);
  Session a(*engine_, Backend::Reference), b(loaded, Backend::Reference);
  EXPECT_TRUE(test::same_bytes(a.run(in)[0], b.run(in)[0]));
  fs::remove_all(dir);
}

TEST_F(Api, CompileFromBytesGivesTheSameEngine) {
  for (const std::string& n : engine_->notes())
    EXPECT_EQ(n.find("set to 1"), std::string::npos) << n;
  EXPECT_NE(Engine::compile((kModel / "model.onnx").string()).notes().size(), 0u)
      << "dims defaulted: noted";
  std::ifstream f(kModel / "model.onnx", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  Engine e = Engine::compile_bytes(ss.str(), options());
  EXPECT_EQ(e.input_names(), engine_->input_names());
  EXPECT_EQ(e.kernels(), engine_->kernels());
}

TEST_F(Api, WrongInputsAreUserErrorsNamingWhatIsWrong) {
  Session s(*engine_, Backend::Reference);
  std::vector<Tensor> in = read_set("input_", 2);
  try {
    s.run({in[0]});
    FAIL() << "one input of two was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("2"), std::string::npos) << e.what();
  }
  std::vector<Tensor> wrong = in;
  wrong[0] = Tensor(in[0].dtype(), {1, 3});
  EXPECT_THROW(s.run(wrong), UserError);
  wrong[0] = Tensor(DType::Float32, in[0].shape());
  EXPECT_THROW(s.run(wrong), UserError);
}

TEST_F(Api, TheReportSaysWhatTheCompileMadeAndTheDumpsGoWhereAsked) {
  const CompileReport& r = engine_->report();
  EXPECT_EQ(r.kernels, engine_->kernels());
  EXPECT_EQ(r.cpu_groups, 0u);
  EXPECT_GT(r.distinct, 0u);
  EXPECT_LE(r.distinct, r.kernels);
  EXPECT_EQ(r.distinct, r.compiled + r.cache_hits);
  EXPECT_GT(r.arena_bytes, 0u);
  EXPECT_GE(r.intermediate_bytes, r.arena_bytes);
  EXPECT_GT(r.weights_bytes, 0u);
  EXPECT_EQ(r.model_hash.size(), 16u);
  EXPECT_GE(r.build_seconds, r.codegen_seconds);
  std::vector<std::string> steps;
  for (const CompileStep& st : r.steps) steps.push_back(st.name);
  EXPECT_EQ(steps, (std::vector<std::string>{"import", "passes", "precision", "plan", "codegen",
                                             "tune", "compile", "assemble"}));
  std::ostringstream dumps;
  CompileOptions o = options();
  o.dump = {"graph", "cuda"};
  o.dump_to = &dumps;
  Engine e = Engine::compile((kModel / "model.onnx").string(), o);
  EXPECT_NE(dumps.str().find("== after import =="), std::string::npos);
  EXPECT_NE(dumps.str().find("== cuda "), std::string::npos);
  EXPECT_EQ(dumps.str().find("== ptx "), std::string::npos);
  o.dump = {"sass"};
  EXPECT_THROW(Engine::compile((kModel / "model.onnx").string(), o), UserError);
}

TEST(ApiErrors, BadModelsAndOptionsAreUserErrorsDerivedFromError) {
  EXPECT_THROW(Engine::compile("/nonexistent/model.onnx"), UserError);
  EXPECT_THROW(Engine::compile_bytes("not a model"), UserError);
  CompileOptions o;
  o.precision = "fp8";
  try {
    Engine::compile((kModel / "model.onnx").string(), o);
    FAIL() << "precision fp8 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(dynamic_cast<const UserError*>(&e), nullptr);
    EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Engine::load((kModel / "model.onnx").string()), UserError)
      << "an ONNX file is not an engine";
  EXPECT_THROW(read_tensor("/nonexistent/input.pb"), UserError);
}

TEST_F(Api, WithoutAGpuAutoIsTheReferenceAndGpuIsADeviceError) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(Session(*engine_).backend(), Backend::Reference);
  EXPECT_THROW(Session(*engine_, Backend::Gpu), DeviceError);
}

TEST_F(Api, TheDevicePathNeedsTheGpuBackend) {
  Session s(*engine_, Backend::Reference);
  test::expect_user_error([&] { s.run_device({}, {}); }, {"run_device", "CPU reference"});
  s.synchronize();  // nothing enqueued: returns
}

// Eight threads, each its own Session on the one Engine: every output identical to one
// thread's, byte for byte.
TEST_F(Api, EightThreadsShareOneEngine) {
  const std::vector<Tensor> in = read_set("input_", 2);
  const Tensor want = Session(*engine_, Backend::Reference).run(in)[0];
  std::vector<Tensor> got(8);
  const std::vector<std::string> errors = test::on_threads(8, [&](int t) {
    Session s(*engine_, Backend::Reference);
    for (int r = 0; r < 2; ++r) got[t] = s.run(in)[0];
  });
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_TRUE(test::same_bytes(got[t], want)) << "thread " << t;
  }
}

// Engines loaded from one file by eight threads at once, each run by its own thread: all
// the same engine (#21's concurrency).
TEST_F(Api, EightThreadsLoadOneEngineFileAtOnce) {
  const fs::path dir = test::temp_dir("Api", "LoadAtOnce");
  const std::string path = (dir / "bert.braze").string();
  engine_->save(path);
  const std::vector<Tensor> in = read_set("input_", 2);
  const Tensor want = Session(*engine_, Backend::Reference).run(in)[0];
  std::vector<Tensor> got(8);
  std::vector<size_t> kernels(8);
  const std::vector<std::string> errors = test::on_threads(8, [&](int t) {
    const Engine e = Engine::load(path);
    kernels[t] = e.kernels();
    got[t] = Session(e, Backend::Reference).run(in)[0];
  });
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(kernels[t], engine_->kernels()) << "thread " << t;
    EXPECT_TRUE(test::same_bytes(got[t], want)) << "thread " << t;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace braze
