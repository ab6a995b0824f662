#include "runtime/gpu/autotune.h"

#include <braze/error.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "runtime/compare.h"
#include "runtime/gpu/bench.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/tensor_map.h"
#include "runtime/inputs.h"

namespace braze::gpu {

namespace {

std::string tunables_str(const codegen::Tunables& t) {
  std::string s;
  for (const auto& [k, v] : t) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
  return s;
}

// Device buffers for one kernel's parameters: inputs hold constants or fresh random values,
// outputs are re-poisoned before each checked run.
struct Buffers {
  std::vector<DeviceBuffer> bufs;
  std::vector<CUdeviceptr> ptrs;
  DeviceBuffer flag{sizeof(int)};
};

Buffers make_buffers(const graph::Graph& g, const codegen::Kernel& k) {
  Buffers b;
  uint64_t seed = 1;
  for (const codegen::Param& p : k.params) {
    const graph::Value& v = g.value(p.value);
    size_t bytes = static_cast<size_t>(checked_numel(v.shape)) * dtype_size(v.dtype);
    DeviceBuffer d(std::max<size_t>(bytes, 16));
    if (!p.is_output && bytes) {
      Tensor t = v.constant
                     ? *v.constant
                     : runtime::random_tensor(v.dtype, v.shape, seed++, runtime::RandomSpec{});
      BRAZE_CU(cuMemcpyHtoD, d.ptr(), t.raw(), bytes);
    }
    b.ptrs.push_back(d.ptr());
    b.bufs.push_back(std::move(d));
  }
  return b;
}

// `maps`: the kernel's tensor maps over b (encode_tensor_maps), encoded once per candidate
// rather than between the timing events.
void launch(CUfunction fn, const codegen::Kernel& k, Buffers& b, std::vector<CUtensorMap>& maps) {
  std::vector<CUdeviceptr> ptrs = b.ptrs;
  if (k.has_error_flag) ptrs.push_back(b.flag.ptr());
  CUdeviceptr progress = 0;  // no step to note (codegen::Kernel)
  unsigned step = 0;
  std::vector<void*> args;
  for (CUdeviceptr& p : ptrs) args.push_back(&p);
  for (CUtensorMap& m : maps) args.push_back(&m);
  args.push_back(&progress);
  args.push_back(&step);
  BRAZE_CU(cuLaunchKernel, fn, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
           k.shared_bytes, nullptr, args.data(), nullptr);
}

std::vector<Tensor> read_outputs(const graph::Graph& g, const codegen::Kernel& k,
                                 const Buffers& b) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (!k.params[i].is_output) continue;
    const graph::Value& v = g.value(k.params[i].value);
    Tensor t(v.dtype, v.shape);
    if (t.nbytes()) BRAZE_CU(cuMemcpyDtoH, t.raw(), b.ptrs[i], t.nbytes());
    out.push_back(std::move(t));
  }
  return out;
}

// Each candidate of a step's search space generated and compiled; `cands_out` receives
// each trial's candidate, which is what the cache keeps (its kernel's record may normalise
// it), so that a hit is found in the search space.
std::vector<Step> compile_trials(const graph::Graph& g, const Step& s,
                                 const std::vector<codegen::Tunables>& cands,
                                 const EngineOptions& opts,
                                 std::vector<codegen::Tunables>& cands_out) {
  std::vector<Step> trial;
  for (const codegen::Tunables& t : cands) {
    codegen::GroupCode gc = codegen::generate(g, s.group, opts.target, &t);
    if (!gc.kernel) continue;
    cands_out.push_back(t);
    Step c;
    c.group = s.group;
    c.kernel = std::move(gc.kernel);
    trial.push_back(std::move(c));
  }
  EngineOptions copts = opts;
  copts.want_ptx = false;
  Engine::compile_steps(trial, opts.arch, copts, nullptr);
  return trial;
}

// Whether a candidate's outputs match a reference's.
bool outputs_match(const std::vector<Tensor>& out, const std::vector<Tensor>& ref, bool tf32) {
  bool agrees = true;
  for (size_t i = 0; i < out.size() && agrees; ++i) {
    runtime::Comparison cmp =
        runtime::compare(out[i], ref[i], runtime::default_tolerance(ref[i].dtype()));
    // At tf32 an exact float32 candidate and a tf32 one differ by the operands' rounding:
    // they agree within 1e-3 relative L2 (as `braze diff` holds tf32).
    agrees = tf32 && ref[i].dtype() == DType::Float32
                 ? cmp.problem.empty() && cmp.nan_mismatches == 0 && cmp.rel_l2 <= 1e-3
                 : cmp.ok;
  }
  return agrees;
}

