#include "runtime/emulator.h"

#include <braze/error.h>
#include <dlfcn.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/cuda_hooks.h"
#include "graph/op_context.h"
#include "graph/parallel.h"
#include "runtime/emulator_sources.h"
#include "runtime/gpu/engine.h"
#include "runtime/gpu/kernel_cache.h"
#include "runtime/reference_executor.h"

namespace braze::runtime {

namespace fs = std::filesystem;
using graph::kNoValue;
using graph::ValueId;

codegen::Target emulator_target(const EmulatorOptions& opts) {
  codegen::Target t;
  t.emulated = true;
  t.tf32 = opts.tf32;
  return t;
}

namespace {

using LaunchFn = void (*)(void**, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned);

std::string emulation_source(const graph::Graph& g, const codegen::Kernel& k) {
  std::string src = std::string(emulator_half_header()) + std::string(emulator_shim()) + k.source;
  std::string args;
  for (size_t i = 0; i < k.params.size(); ++i) {
    const graph::Value& v = g.value(k.params[i].value);
    args += fmt::format("{}({}{}*)a[{}]", i ? ", " : "", k.params[i].is_output ? "" : "const ",
                        codegen::cuda_storage_type(v.dtype), i);
  }
  size_t n = k.params.size();
  if (k.has_error_flag) {
    args += fmt::format("{}(int*)a[{}]", n ? ", " : "", n);
    ++n;
  }
  // The progress parameters (codegen::Kernel): the word's address, the step number by value.
  args += fmt::format("{}(unsigned*)a[{}], *(unsigned*)a[{}]", n ? ", " : "", n, n + 1);
  src += fmt::format(
      "\nextern \"C\" void braze_emu_launch(void** a, unsigned gx, unsigned gy, unsigned gz, "
      "unsigned bx, "
      "unsigned by, unsigned bz) {{\n  braze_emu_run([&] {{ {}({}); }}, {{gx, gy, gz}}, {{bx, by, "
      "bz}});\n}}\n",
      k.name, args);
  return src;
}

// Compiles (or finds in the cache) the shared object for `src`; returns its launch entry.
LaunchFn load_kernel(const std::string& src, const fs::path& dir, const std::string& name) {
  static std::mutex mu;
  static std::map<uint64_t, LaunchFn> loaded;
  uint64_t h = XXH3_64bits(src.data(), src.size());
  {
    std::lock_guard<std::mutex> l(mu);
    if (auto it = loaded.find(h); it != loaded.end()) return it->second;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::path so = dir / fmt::format("{:016x}.so", h);
  if (!fs::exists(so)) {
    fs::path cpp = dir / fmt::format("{:016x}.{}.cpp", h, ::getpid());
    std::ofstream(cpp) << src;
    fs::path tmp = dir / fmt::format("{:016x}.{}.so.tmp", h, ::getpid());
    std::string cmd =
        fmt::format("{} -std=c++20 -O1 -w -shared -fPIC -pthread -x c++ '{}' -o '{}' 2>'{}.log'",
                    BRAZE_HOST_CXX, cpp.string(), tmp.string(), cpp.string());
    int rc = std::system(cmd.c_str());
    if (rc != 0) {
      std::ifstream log(cpp.string() + ".log");
      std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      throw InternalError(
          fmt::format("the CPU emulator could not compile kernel {} (source kept at {}):\n{}", name,
                      cpp.string(), text.substr(0, 4000)));
    }
    fs::rename(tmp, so, ec);
    fs::remove(cpp, ec);
    fs::remove(cpp.string() + ".log", ec);
  }
  void* h_so = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h_so) throw InternalError(fmt::format("dlopen {}: {}", so.string(), dlerror()));
  auto fn = reinterpret_cast<LaunchFn>(dlsym(h_so, "braze_emu_launch"));
  if (!fn) throw InternalError("emulated kernel lacks braze_emu_launch: " + name);
  std::lock_guard<std::mutex> l(mu);
  loaded[h] = fn;
  return fn;
}

}  // namespace

void run_emulated_kernel(const std::string& kernel_source, const std::string& name, float* out,
                         const std::array<unsigned, 3>& grid, const std::array<unsigned, 3>& block,
                         const fs::path& cache_dir) {
  const std::string src =
      std::string(emulator_half_header()) + std::string(emulator_shim()) + kernel_source +
      fmt::format(
          "\nextern \"C\" void braze_emu_launch(void** a, unsigned gx, unsigned gy, unsigned gz, "
          "unsigned bx, unsigned by, unsigned bz) {{\n  braze_emu_run([&] {{ {}((float*)a[0]); "
          "}}, {{gx, gy, gz}}, {{bx, by, bz}});\n}}\n",
          name);
  const LaunchFn fn =
      load_kernel(src, cache_dir.empty() ? gpu::default_cache_dir() / "emulator" : cache_dir, name);
  void* args[] = {out};
  fn(args, grid[0], grid[1], grid[2], block[0], block[1], block[2]);
}

std::vector<Tensor> run_emulated(const graph::Graph& g, const fusion::Plan& plan,
                                 const std::vector<Tensor>& inputs, const EmulatorOptions& opts) {
  const codegen::Target target = emulator_target(opts);
  std::vector<gpu::Step> steps = gpu::generate_steps(g, plan, target);
  gpu::use_candidate(g, steps, target, opts.candidate);
  return run_emulated_steps(g, steps, inputs, opts);
}

namespace {

// Every value known before the first kernel: the constants, the inputs and the zero-size ones.
std::vector<Tensor> initial_values(const graph::Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> vals(g.num_values());
  for (size_t i = 0; i < g.num_values(); ++i)
    if (g.value(static_cast<ValueId>(i)).constant)
      vals[i] = *g.value(static_cast<ValueId>(i)).constant;
  for (size_t i = 0; i < inputs.size(); ++i) vals[g.inputs()[i]] = inputs[i];
  // Zero-size values exist before any kernel runs: a kernel with nothing to write (a softmax
  // over rows of length 0) may not take them as parameters, and they are still values of
  // their shapes, outputs or inputs of later kernels, as on the GPU.
  for (size_t i = 0; i < g.num_values(); ++i) {
    const graph::Value& v = g.value(static_cast<ValueId>(i));
    if (!vals[i].defined() && v.has_shape && checked_numel(v.shape) == 0)
      vals[i] = Tensor(v.dtype, v.shape);
  }
  return vals;
}

// Each step's launch entry (null for CPU steps and empty launches), compiled on all cores.
std::vector<LaunchFn> compile_steps(const graph::Graph& g, const std::vector<gpu::Step>& steps,
                                    const fs::path& dir) {
  std::vector<LaunchFn> fns(steps.size(), nullptr);
  graph::parallel_for(
      steps.size(),
      [&](size_t i) {
        const gpu::Step& s = steps[i];
        if (s.kernel && !s.kernel->empty_launch)
          fns[i] = load_kernel(emulation_source(g, *s.kernel), dir, s.kernel->name);
      },
      0);
  return fns;
}

// Evaluates a step without a kernel node by node on the CPU reference.
void run_reference_step(const graph::Graph& g, const gpu::Step& s, std::vector<Tensor>& vals) {
  for (graph::NodeId id : s.group.nodes) {
    const graph::Node& n = g.node(id);
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue) ins[i] = &vals[n.inputs[i]];
    std::vector<Tensor> outs = graph::evaluate_node(n, ins);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] != kNoValue) vals[n.outputs[i]] = std::move(outs[i]);
  }
}

