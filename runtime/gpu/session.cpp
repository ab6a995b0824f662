#include <braze/error.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "graph/op_context.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/gpu/memory_plan.h"
#include "runtime/gpu/tensor_map.h"
#include "runtime/reference_executor.h"

namespace braze::gpu {

using graph::kNoValue;
using graph::ValueId;

Session::Session(std::shared_ptr<const Engine> engine) : engine_(std::move(engine)) {
  engine_->load();
  make_current();
  arena_ = DeviceBuffer(engine_->arena_bytes(),
                        "a session's intermediates, inputs and outputs (its arena)");
  size_t flags = 0;
  flag_index_.assign(engine_->steps().size(), 0);
  for (size_t i = 0; i < engine_->steps().size(); ++i) {
    const Step& s = engine_->steps()[i];
    if (s.kernel && s.kernel->has_error_flag) flag_index_[i] = flags++;
  }
  flags_ = DeviceBuffer(std::max<size_t>(flags, 1) * sizeof(int));
  tensor_maps_.resize(engine_->steps().size());
  tensor_map_ptrs_.resize(engine_->steps().size());
  bound_.assign(engine_->graph().num_values(), 0);
  graph_bound_ = bound_;
  BRAZE_CU(cuMemsetD8, flags_.ptr(), 0, flags_.size());
  progress_ = MappedHostBuffer(sizeof(unsigned));
  const char* notes = std::getenv("BRAZE_STEP_NOTES");
  if (!notes || std::string(notes) != "0") progress_arg_ = progress_.device();
  BRAZE_CU(cuStreamCreate, &stream_, CU_STREAM_NON_BLOCKING);
}

Session::~Session() {
  if (graph_exec_) driver().cuGraphExecDestroy(graph_exec_);
  if (stream_) driver().cuStreamDestroy(stream_);
}

namespace {

CUdeviceptr address(const Engine& e, const DeviceBuffer& arena, ValueId v) {
  const Slot& s = e.slots().at(v);
  switch (s.where) {
    case Slot::Arena:
      return arena.ptr() + s.offset;
    case Slot::Weights:
      return e.weights() + s.offset;
    case Slot::None:
      break;
  }
  throw InternalError("value %" + e.graph().value(v).name + " has no device slot");
}

}  // namespace

CUdeviceptr Session::value_address(ValueId v) const {
  CUdeviceptr b = bound_[static_cast<size_t>(v)];
  return b ? b : address(*engine_, arena_, v);
}

Tensor Session::fetch(ValueId v) const try {
  const graph::Value& val = engine_->graph().value(v);
  if (val.constant) return *val.constant;
  if (auto it = host_values_.find(v); it != host_values_.end()) return it->second;
  if (engine_->slots().at(v).where == Slot::None || !val.has_shape) return Tensor();
  Tensor t(val.dtype, val.shape);
  make_current();
  BRAZE_CU(cuStreamSynchronize, stream_);
  if (t.nbytes()) BRAZE_CU(cuMemcpyDtoH, t.raw(), address(*engine_, arena_, v), t.nbytes());
  return t;
} catch (const CudaError& e) {
  rethrow_naming_fault(e);
}

void Session::run_fallback(const Step& step) {
  const graph::Graph& g = engine_->graph();
  BRAZE_CU(cuStreamSynchronize, stream_);
  std::map<ValueId, Tensor> host;
  for (ValueId v : step.group.inputs) host[v] = fetch(v);
  for (graph::NodeId id : step.group.nodes) {
    const graph::Node& n = g.node(id);
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue) ins[i] = &host.at(n.inputs[i]);
    std::vector<Tensor> outs = graph::evaluate_node(n, ins);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ValueId v = n.outputs[i];
      if (v == kNoValue) continue;
      const Tensor& t = outs[i];
      if (engine_->slots().at(v).where == Slot::Arena) {
        // On the session's stream, so that the next kernels wait for it (a plain cuMemcpyHtoD
        // runs on the legacy stream, which a non-blocking stream does not wait for, and
        // returns before its DMA from pageable memory has landed).
        if (t.nbytes())
          BRAZE_CU(cuMemcpyHtoDAsync, address(*engine_, arena_, v), t.raw(), t.nbytes(), stream_);
      } else {
        host_values_[v] = t;
      }
      host[v] = std::move(outs[i]);
    }
  }
  BRAZE_CU(cuStreamSynchronize, stream_);  // the copies read `host`, freed on return
}