// One candidate's run: loaded, checked, timed.
struct Trial {
  bool ran = false, agrees0 = false, agrees1 = false, timing = false;
  double us = std::numeric_limits<double>::infinity();
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  std::vector<CUtensorMap> maps;
  std::vector<double> samples;
};

// The candidates' checked runs: each candidate's output is checked against the first
// candidate that ran (the heuristic default, unless it could not launch) and, when the
// second disagrees with the first, against the second as well: the side more of the others
// agree with is taken as right, so a wrong default cannot make every correct candidate look
// wrong.
struct Checks {
  std::vector<Trial> tried;
  bool split = false;  // the second candidate that ran disagreed with the first
  bool second_right = false;
  size_t with0 = 0, with1 = 0;  // candidates agreeing with the first, with the second
};

// Every candidate is loaded and run once on poisoned outputs, which are checked.
Checks run_checked(const graph::Graph& g, const std::vector<Step>& trial, Buffers& buf, bool tf32) {
  Checks c;
  c.tried.resize(trial.size());
  std::vector<Tensor> ref0, ref1;
  for (size_t ci = 0; ci < trial.size(); ++ci) {
    const codegen::Kernel& k = *trial[ci].kernel;
    Trial& t = c.tried[ci];
    try {
      BRAZE_CU(cuModuleLoadData, &t.mod, trial[ci].cubin.data());
      BRAZE_CU(cuModuleGetFunction, &t.fn, t.mod, k.name.c_str());
      configure_function(t.fn, k);
      t.maps = encode_tensor_maps(k, buf.ptrs);
      for (size_t i = 0; i < k.params.size(); ++i)
        if (k.params[i].is_output) BRAZE_CU(cuMemsetD8, buf.ptrs[i], 0xFF, buf.bufs[i].size());
      launch(t.fn, k, buf, t.maps);
      BRAZE_CU(cuCtxSynchronize);
      std::vector<Tensor> out = read_outputs(g, k, buf);
      t.ran = true;
      if (ref0.empty()) {
        ref0 = std::move(out);
        t.agrees0 = true;
      } else if (ref1.empty()) {
        t.agrees0 = outputs_match(out, ref0, tf32);
        t.agrees1 = true;
        c.split = !t.agrees0;
        ref1 = std::move(out);
      } else {
        t.agrees0 = outputs_match(out, ref0, tf32);
        t.agrees1 = c.split && outputs_match(out, ref1, tf32);
      }
      t.timing = t.agrees0 || t.agrees1;
    } catch (const DeviceError&) {
      // a candidate that cannot launch scores as infinite; the context survives launch
      // configuration errors, which are what a bad candidate gives
    }
  }
  // Which reference the others side with.
  for (const Trial& t : c.tried) c.with0 += t.agrees0, c.with1 += t.agrees1;
  c.second_right = c.split && c.with1 > c.with0;
  return c;
}

// Timing in rounds: each round runs every candidate once (L2 flushed before each run),
// starting one candidate later than the round before; the first 3 rounds warm up, the
// median of the other 15 is a candidate's time. Taking turns, the candidates share the GPU's
// clock and power states alike; timed one after another, a long kernel's first candidates
// ran on a cooler GPU than the later ones (8192^3 + GELU: a first run of 1516 us, the same
// kernel's median over 400 back-to-back runs, at the power cap, 1746).
void time_rounds(const std::vector<Step>& trial, std::vector<Trial>& tried, Buffers& buf,
                 const DeviceBuffer& flush) {
  CUevent e0 = nullptr, e1 = nullptr;
  BRAZE_CU(cuEventCreate, &e0, CU_EVENT_DEFAULT);
  BRAZE_CU(cuEventCreate, &e1, CU_EVENT_DEFAULT);
  for (int round = 0; round < 3 + 15; ++round) {
    for (size_t j = 0; j < trial.size(); ++j) {
      const size_t ci = (j + static_cast<size_t>(round)) % trial.size();
      Trial& t = tried[ci];
      if (!t.timing) continue;
      const codegen::Kernel& k = *trial[ci].kernel;
      try {
        BRAZE_CU(cuMemsetD8Async, flush.ptr(), static_cast<unsigned char>(round), flush.size(),
                 nullptr);
        BRAZE_CU(cuEventRecord, e0, nullptr);
        launch(t.fn, k, buf, t.maps);
        BRAZE_CU(cuEventRecord, e1, nullptr);
        BRAZE_CU(cuEventSynchronize, e1);
        float ms = 0;
        BRAZE_CU(cuEventElapsedTime, &ms, e0, e1);
        if (round >= 3) t.samples.push_back(ms * 1e3);
      } catch (const DeviceError&) {
        t.timing = false;
      }
    }
  }
  driver().cuEventDestroy(e0);
  driver().cuEventDestroy(e1);
  for (Trial& t : tried) {
    if (t.timing && !t.samples.empty()) t.us = stats_of(t.samples).median;
    if (t.mod) driver().cuModuleUnload(t.mod);
  }
}