// The kernel's tensor arguments; its outputs are allocated (and poisoned if asked) first.
std::vector<void*> kernel_args(const graph::Graph& g, const codegen::Kernel& k,
                               std::vector<Tensor>& vals, const EmulatorOptions& opts) {
  std::vector<void*> args;
  for (const codegen::Param& p : k.params) {
    Tensor& t = vals[p.value];
    if (p.is_output) {
      const graph::Value& v = g.value(p.value);
      t = Tensor(v.dtype, v.shape);
      if (opts.poison && t.nbytes()) std::memset(t.raw(), 0xFF, t.nbytes());
    }
    BRAZE_CHECK(t.defined(), "emulator: kernel input %" + g.value(p.value).name + " not computed");
    args.push_back(t.raw());
  }
  return args;
}

// Runs step `si`'s kernel through `fn`, then checks its error flag and progress word.
void run_kernel_step(const graph::Graph& g, const codegen::Kernel& k, size_t si, LaunchFn fn,
                     std::vector<Tensor>& vals, const EmulatorOptions& opts) {
  std::vector<void*> args = kernel_args(g, k, vals, opts);
  int flag = 0;
  if (k.has_error_flag) args.push_back(&flag);
  unsigned progress = 0, step = static_cast<unsigned>(si + 1);
  args.push_back(&progress);
  args.push_back(&step);
  if (k.empty_launch) return;
  // Pointwise kernels stride over their work by blockDim, so one thread does it all;
  // reductions need their real block (threads share a row) but stride over rows, so one
  // block; GEMM and attention tiles need their real grid.
  if (k.kind == fusion::GroupKind::Gemm || k.kind == fusion::GroupKind::Attention)
    fn(args.data(), k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2]);
  else if (k.kind == fusion::GroupKind::Reduction)
    fn(args.data(), 1, 1, 1, k.block[0], k.block[1], k.block[2]);
  else
    fn(args.data(), 1, 1, 1, 1, 1, 1);
  if (flag > 0 && static_cast<size_t>(flag) <= k.error_messages.size())
    throw UserError(k.error_messages[flag - 1]);
  BRAZE_CHECK(progress == step,
              fmt::format("kernel {} noted step {}, not its own {}", k.name, progress, step));
}

}  // namespace

std::vector<Tensor> run_emulated_steps(const graph::Graph& g, const std::vector<gpu::Step>& steps,
                                       const std::vector<Tensor>& inputs,
                                       const EmulatorOptions& opts) {
  check_inputs(g, inputs);
  fs::path dir = opts.cache_dir.empty() ? gpu::default_cache_dir() / "emulator" : opts.cache_dir;
  std::vector<Tensor> vals = initial_values(g, inputs);
  // Compile every kernel first, on all cores (g++ takes about a second a kernel).
  const std::vector<LaunchFn> fns = compile_steps(g, steps, dir);
  for (size_t si = 0; si < steps.size(); ++si) {
    const gpu::Step& s = steps[si];
    if (!s.kernel) {
      if (opts.fallbacks) opts.fallbacks->push_back(s.fallback_reason);
      run_reference_step(g, s, vals);
      continue;
    }
    run_kernel_step(g, *s.kernel, si, fns[si], vals, opts);
  }
  std::vector<Tensor> out;
  for (const auto& o : g.outputs()) out.push_back(vals[o.value]);
  if (opts.values) *opts.values = std::move(vals);
  return out;
}

}  // namespace braze::runtime