void Session::upload(const std::vector<Tensor>& inputs) try {
  const graph::Graph& g = engine_->graph();
  runtime::check_inputs(g, inputs);
  make_current();
  std::fill(bound_.begin(), bound_.end(), 0);  // the host path: every value in its own slot
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueId v = g.inputs()[i];
    if (engine_->slots().at(v).where == Slot::Arena && inputs[i].nbytes())
      BRAZE_CU(cuMemcpyHtoDAsync, address(*engine_, arena_, v), inputs[i].raw(), inputs[i].nbytes(),
               stream_);
  }
  // The inputs' host memory is pageable: finish the copies before the caller can free it.
  BRAZE_CU(cuStreamSynchronize, stream_);
} catch (const CudaError& e) {
  rethrow_naming_fault(e);
}

void Session::enqueue_step(size_t i) try { enqueue_step(i, stream_); } catch (const CudaError& e) {
  rethrow_naming_fault(e);
}

void Session::enqueue_step(size_t i, CUstream stream) {
  const Step& s = engine_->steps()[i];
  const codegen::Kernel& k = *s.kernel;
  if (k.empty_launch) return;
  std::vector<CUdeviceptr> ptrs;
  for (const codegen::Param& p : k.params) ptrs.push_back(value_address(p.value));
  if (tensor_maps_[i].size() != k.tensor_maps.size() || tensor_map_ptrs_[i] != ptrs) {
    tensor_maps_[i] = encode_tensor_maps(k, ptrs);
    tensor_map_ptrs_[i] = ptrs;
  }
  if (k.has_error_flag) ptrs.push_back(flags_.ptr() + flag_index_[i] * sizeof(int));
  CUdeviceptr progress = progress_arg_;
  unsigned step = static_cast<unsigned>(i + 1);
  std::vector<void*> args;
  for (CUdeviceptr& p : ptrs) args.push_back(&p);
  for (CUtensorMap& m : tensor_maps_[i]) args.push_back(&m);
  args.push_back(&progress);
  args.push_back(&step);
  BRAZE_CU(cuLaunchKernel, engine_->function(i), k.grid[0], k.grid[1], k.grid[2], k.block[0],
           k.block[1], k.block[2], k.shared_bytes, stream, args.data(), nullptr);
}

bool Session::all_kernels() const {
  const auto& steps = engine_->steps();
  return std::all_of(steps.begin(), steps.end(),
                     [](const Step& s) { return s.kernel.has_value(); });
}

bool Session::graphable() const {
  if (!all_kernels()) return false;
  const auto& steps = engine_->steps();
  return std::count_if(steps.begin(), steps.end(),
                       [](const Step& s) { return !s.kernel->empty_launch; }) > 1;
}

void Session::enqueue(bool graph) try {
  make_current();
  if (graph && graphable()) {
    launch_graph(stream_);
    return;
  }
  for (size_t i = 0; i < engine_->steps().size(); ++i) {
    if (engine_->steps()[i].kernel)
      enqueue_step(i);
    else
      run_fallback(engine_->steps()[i]);
  }
} catch (const CudaError& e) {
  rethrow_naming_fault(e);
}

