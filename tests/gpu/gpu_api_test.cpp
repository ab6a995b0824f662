// The public API on the GPU: a bundled model's Session::run against ONNX Runtime's outputs;
// eight threads, each with its own GPU Session on one shared Engine, giving outputs identical
// to one thread's; 16 threads for 10,000 runs without a difference or a leak; engines loaded
// by several threads at once; and Session::run_device on caller-owned memory and the caller's
// stream. Skips without a GPU.
#include <braze/braze.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "frontend/onnx_proto.h"
#include "runtime/compare.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(BRAZE_SOURCE_DIR) / "models" / "bert_tiny_legacy";

// The bundled model at its test data's shapes, and that data's inputs.
Engine bert_tiny() {
  CompileOptions o;
  o.shapes = {{"input_0", {2, 16}}, {"input_1", {2, 16}}};
  return Engine::compile((kModel / "model.onnx").string(), o);
}

std::vector<Tensor> bert_tiny_inputs() {
  const fs::path data = kModel / "test_data_set_0";
  return {read_tensor((data / "input_0.pb").string()), read_tensor((data / "input_1.pb").string())};
}

TEST(GpuApi, EightThreadsEachWithASessionOnOneEngine) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const Engine e = bert_tiny();
  const fs::path data = kModel / "test_data_set_0";
  const std::vector<Tensor> in = bert_tiny_inputs();
  Session one(e, Backend::Gpu);
  ASSERT_EQ(one.backend(), Backend::Gpu);
  const Tensor want = one.run(in)[0];
  const Tensor ort = read_tensor((data / "output_0.pb").string());
  runtime::Comparison c = runtime::compare(want, ort, runtime::default_tolerance(ort.dtype()));
  EXPECT_TRUE(c.ok) << c.summary(want, ort);
  std::vector<Tensor> got(8);
  const std::vector<std::string> errors = test::on_threads(8, [&](int t) {
    Session s(e, Backend::Gpu);
    for (int r = 0; r < 20; ++r) got[t] = s.run(in)[0];
  });
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_TRUE(test::same_bytes(got[t], want)) << "thread " << t;
  }
}

// The process's resident host memory, in bytes.
size_t resident_host_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// 16 threads, each its own Session on one Engine, 10,000 runs in all: every output the same as
// one thread's, byte for byte, and nothing kept after the sessions go. A warm-up round first
// (the driver's and the allocator's pools grow once); then the same round again must leave
// free device memory where it was and resident host memory within 16 MiB (a leak of 2 KiB a
// run would show 20 MB).
TEST(GpuApi, SixteenThreadsTenThousandRunsNoDifferenceNoLeak) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const Engine e = bert_tiny();
  const std::vector<Tensor> in = bert_tiny_inputs();
  const Tensor want = Session(e, Backend::Gpu).run(in)[0];
  constexpr int kThreads = 16, kRuns = 10000 / kThreads;
  auto round = [&](int runs) {
    std::vector<int> differ(kThreads, 0);
    const std::vector<std::string> errors = test::on_threads(kThreads, [&](int t) {
      Session s(e, Backend::Gpu);
      for (int r = 0; r < runs; ++r) differ[t] += !test::same_bytes(s.run(in)[0], want);
    });
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(errors[t], "") << "thread " << t;
      EXPECT_EQ(differ[t], 0) << "thread " << t << ": runs whose output differed";
    }
  };
  round(20);
  const size_t device_before = gpu::free_device_memory(), host_before = resident_host_bytes();
  round(kRuns);
  const size_t device_after = gpu::free_device_memory(), host_after = resident_host_bytes();
  EXPECT_EQ(device_after, device_before) << "device memory not given back";
  EXPECT_LE(host_after, host_before + (size_t{16} << 20)) << "resident host memory grew";
}

// Engines loaded from one file by eight threads at once, each run on the GPU.
TEST(GpuApi, EightThreadsLoadOneEngineFileAtOnce) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const fs::path dir = test::temp_dir("GpuApi", "LoadAtOnce");
  const std::string path = (dir / "bert.braze").string();
  const Engine e = bert_tiny();
  e.save(path);
  const std::vector<Tensor> in = bert_tiny_inputs();
  const Tensor want = Session(e, Backend::Gpu).run(in)[0];
  std::vector<Tensor> got(8);
  const std::vector<std::string> errors = test::on_threads(
      8, [&](int t) { got[t] = Session(Engine::load(path), Backend::Gpu).run(in)[0]; });
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_TRUE(test::same_bytes(got[t], want)) << "thread " << t;
  }
  fs::remove_all(dir);
}

// Host tensors in device buffers `offset` bytes past a 256-byte boundary (16: an address the
// kernels cannot take in place, so the session copies through its own memory).
struct DeviceSet {
  std::vector<gpu::DeviceBuffer> buffers;
  std::vector<DeviceTensor> tensors;
};

DeviceSet to_device(const std::vector<TensorInfo>& infos, const std::vector<Tensor>* host,
                    size_t offset) {
  DeviceSet d;
  for (size_t i = 0; i < infos.size(); ++i) {
    const size_t bytes =
        static_cast<size_t>(checked_numel(infos[i].shape)) * dtype_size(infos[i].dtype);
    d.buffers.emplace_back(bytes + offset + 256);
    const CUdeviceptr p = d.buffers.back().ptr() + offset;
    BRAZE_CU(cuMemsetD8, d.buffers.back().ptr(), 0xFF, d.buffers.back().size());  // poison
    if (host && bytes) BRAZE_CU(cuMemcpyHtoD, p, (*host)[i].raw(), bytes);
    d.tensors.push_back({reinterpret_cast<void*>(p), infos[i].dtype, infos[i].shape});
  }
  return d;
}

