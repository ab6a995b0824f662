#include "runtime/gpu/engine.h"

#include <braze/error.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "graph/parallel.h"
#include "runtime/gpu/autotune.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device_summary.h"
#include "runtime/gpu/memory_plan.h"

namespace braze::gpu {

using graph::kNoValue;
using graph::ValueId;

EngineOptions default_engine_options(const std::string& arch) {
  EngineOptions o;
  // Device 0's arch and SM count without a context, remembered per machine (device_summary.h).
  const std::optional<DeviceSummary> dev = device_summary(o.cache_dir);
  if (!arch.empty()) {
    o.arch = Arch::parse(arch);
  } else if (dev) {
    o.arch = dev->arch;
  }
  if (dev) o.target.num_sms = dev->sms;
  o.target.sm = o.arch.major * 10 + o.arch.minor;
  o.target.sm90a = o.arch.accelerated && o.target.sm == 90;
  return o;
}

namespace {

// A kernel's source without the comment naming the ONNX nodes it covers: what NVRTC's
// output depends on, so that the same kernel of another layer compiles (and caches) alike.
std::string compile_text(const std::string& source) {
  const std::string marker = "// ---- generated ----\n";
  const size_t m = source.find(marker);
  if (m == std::string::npos) return source;
  const size_t end = source.find('\n', m + marker.size());
  return end == std::string::npos ? source
                                  : source.substr(0, m + marker.size()) + source.substr(end + 1);
}

}  // namespace

void Engine::compile_steps(std::vector<Step>& steps, const Arch& arch, const EngineOptions& opts,
                           BuildReport* report) {
  auto t0 = std::chrono::steady_clock::now();
  KernelCache cache = opts.use_cache ? KernelCache(opts.cache_dir) : KernelCache::disabled();
  std::string version = nvrtc_version();
  std::string options;
  for (const std::string& o : nvrtc_options(arch)) options += o + " ";
  // Identical kernels (a model's repeated layers) are compiled once: one step per distinct
  // source compiles, the others take its CUBIN.
  std::vector<size_t> todo;
  std::vector<std::string> text(steps.size());
  std::map<std::string_view, size_t> first_of;
  std::vector<std::pair<size_t, size_t>> copies;  // (step, the step it shares a source with)
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!steps[i].kernel) continue;
    text[i] = compile_text(steps[i].kernel->source);
    auto [it, fresh] = first_of.emplace(text[i], i);
    if (fresh)
      todo.push_back(i);
    else
      copies.push_back({i, it->second});
  }
  std::atomic<size_t> compiled{0}, hits{0};
  graph::parallel_for(
      todo.size(),
      [&](size_t k) {
        Step& s = steps[todo[k]];
        uint64_t key = KernelCache::key(text[todo[k]], arch.name(), version, options);
        if (!opts.want_ptx) {
          if (auto hit = cache.load(key)) {
            s.cubin = std::move(*hit);
            ++hits;
            return;
          }
        }
        Compiled c = nvrtc_compile(s.kernel->source, s.kernel->name, arch, opts.want_ptx, {},
                                   opts.compile_limit_seconds);
        s.cubin = std::move(c.cubin);
        s.ptx = std::move(c.ptx);
        cache.store(key, s.cubin);
        ++compiled;
      },
      opts.threads);
  for (const auto& [to, from] : copies) {
    steps[to].cubin = steps[from].cubin;
    steps[to].ptx = steps[from].ptx;
  }
  if (report) {
    report->distinct += todo.size();
    report->compiled += compiled;
    report->cache_hits += hits;
    report->compile_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

std::vector<Step> generate_steps(const graph::Graph& graph, fusion::Plan plan,
                                 const codegen::Target& target) {
  std::vector<Step> steps;
  for (codegen::SettledGroup& sg : codegen::settle_plan(graph, std::move(plan), target)) {
    Step s;
    s.kernel = std::move(sg.code.kernel);
    s.fallback_reason = std::move(sg.code.fallback_reason);
    s.split_note = std::move(sg.split_note);
    s.group = std::move(sg.group);
    steps.push_back(std::move(s));
  }
  return steps;
}

void configure_function(CUfunction fn, const codegen::Kernel& k) {
  // Clustered kernels (split-K: codegen writes __cluster_dims__) let the hardware place a
  // cluster's blocks wherever an SM has room. H100, 2026-12-07 (bench/RESULTS.md): the SIMT
  // 128 x 3072 x 768 + GELU in 96 clusters of four 128-thread blocks 27.0 us against 33.9 with
  // the default policy, which left a third of the SMs' cycles idle; the spread policy 33.9;
  // the other split-K products the same under all three. A preference only: a driver that
  // does not know it is not an error.
  constexpr std::string_view kClusterDims = "__cluster_dims__(";
  if (const size_t at = k.source.find(kClusterDims); at != std::string::npos) {
    driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
                                CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING);
    // Clusters of more than 8 blocks (SIMT split-K candidates) are non-portable: allowed
    // where the device takes them (sm_90: 16), else their launch fails and --tune skips them.
    if (std::atoi(k.source.c_str() + at + kClusterDims.size()) > 8)
      driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  }
  if (k.shared_bytes == 0) return;
  if (k.shared_bytes > 48 * 1024)
    BRAZE_CU(cuFuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
             static_cast<int>(k.shared_bytes));
  // All of the SM's unified L1 / shared memory as shared memory, so several blocks fit.
  BRAZE_CU(cuFuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
}

void use_candidate(const graph::Graph& graph, std::vector<Step>& steps,
                   const codegen::Target& target, int candidate) {
  if (candidate < 0) return;
  for (Step& s : steps) {
    std::vector<codegen::Tunables> c = codegen::candidates(graph, s.group, target);
    if (!s.kernel || c.empty()) continue;
    const codegen::Tunables& t = c[std::min<size_t>(static_cast<size_t>(candidate), c.size() - 1)];
    codegen::GroupCode gc = codegen::generate(graph, s.group, target, &t);
    if (gc.kernel) s.kernel = std::move(gc.kernel);
  }
}

void tune_steps(const graph::Graph& graph, std::vector<Step>& steps, const EngineOptions& opts,
                BuildReport* report) {
  TuningCache cache(opts.tuning_cache.empty() ? TuningCache::default_path() : opts.tuning_cache);
  TuneReport tr;
  auto t0 = std::chrono::steady_clock::now();
  autotune(graph, steps, opts, cache, &tr);
  if (!report) return;
  report->tune_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  report->tuned = tr.timed;
  report->tuned_cached = tr.cached;
  report->tuning = tr.lines;
}

std::shared_ptr<Engine> Engine::build(graph::Graph graph, fusion::Plan plan,
                                      const EngineOptions& opts, BuildReport* report) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Step> steps = generate_steps(graph, std::move(plan), opts.target);
  if (report)
    report->codegen_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  use_candidate(graph, steps, opts.target, opts.candidate);
  if (opts.tune) tune_steps(graph, steps, opts, report);
  if (opts.compile) compile_steps(steps, opts.arch, opts, report);
  if (report) count_steps(steps, *report);
  return assemble(std::move(graph), std::move(steps), opts.arch);
}