void Session::launch_graph(CUstream stream) {
  if (!graph_exec_ || graph_bound_ != bound_) {  // capture once per binding; replays reuse it
    CUgraph cg;
    BRAZE_CU(cuStreamBeginCapture, stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    for (size_t i = 0; i < engine_->steps().size(); ++i) enqueue_step(i);
    BRAZE_CU(cuStreamEndCapture, stream_, &cg);
    // The same launches with other addresses: an update of the executable graph is cheaper
    // than a new one; where the driver refuses it, instantiate again.
    CUgraphExecUpdateResultInfo info;
    if (graph_exec_ && driver().cuGraphExecUpdate(graph_exec_, cg, &info) != CUDA_SUCCESS) {
      driver().cuGraphExecDestroy(graph_exec_);
      graph_exec_ = nullptr;
    }
    CUresult r = graph_exec_ ? CUDA_SUCCESS : driver().cuGraphInstantiate(&graph_exec_, cg, 0);
    driver().cuGraphDestroy(cg);
    if (r != CUDA_SUCCESS) {
      graph_exec_ = nullptr;
      throw_cuda_error(r, "cuGraphInstantiate", __FILE__, __LINE__);
    }
    graph_bound_ = bound_;
  }
  BRAZE_CU(cuGraphLaunch, graph_exec_, stream);
}

void Session::check_flags() { check_flags(stream_); }

void Session::check_flags(CUstream stream) try {
  BRAZE_CU(cuStreamSynchronize, stream);
  const auto& steps = engine_->steps();
  std::vector<int> flags(flags_.size() / sizeof(int));
  BRAZE_CU(cuMemcpyDtoH, flags.data(), flags_.ptr(), flags_.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (!s.kernel || !s.kernel->has_error_flag) continue;
    int code = flags[flag_index_[i]];
    if (code > 0 && static_cast<size_t>(code) <= s.kernel->error_messages.size()) {
      BRAZE_CU(cuMemsetD8, flags_.ptr(), 0, flags_.size());  // reported once
      throw UserError(s.kernel->error_messages[code - 1]);
    }
  }
} catch (const CudaError& e) {
  rethrow_naming_fault(e);
}

namespace {

// "step 3 of 12 (kernel braze_…, ONNX nodes 'a' (Add), 'b' (Relu))"
std::string describe_step(const Engine& engine, size_t i) {
  const Step& s = engine.steps()[i];
  std::string nodes;
  for (size_t k = 0; k < s.group.nodes.size() && k < 3; ++k) {
    const graph::Node& n = engine.graph().node(s.group.nodes[k]);
    nodes += fmt::format("{}'{}' ({})", k ? ", " : "", n.name, n.op_type());
  }
  if (s.group.nodes.size() > 3) nodes += fmt::format(" and {} more", s.group.nodes.size() - 3);
  return fmt::format("step {} of {} (kernel {}, ONNX nodes {})", i + 1, engine.steps().size(),
                     s.kernel ? s.kernel->name : "none: the CPU reference", nodes);
}

}  // namespace

void Session::wait_for_step(size_t i) {
  try {
    BRAZE_CU(cuStreamSynchronize, stream_);
  } catch (const DeviceError& e) {
    throw DeviceError(fmt::format("{} failed: {}", describe_step(*engine_, i), e.what()));
  }
}

void Session::rethrow_naming_fault(const CudaError& e) const {
  if (!is_kernel_fault(e.code())) throw;
  const unsigned noted = progress_.host() ? *static_cast<volatile unsigned*>(progress_.host()) : 0;
  std::string where;
  if (!progress_arg_)
    where = "which kernel is not known (BRAZE_STEP_NOTES=0)";
  else if (noted == 0 || noted > engine_->steps().size())
    where =
        "no kernel of this session had noted its start: the fault came from other work on "
        "the GPU, or from step 1 before it noted";
  else
    where =
        fmt::format("the kernel this session started last: {}", describe_step(*engine_, noted - 1));
  throw DeviceError(fmt::format(
      "a kernel faulted on the GPU; {}. {}. After a fault the driver keeps this process's GPU "
      "context unusable: GPU work fails until the process restarts (RunOptions::sync_each_kernel, "
      "`braze run --sync-each-kernel`, waits for each kernel to confirm which one faults)",
      where, e.what()));
}

void Session::bind(const std::vector<CUdeviceptr>& inputs,
                   const std::vector<CUdeviceptr>& outputs) {
  const graph::Graph& g = engine_->graph();
  std::fill(bound_.begin(), bound_.end(), 0);
  if (!all_kernels()) return;  // CPU fallbacks read and write the arena: everything copied
  auto bindable = [&](ValueId v, CUdeviceptr p) {
    return p % kArenaAlignment == 0 && engine_->slots().at(v).where == Slot::Arena;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueId v = g.inputs()[i];
    if (bindable(v, inputs[i])) bound_[static_cast<size_t>(v)] = inputs[i];
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    ValueId v = g.outputs()[i].value;
    // A graph input returned as an output, or a value returned twice: copied.
    if (g.is_graph_input(v) || bound_[static_cast<size_t>(v)]) continue;
    if (bindable(v, outputs[i])) bound_[static_cast<size_t>(v)] = outputs[i];
  }
}

void Session::enqueue_device(const std::vector<CUdeviceptr>& inputs,
                             const std::vector<CUdeviceptr>& outputs, CUstream stream) try {
  const graph::Graph& g = engine_->graph();
  make_current();
  host_values_.clear();
  bind(inputs, outputs);
  auto bytes = [&](ValueId v) { return engine_->slots().at(v).bytes; };
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueId v = g.inputs()[i];
    if (!bound_[static_cast<size_t>(v)] && engine_->slots().at(v).where == Slot::Arena && bytes(v))
      BRAZE_CU(cuMemcpyDtoDAsync, address(*engine_, arena_, v), inputs[i], bytes(v), stream);
  }
  if (graphable()) {
    launch_graph(stream);
  } else if (all_kernels()) {
    for (size_t i = 0; i < engine_->steps().size(); ++i) enqueue_step(i, stream);
  } else {  // CPU fallbacks synchronise: the session's stream after the caller's, and back
    BRAZE_CU(cuStreamSynchronize, stream);
    for (size_t i = 0; i < engine_->steps().size(); ++i) {
      if (engine_->steps()[i].kernel)
        enqueue_step(i);
      else
        run_fallback(engine_->steps()[i]);
    }
    BRAZE_CU(cuStreamSynchronize, stream_);
  }
  for (size_t i = 0; i < outputs.size(); ++i) copy_output(i, inputs, outputs[i], stream);
} catch (const CudaError& e) {
  rethrow_naming_fault(e);
}

