#include "runtime/gpu/bench.h"

#include <braze/error.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "frontend/tensor_io.h"
#include "graph/registry.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/nvrtc.h"

namespace braze::gpu {

namespace {

constexpr const char* kCopyKernel = R"(
// ---- generated ----
extern "C" __global__ void __launch_bounds__(256) braze_copy(const float4* __restrict__ in, float4* __restrict__ out,
                                                            long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = in[i];
}
)";

// Events around a callable, `iters` times after `warmup`: microseconds per call. With
// `flush`, a buffer twice the L2's size is overwritten before each timed call (outside the
// events), so every call reads from DRAM as a cold run does.
template <class F>
std::vector<double> time_us(CUstream stream, int warmup, int iters, F&& f,
                            const DeviceBuffer* flush = nullptr) {
  CUevent e0, e1;
  BRAZE_CU(cuEventCreate, &e0, CU_EVENT_DEFAULT);
  BRAZE_CU(cuEventCreate, &e1, CU_EVENT_DEFAULT);
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> out;
  for (int i = 0; i < iters; ++i) {
    if (flush)
      BRAZE_CU(cuMemsetD8Async, flush->ptr(), static_cast<unsigned char>(i), flush->size(), stream);
    BRAZE_CU(cuEventRecord, e0, stream);
    f();
    BRAZE_CU(cuEventRecord, e1, stream);
    BRAZE_CU(cuEventSynchronize, e1);
    float ms = 0;
    BRAZE_CU(cuEventElapsedTime, &ms, e0, e1);
    out.push_back(ms * 1e3);
  }
  driver().cuEventDestroy(e0);
  driver().cuEventDestroy(e1);
  return out;
}

}  // namespace

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.median = v[v.size() / 2];
  s.p90 = v[std::min(v.size() - 1, v.size() * 9 / 10)];
  return s;
}

Compiled compile_copy_kernel(const Arch& arch) {
  return nvrtc_compile(kCopyKernel, "braze_copy", arch, false);
}

CopyBandwidth measure_copy_bandwidth(size_t bytes, int iters, const Compiled* kernel) {
  make_current();
  const Compiled c = kernel ? *kernel : compile_copy_kernel(device_info().arch());
  CUmodule mod;
  CUfunction fn;
  BRAZE_CU(cuModuleLoadData, &mod, c.cubin.data());
  BRAZE_CU(cuModuleGetFunction, &fn, mod, "braze_copy");
  DeviceBuffer src(bytes), dst(bytes);
  BRAZE_CU(cuMemsetD8, src.ptr(), 0x3C, bytes);
  BRAZE_CU(cuMemsetD8, dst.ptr(), 0, bytes);
  long long n = static_cast<long long>(bytes / 16);
  CUdeviceptr ps = src.ptr(), pd = dst.ptr();
  void* args[] = {&ps, &pd, &n};
  unsigned blocks =
      static_cast<unsigned>(std::min<long long>((n + 255) / 256, device_info().sms * 8LL));
  std::vector<double> us = time_us(nullptr, 3, iters, [&] {
    BRAZE_CU(cuLaunchKernel, fn, blocks, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr);
  });
  std::vector<unsigned char> check(4096);
  BRAZE_CU(cuMemcpyDtoH, check.data(), dst.ptr() + bytes - check.size(), check.size());
  driver().cuModuleUnload(mod);
  CopyBandwidth r;
  r.median_ms = stats_of(us).median / 1e3;
  r.gbs = 2.0 * static_cast<double>(bytes) / (r.median_ms * 1e-3) / 1e9;
  r.correct = std::all_of(check.begin(), check.end(), [](unsigned char b) { return b == 0x3C; });
  return r;
}

PeakRates peak_rates(const Arch& a) {
  int sm = a.major * 10 + a.minor;
  if (sm >= 90) return {67.0, 989.0, 494.7};  // H100 / H200 SXM
  if (sm >= 89) return {82.6, 330.0, 90.5};   // L40S class
  if (sm >= 80) return {19.5, 312.0, 156.0};  // A100
  if (sm >= 75) return {8.1, 65.0, 0.0};      // T4
  return {15.7, 125.0, 0.0};                  // V100
}

namespace {

// The elements of v the step's kernel reads at least: all of them, or fewer where its readers
// in the kernel are element-wise or index maps (the registry's kinds up to Injective), each of
// which reads at most one element of an input per output element — a Gather of an embedding
// table reads the rows it gathers, a Slice its slice.
int64_t elements_read(const graph::Graph& g, const Step& s, graph::ValueId v) {
  const int64_t all = checked_numel(g.value(v).shape);
  int64_t most = 0;
  for (graph::NodeId id : s.group.nodes) {
    const graph::Node& n = g.node(id);
    if (std::find(n.inputs.begin(), n.inputs.end(), v) == n.inputs.end()) continue;
    if (n.op->kind > graph::FusionKind::Injective) return all;
    for (graph::ValueId out : n.outputs)
      if (out != graph::kNoValue) most += checked_numel(g.value(out).shape);
  }
  return most > 0 ? std::min(all, most) : all;
}

}  // namespace