std::vector<Tensor> to_host(const std::vector<TensorInfo>& infos, const DeviceSet& d) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < infos.size(); ++i) {
    out.emplace_back(infos[i].dtype, infos[i].shape);
    if (out.back().nbytes())
      BRAZE_CU(cuMemcpyDtoH, out.back().raw(), reinterpret_cast<CUdeviceptr>(d.tensors[i].data),
               out.back().nbytes());
  }
  return out;
}

// Session::run_device against Session::run on the same inputs, output by output, byte for
// byte (the same kernels). The session under test first runs other inputs through run(), so
// a kernel that read its own memory instead of the caller's would give their outputs.
void expect_device_runs_match(const Engine& e, const std::vector<std::vector<Tensor>>& sets) {
  ASSERT_GE(sets.size(), 3u);
  Session ref(e, Backend::Gpu), s(e, Backend::Gpu);
  s.run(sets[0]);
  CUstream stream;
  BRAZE_CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  // Aligned (bound in place), new output addresses (the graph updated), misaligned (copied).
  const size_t offsets[] = {0, 0, 16};
  for (size_t r = 0; r < 3; ++r) {
    const std::vector<Tensor>& in = sets[r % 2 == 0 ? 1 : 2];
    DeviceSet din = to_device(e.inputs(), &in, offsets[r]);
    DeviceSet dout = to_device(e.outputs(), nullptr, offsets[r]);
    s.run_device(din.tensors, dout.tensors, stream);
    s.synchronize(stream);
    const std::vector<Tensor> got = to_host(e.outputs(), dout), want = ref.run(in);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(test::same_bytes(got[i], want[i]))
          << "run " << r << ", output " << e.output_names()[i];
  }
  // The host path after device runs reads its own memory again.
  const std::vector<Tensor> again = s.run(sets[0]), want = ref.run(sets[0]);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(test::same_bytes(again[i], want[i]));
  gpu::driver().cuStreamDestroy(stream);
}

TEST(GpuApi, RunOnDeviceMemoryAndTheCallersStream) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  CompileOptions o;
  o.shapes = {{"input_0", {2, 16}}, {"input_1", {2, 16}}};
  const Engine e = Engine::compile((kModel / "model.onnx").string(), o);
  const fs::path data = kModel / "test_data_set_0";
  const std::vector<Tensor> a = {read_tensor((data / "input_0.pb").string()),
                                 read_tensor((data / "input_1.pb").string())};
  // Other token ids and mask: each row's ids reversed, the mask's last four positions off.
  std::vector<Tensor> b = {a[0].clone(), a[1].clone()}, c = {a[0].clone(), a[1].clone()};
  auto* ids = static_cast<int64_t*>(b[0].raw());
  std::reverse(ids, ids + 16);
  std::reverse(ids + 16, ids + 32);
  auto* mask = static_cast<int64_t*>(c[1].raw());
  for (int i : {12, 13, 14, 15, 28, 29, 30, 31}) mask[i] = 0;
  expect_device_runs_match(e, {a, b, c});
}

// A half-precision product whose operands are graph inputs, read through TMA descriptors
// (encoded again for the caller's addresses), and a graph input returned as an output.
TEST(GpuApi, RunOnDeviceReadsGemmOperandsInPlace) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const onnx::ModelProto m = frontend::parse_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float16[256, 128] x, float16[128, 192] w) => (float16[256, 192] y, float16[256, 128] x2) {
      p = MatMul(x, w)  y = Relu(p)  x2 = Identity(x) })");
  const Engine e = Engine::compile_bytes(m.SerializeAsString());
  std::vector<std::vector<Tensor>> sets;
  for (uint64_t seed : {1, 2, 3})
    sets.push_back({test::random(DType::Float16, {256, 128}, seed),
                    test::random(DType::Float16, {128, 192}, seed + 10)});
  expect_device_runs_match(e, sets);
}

TEST(GpuApi, RunOnDeviceChecksShapesAndDtypes) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  CompileOptions o;
  o.shapes = {{"input_0", {2, 16}}, {"input_1", {2, 16}}};
  const Engine e = Engine::compile((kModel / "model.onnx").string(), o);
  Session s(e, Backend::Gpu);
  DeviceSet in = to_device(e.inputs(), nullptr, 0), out = to_device(e.outputs(), nullptr, 0);
  std::vector<DeviceTensor> wrong = in.tensors;
  wrong[1].shape = {2, 17};
  test::expect_user_error([&] { s.run_device(wrong, out.tensors); },
                          {"input_1", "[2,17]", "[2,16]"});
  wrong = in.tensors;
  wrong[0].dtype = DType::Int32;
  test::expect_user_error([&] { s.run_device(wrong, out.tensors); }, {"input_0", "int32"});
  test::expect_user_error([&] { s.run_device({in.tensors[0]}, out.tensors); },
                          {"1 inputs given", "has 2"});
}

}  // namespace
}  // namespace braze