void count_steps(const std::vector<Step>& steps, BuildReport& report) {
  for (const Step& s : steps) (s.kernel ? report.kernels : report.fallbacks)++;
}

std::shared_ptr<Engine> Engine::assemble(graph::Graph graph, std::vector<Step> steps,
                                         const Arch& arch) {
  std::shared_ptr<Engine> e(new Engine());
  e->graph_ = std::move(graph);
  e->steps_ = std::move(steps);
  e->arch_ = arch;
  e->place_values();
  return e;
}

void Engine::place_values() {
  const graph::Graph& g = graph_;
  int n_steps = static_cast<int>(steps_.size());
  slots_.assign(g.num_values(), Slot{});
  std::vector<int> first(g.num_values(), -1), last(g.num_values(), -1);
  std::vector<bool> used_by_kernel(g.num_values(), false);
  auto touch = [&](ValueId v, int step) {
    if (first[v] < 0 || step < first[v]) first[v] = step;
    last[v] = std::max(last[v], step);
  };
  // Graph inputs and outputs hold their slots for the whole run: a Session (or a CUDA graph
  // replay) runs again on the inputs uploaded once, and reads the outputs after the last step.
  for (ValueId v : g.inputs()) touch(v, 0);
  // A kernel's values inside its group stay in registers and shared memory (an attention's
  // scores, a fused chain's intermediates): only what crosses the group's boundary, and what
  // the kernel takes as parameters, needs device memory. The CPU fallback keeps every value
  // of its nodes.
  for (int s = 0; s < n_steps; ++s) {
    const fusion::Group& grp = steps_[s].group;
    if (steps_[s].kernel) {
      for (ValueId v : grp.inputs) touch(v, s);
      for (ValueId v : grp.outputs) touch(v, s);
      for (const codegen::Param& p : steps_[s].kernel->params) {
        touch(p.value, s);
        used_by_kernel[p.value] = true;
      }
      continue;
    }
    for (graph::NodeId id : grp.nodes) {
      const graph::Node& n = g.node(id);
      for (ValueId v : n.inputs)
        if (v != kNoValue) touch(v, s);
      for (ValueId v : n.outputs)
        if (v != kNoValue) touch(v, s);
    }
  }
  for (ValueId v : g.inputs()) touch(v, n_steps);
  for (const auto& o : g.outputs()) {
    touch(o.value, 0);
    touch(o.value, n_steps);
  }

  std::vector<LiveRange> ranges;
  for (size_t v = 0; v < g.num_values(); ++v) {
    const graph::Value& val = g.value(static_cast<ValueId>(v));
    if (first[v] < 0 || !val.has_shape) continue;
    // No GPU holds a tensor of 1 TiB; beyond that the byte counts below could overflow
    // (3e9 x 3e9 float32 wrapped to 16 million TiB), and a wrapped count would make the
    // kernels write past their buffers.
    constexpr uint64_t kMaxDeviceTensorBytes = uint64_t{1} << 40;
    const int64_t numel = checked_numel(val.shape, fmt::format("value '{}'", val.name));
    if (static_cast<uint64_t>(numel) > kMaxDeviceTensorBytes / dtype_size(val.dtype))
      throw UserError(fmt::format("value '{}' ({}{}) is larger than a GPU holds (1 TiB)", val.name,
                                  dtype_name(val.dtype), shape_str(val.shape)));
    size_t bytes = static_cast<size_t>(numel) * dtype_size(val.dtype);
    if (val.constant) {
      if (!used_by_kernel[v]) continue;  // only CPU fallbacks read it: stays on the host
      slots_[v] = {Slot::Weights, weights_bytes_, bytes};
      weights_bytes_ += (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
      continue;
    }
    ranges.push_back({static_cast<int32_t>(v), bytes, first[v], last[v]});
  }
  MemoryPlan mp = plan_memory(ranges);
  for (size_t i = 0; i < ranges.size(); ++i)
    slots_[ranges[i].value] = {Slot::Arena, mp.offsets[i], ranges[i].bytes};
  arena_bytes_ = mp.arena_bytes;
  intermediate_bytes_ = mp.total_bytes;
}

Engine::~Engine() {
  for (CUmodule m : modules_)
    if (m) driver().cuModuleUnload(m);
}

void Engine::load() const {
  std::call_once(loaded_, [this] {
    make_current();
    const DeviceInfo& dev = device_info();
    if (dev.arch().major != arch_.major || dev.arch().minor != arch_.minor)
      throw InternalError(fmt::format("engine compiled for {} loaded on a {} device", arch_.name(),
                                      dev.arch().name()));
    // The weights and one session's arena, before any of it is allocated.
    check_device_memory(
        weights_bytes_ + arena_bytes_,
        fmt::format(
            "the engine ({:.2f} GiB of weights, {:.2f} GiB of intermediates, inputs and outputs)",
            weights_bytes_ / 1073741824.0, arena_bytes_ / 1073741824.0));
    modules_.assign(steps_.size(), nullptr);
    functions_.assign(steps_.size(), nullptr);
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& s = steps_[i];
      if (!s.kernel) continue;
      BRAZE_CU(cuModuleLoadData, &modules_[i], s.cubin.data());
      BRAZE_CU(cuModuleGetFunction, &functions_[i], modules_[i], s.kernel->name.c_str());
      configure_function(functions_[i], *s.kernel);
    }
    weights_ = DeviceBuffer(weights_bytes_, "the engine's weights");
    for (size_t v = 0; v < slots_.size(); ++v) {
      if (slots_[v].where != Slot::Weights) continue;
      const Tensor& t = *graph_.value(static_cast<ValueId>(v)).constant;
      if (t.nbytes())
        BRAZE_CU(cuMemcpyHtoD, weights_.ptr() + slots_[v].offset, t.raw(), t.nbytes());
    }
    // From pageable memory cuMemcpyHtoD returns once the bytes are staged, before their DMA
    // has landed, and sessions launch on streams that do not wait for the legacy stream's
    // work (CU_STREAM_NON_BLOCKING): wait for the weights here, or a first kernel may read
    // them half written (CUDA driver API, "API synchronization behavior"). The legacy stream
    // only: other threads' sessions on this context run on.
    BRAZE_CU(cuStreamSynchronize, CU_STREAM_LEGACY);
  });
}

}  // namespace braze::gpu