void Session::copy_output(size_t i, const std::vector<CUdeviceptr>& inputs, CUdeviceptr dst,
                          CUstream stream) {
  const graph::Graph& g = engine_->graph();
  ValueId v = g.outputs()[i].value;
  if (bound_[static_cast<size_t>(v)] == dst) return;  // written in place
  if (g.is_graph_input(v)) {
    size_t k = std::find(g.inputs().begin(), g.inputs().end(), v) - g.inputs().begin();
    const graph::Value& val = g.value(v);
    size_t n = static_cast<size_t>(checked_numel(val.shape)) * dtype_size(val.dtype);
    if (n) BRAZE_CU(cuMemcpyDtoDAsync, dst, inputs[k], n, stream);
    return;
  }
  if (auto h = host_values_.find(v);
      h != host_values_.end() || engine_->slots().at(v).where == Slot::None) {
    // A constant only the CPU reads, or a CPU fallback's value without a device slot.
    Tensor t = h != host_values_.end() ? h->second : fetch(v);
    if (t.nbytes()) {
      BRAZE_CU(cuMemcpyHtoDAsync, dst, t.raw(), t.nbytes(), stream);
      BRAZE_CU(cuStreamSynchronize, stream);  // pageable `t` is freed on return
    }
    return;
  }
  if (size_t n = engine_->slots().at(v).bytes)
    BRAZE_CU(cuMemcpyDtoDAsync, dst, value_address(v), n, stream);
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs, const RunOptions& opts) try {
  const graph::Graph& g = engine_->graph();
  runtime::check_inputs(g, inputs);
  make_current();
  host_values_.clear();
  std::fill(bound_.begin(), bound_.end(), 0);
  if (opts.poison && arena_.size())
    BRAZE_CU(cuMemsetD8Async, arena_.ptr(), 0xFF, arena_.size(), stream_);
  upload(inputs);
  BRAZE_CU(cuMemsetD8Async, flags_.ptr(), 0, flags_.size(), stream_);  // this run's checks only
  const auto& steps = engine_->steps();
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (s.kernel)
      enqueue_step(i);
    else
      run_fallback(s);
    if (opts.sync_each_kernel && s.kernel) wait_for_step(i);
    if (opts.capture)
      for (ValueId v : s.group.outputs) host_values_[v] = fetch(v);
  }
  std::vector<Tensor> outs;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ValueId v = g.outputs()[i].value;
    if (g.is_graph_input(v)) {
      size_t k = std::find(g.inputs().begin(), g.inputs().end(), v) - g.inputs().begin();
      outs.push_back(inputs[k].clone());
    } else {
      outs.push_back(fetch(v));  // synchronises the stream first
    }
  }
  check_flags();
  return outs;
} catch (const CudaError& e) {
  rethrow_naming_fault(e);
}

}  // namespace braze::gpu