uint64_t step_bytes(const graph::Graph& g, const Step& s) {
  if (!s.kernel) return 0;
  std::set<graph::ValueId> seen;
  uint64_t b = 0;
  for (const codegen::Param& p : s.kernel->params)
    if (seen.insert(p.value).second) {
      const graph::Value& v = g.value(p.value);
      const int64_t n = p.is_output ? checked_numel(v.shape) : elements_read(g, s, p.value);
      b += static_cast<uint64_t>(n) * dtype_size(v.dtype);
    }
  return b;
}

double step_flops(const graph::Graph& g, const Step& s) {
  double f = 0;
  for (graph::NodeId id : s.group.nodes) {
    const graph::Node& n = g.node(id);
    if (n.op->kind != graph::FusionKind::OutEWiseFusable) continue;
    const Shape& a = g.value(n.inputs[0]).shape;
    const Shape& y = g.value(n.outputs[0]).shape;
    bool ta = n.op_type() == "Gemm" && n.attr_int("transA") != 0;
    int64_t k = a.size() == 1 ? a[0] : (ta ? a[a.size() - 2] : a.back());
    f += 2.0 * static_cast<double>(checked_numel(y)) * static_cast<double>(k);
  }
  return f;
}

BenchResult benchmark(Session& session, const std::vector<Tensor>& inputs,
                      const BenchOptions& opts) {
  session.upload(inputs);
  BenchResult r;
  r.used_graph = opts.cuda_graph && session.graphable();
  CUstream st = session.stream();
  DeviceBuffer flush(std::max<size_t>(device_info().l2_bytes * 2, size_t{64} << 20));
  const DeviceBuffer* fl = opts.flush_l2 ? &flush : nullptr;
  r.latency_us = stats_of(time_us(
      st, opts.warmup, opts.iters, [&] { session.enqueue(r.used_graph); }, fl));
  const Engine& e = session.engine();
  for (size_t i = 0; i < e.steps().size(); ++i) {
    const Step& s = e.steps()[i];
    if (!s.kernel || s.kernel->empty_launch) continue;
    KernelTiming kt;
    kt.step = i;
    kt.us = stats_of(time_us(
        st, std::max(3, opts.warmup / 4), std::max(10, opts.iters / 4),
        [&] { session.enqueue_step(i); }, fl));
    kt.bytes = step_bytes(e.graph(), s);
    kt.flops = step_flops(e.graph(), s);
    r.kernels.push_back(kt);
  }
  session.check_flags();  // a run-time check that failed in any timed run
  return r;
}

void write_profile(Session& session, const std::string& path) {
  const Engine& e = session.engine();
  CUstream st = session.stream();
  std::vector<CUevent> ev;
  std::vector<size_t> which;
  for (size_t i = 0; i <= e.steps().size(); ++i) {
    CUevent x;
    BRAZE_CU(cuEventCreate, &x, CU_EVENT_DEFAULT);
    ev.push_back(x);
  }
  BRAZE_CU(cuEventRecord, ev[0], st);
  for (size_t i = 0; i < e.steps().size(); ++i) {
    if (e.steps()[i].kernel) session.enqueue_step(i);
    BRAZE_CU(cuEventRecord, ev[i + 1], st);
  }
  BRAZE_CU(cuEventSynchronize, ev.back());
  nlohmann::json trace = nlohmann::json::array();
  double t = 0;
  for (size_t i = 0; i < e.steps().size(); ++i) {
    float ms = 0;
    BRAZE_CU(cuEventElapsedTime, &ms, ev[i], ev[i + 1]);
    const Step& s = e.steps()[i];
    std::vector<std::string> nodes;
    for (graph::NodeId id : s.group.nodes) nodes.push_back(e.graph().node(id).name);
    double dur = ms * 1e3;
    uint64_t bytes = step_bytes(e.graph(), s);
    trace.push_back(
        {{"name", s.kernel ? s.kernel->name : "(CPU reference)"},
         {"cat", fusion::group_kind_name(s.group.kind)},
         {"ph", "X"},
         {"ts", t},
         {"dur", dur},
         {"pid", 0},
         {"tid", 0},
         {"args",
          {{"nodes", nodes}, {"bytes", bytes}, {"GB/s", dur > 0 ? bytes / dur / 1e3 : 0.0}}}});
    t += dur;
  }
  for (CUevent x : ev) driver().cuEventDestroy(x);
  frontend::write_file(path,
                       {nlohmann::json{{"traceEvents", trace}, {"displayTimeUnit", "ms"}}.dump(
                            1, ' ', false, nlohmann::json::error_handler_t::replace) +
                        "\n"});
}

}  // namespace braze::gpu