// The fastest candidate that agreed with the reference taken as right (infinite `us` when
// none), the default's time, and each candidate's line.
struct Choice {
  size_t best = 0;
  double us = std::numeric_limits<double>::infinity(), first = us;
  std::vector<std::string> each;  // every candidate's tunables and time
};

Choice choose(const std::vector<Step>& trial, const Checks& c) {
  Choice ch;
  for (size_t ci = 0; ci < trial.size(); ++ci) {
    const Trial& t = c.tried[ci];
    const bool right = c.second_right ? t.agrees1 : t.agrees0;
    const double score = right ? t.us : std::numeric_limits<double>::infinity();
    ch.each.push_back(fmt::format("    {}: {}", tunables_str(trial[ci].kernel->tunables),
                                  !t.ran                 ? std::string("failed")
                                  : !right               ? std::string("disagreed")
                                  : std::isfinite(score) ? fmt::format("{:.2f} us", score)
                                                         : std::string("failed")));
    if (ci == 0) ch.first = score;
    if (score < ch.us) ch.us = score, ch.best = ci;
  }
  return ch;
}

// What the autotuner shares across steps: the device's L2 flush buffer, the cache key's
// suffix (the device, NVRTC, tf32), the cache and the report.
struct TuneContext {
  const graph::Graph& g;
  const EngineOptions& opts;
  TuningCache& cache;
  DeviceBuffer& flush;
  std::string suffix;
  TuneReport& r;
};

// One step: its tunables from the cache, else its candidates checked and timed.
void tune_step(TuneContext& cx, Step& s) {
  std::vector<codegen::Tunables> cands = codegen::candidates(cx.g, s.group, cx.opts.target);
  if (cands.size() < 2) return;
  ++cx.r.kernels;
  std::string key = s.kernel->name + cx.suffix;
  if (std::optional<codegen::Tunables> hit = cx.cache.find(key, cands)) {
    codegen::GroupCode gc = codegen::generate(cx.g, s.group, cx.opts.target, &*hit);
    if (gc.kernel) s.kernel = std::move(gc.kernel);
    ++cx.r.cached;
    return;
  }
  std::vector<codegen::Tunables> trial_cands;
  std::vector<Step> trial = compile_trials(cx.g, s, cands, cx.opts, trial_cands);
  if (trial.empty()) return;  // no candidate generated: the heuristic kernel stays
  Buffers buf = make_buffers(cx.g, *trial[0].kernel);
  Checks checks = run_checked(cx.g, trial, buf, cx.opts.target.tf32);
  time_rounds(trial, checks.tried, buf, cx.flush);
  const Choice ch = choose(trial, checks);
  if (checks.second_right)
    cx.r.lines.push_back(
        fmt::format("{}: the default candidate's output disagreed with the second's, "
                    "which {} other candidates matched (the default's: {}); the "
                    "second's taken as right",
                    s.kernel->name, checks.with1 - 1, checks.with0 - 1));
  if (!std::isfinite(ch.us)) return;  // keep the heuristic kernel
  ++cx.r.timed;
  cx.r.lines.push_back(fmt::format("{}: {} ({:.2f} us; default {})", trial[ch.best].kernel->name,
                                   tunables_str(trial[ch.best].kernel->tunables), ch.us,
                                   std::isfinite(ch.first) ? fmt::format("{:.2f} us", ch.first)
                                                           : std::string("failed or disagreed")));
  cx.r.lines.insert(cx.r.lines.end(), ch.each.begin(), ch.each.end());
  cx.cache.put(key, trial_cands[ch.best], ch.us, trial.size());
  s.kernel = std::move(trial[ch.best].kernel);
  s.cubin.clear();
}

}  // namespace

void autotune(const graph::Graph& g, std::vector<Step>& steps, const EngineOptions& opts,
              TuningCache& cache, TuneReport* report) {
  auto t0 = std::chrono::steady_clock::now();
  make_current();
  const DeviceInfo& dev = device_info();
  DeviceBuffer flush(std::max<size_t>(dev.l2_bytes * 2, size_t{64} << 20));
  TuneReport r;
  // tf32 asks for other GEMM kernels than float32's, from another search space.
  TuneContext cx{
      g,
      opts,
      cache,
      flush,
      fmt::format("|{}|nvrtc {}{}", dev.name, nvrtc_version(), opts.target.tf32 ? "|tf32" : ""),
      r};
  for (Step& s : steps)
    if (s.kernel) tune_step(cx, s);
  cache.save();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (report) *report = std::move(r);
}

}  // namespace braze::gpu
