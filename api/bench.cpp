// braze::benchmark and braze::kernel_costs: runtime/gpu/bench's timings with each kernel's
// roofline (the copy bandwidth measured in the same run, the datasheet's peak rates).
#include <braze/braze.h>

#include <algorithm>

#include "api/engine_impl.h"
#include "api/pipeline.h"
#include "codegen/capabilities.h"
#include "graph/registry.h"
#include "runtime/gpu/bench.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"

namespace braze {

namespace {

// A kernel's peak arithmetic rate: tensor-core GEMMs and attention against the tensor-core
// peak of their operands' type (tf32 for float), the rest against SIMT float32.
double peak_rate(const graph::Graph& g, const gpu::Step& s, const gpu::PeakRates& peak) {
  if (s.kernel->kind == fusion::GroupKind::Attention)
    return peak.fp16_tensor;  // float16 / bfloat16 only
  if (s.kernel->kind != fusion::GroupKind::Gemm) return peak.fp32;
  const bool tc = s.kernel->tunables.count("tc") && s.kernel->tunables.at("tc") != 0;
  const DType out = g.value(s.group.outputs[0]).dtype;
  DType operand = out;
  for (graph::NodeId id : s.group.nodes)
    if (g.node(id).op->kind == graph::FusionKind::OutEWiseFusable)
      operand = g.value(g.node(id).inputs[0]).dtype;
  if (tc && operand == DType::Float32) return peak.tf32_tensor;
  if (tc || is_half(out)) return peak.fp16_tensor;
  return peak.fp32;
}

KernelBench kernel_bench(const graph::Graph& g, const gpu::Step& s, const gpu::KernelTiming& k,
                         double copy_gbs, const gpu::PeakRates& peak) {
  KernelBench b;
  b.step = k.step;
  b.name = s.kernel->name;
  b.kind = fusion::group_kind_name(s.group.kind);
  b.schedule = codegen::schedule_name(g, *s.kernel);
  for (graph::NodeId id : s.group.nodes) b.nodes.push_back(g.node(id).name);
  b.median_us = k.us.median;
  b.min_us = k.us.min;
  b.bytes = k.bytes;
  b.flops = k.flops;
  const double secs = k.us.median * 1e-6;
  b.gbs = static_cast<double>(k.bytes) / secs / 1e9;
  b.tflops = k.flops / secs / 1e12;
  const double floor_s = std::max(static_cast<double>(k.bytes) / (copy_gbs * 1e9),
                                  k.flops / (peak_rate(g, s, peak) * 1e12));
  b.roofline_pct = 100.0 * floor_s / secs;
  b.tunables = s.kernel->tunables;
  if (std::optional<codegen::GemmShape> gs = codegen::gemm_shape(g, s.group))
    b.gemm = KernelBench::Gemm{gs->batch, gs->m, gs->n, gs->k, gs->dtype};
  if (std::optional<codegen::AttentionShape> as = codegen::attention_shape(g, s.group))
    b.attention = KernelBench::Attention{as->batch, as->sq, as->sk, as->d, as->dtype, as->mask};
  return b;
}

}  // namespace

BenchReport benchmark(const Engine& engine, const std::vector<Tensor>& inputs,
                      const BenchOptions& o) {
  if (!gpu::gpu_available())
    throw UserError("benchmark: no GPU (" + gpu::gpu_unavailable_reason() + ")");
  std::shared_ptr<gpu::Engine> e = api::for_this_gpu(EngineAccess::of(engine).engine, nullptr);
  gpu::Session session(e);
  gpu::BenchOptions bo;
  bo.warmup = o.warmup;
  bo.iters = o.iters;
  bo.cuda_graph = o.cuda_graph;
  bo.flush_l2 = o.flush_l2;
  const gpu::BenchResult r = gpu::benchmark(session, inputs, bo);
  const gpu::CopyBandwidth copy = gpu::measure_copy_bandwidth();
  const gpu::PeakRates peak = gpu::peak_rates(e->arch());
  BenchReport out;
  out.device = gpu::device_info().name;
  out.arch = e->arch().name();
  out.sms = gpu::device_info().sms;
  out.copy_gbs = copy.gbs;
  out.cuda_graph = r.used_graph;
  out.min_us = r.latency_us.min;
  out.median_us = r.latency_us.median;
  out.p90_us = r.latency_us.p90;
  for (const gpu::KernelTiming& k : r.kernels)
    out.kernels.push_back(kernel_bench(e->graph(), e->steps()[k.step], k, copy.gbs, peak));
  if (!o.profile.empty()) gpu::write_profile(session, o.profile);
  return out;
}

std::vector<KernelCost> kernel_costs(const Engine& engine) {
  const gpu::Engine& e = *EngineAccess::of(engine).engine;
  std::vector<KernelCost> out;
  for (const gpu::Step& s : e.steps())
    out.push_back({s.kernel ? s.kernel->name : "(CPU reference)", gpu::step_bytes(e.graph(), s),
                   gpu::step_flops(e.graph(), s)});
  return out;
}

}  // namespace braze
