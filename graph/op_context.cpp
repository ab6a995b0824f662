#include "graph/op_context.h"

#include <braze/error.h>

#include <fmt/format.h>

#include "graph/host_memory.h"
#include "graph/registry.h"

namespace braze::graph {

InferCtx::InferCtx(const Node& node, std::vector<InputInfo> inputs)
    : node_(node), inputs_(std::move(inputs)), outputs_(node.outputs.size()) {}

DType InferCtx::dtype(size_t i) const {
  if (!has_input(i)) fail(fmt::format("input {} is required", i));
  return inputs_[i].dtype;
}

const Shape& InferCtx::shape(size_t i) const {
  if (!has_input(i)) fail(fmt::format("input {} is required", i));
  if (!inputs_[i].shape) throw NotStatic{};
  return *inputs_[i].shape;
}

const Tensor* InferCtx::value(size_t i) const { return has_input(i) ? inputs_[i].value : nullptr; }

const Tensor& InferCtx::require_value(size_t i) const {
  if (!has_input(i)) fail(fmt::format("input {} is required", i));
  if (!inputs_[i].value) throw NotStatic{};
  return *inputs_[i].value;
}

void InferCtx::set_dtype(size_t i, DType dt) {
  if (i >= outputs_.size()) return;  // optional trailing output not requested
  outputs_[i].set = true;
  outputs_[i].dtype = dt;
}

void InferCtx::set_output(size_t i, DType dt, Shape shape) {
  if (i >= outputs_.size()) return;  // optional trailing output not requested
  for (int64_t d : shape)
    if (d < 0)
      fail(fmt::format("output {} would have a negative dimension: {}", i, shape_str(shape)));
  checked_numel(shape, fmt::format("{} output {}", node_.describe(), i));
  outputs_[i].set = true;
  outputs_[i].dtype = dt;
  outputs_[i].shape = std::move(shape);
  outputs_[i].has_shape = true;
}

void InferCtx::set_shape(size_t i, Shape shape) {
  if (i >= outputs_.size()) return;
  BRAZE_CHECK(outputs_[i].set, node_.describe() + ": set_shape before set_dtype");
  set_output(i, outputs_[i].dtype, std::move(shape));
}

void InferCtx::fail(const std::string& msg) const {
  throw UserError(fmt::format("{}: {}", node_.describe(), msg));
}

int64_t InferCtx::axis(int64_t a, int64_t rank, const char* what) const {
  if (a < -rank || a >= rank) fail(fmt::format("{} {} is out of range for rank {}", what, a, rank));
  return a < 0 ? a + rank : a;
}

const Tensor& RefCtx::input(size_t i) const {
  if (!has_input(i)) fail(fmt::format("input {} is required", i));
  return *inputs_[i];
}

void RefCtx::fail(const std::string& msg) const {
  throw UserError(fmt::format("{}: {}", node_.describe(), msg));
}

namespace {

void check_node(const Node& n, const std::vector<InputInfo>& ins) {
  const OpDef& op = *n.op;
  int nin = static_cast<int>(n.inputs.size());
  if (nin < op.min_inputs || (op.max_inputs >= 0 && nin > op.max_inputs))
    throw UserError(fmt::format("{}: has {} inputs, expected {}{}", n.describe(), nin,
                                op.min_inputs,
                                op.max_inputs == op.min_inputs ? ""
                                : op.max_inputs < 0            ? " or more"
                                                    : fmt::format(" to {}", op.max_inputs)));
  for (int i = 0; i < op.min_inputs; ++i)
    if (!ins[i].present)
      throw UserError(fmt::format("{}: required input {} is missing", n.describe(), i));
  int nout = static_cast<int>(n.outputs.size());
  if (nout < op.min_outputs || nout > op.max_outputs)
    throw UserError(fmt::format("{}: has {} outputs, expected {} to {}", n.describe(), nout,
                                op.min_outputs, op.max_outputs));
  if (!ins.empty() && ins[0].present && !op.types.contains(ins[0].dtype))
    throw UnsupportedError(fmt::format("{}: dtype {} is not supported by {}", n.describe(),
                                       dtype_name(ins[0].dtype), op.name));
}

std::vector<OutputInfo> run_infer(const Node& n, std::vector<InputInfo> ins, bool must_be_static) {
  check_node(n, ins);
  InferCtx ctx(n, std::move(ins));
  try {
    n.op->infer(ctx);
  } catch (const NotStatic&) {
    if (must_be_static) throw InternalError(n.describe() + ": inference wanted data it was given");
  }
  std::vector<OutputInfo> outs = ctx.outputs();
  for (size_t i = 0; i < outs.size(); ++i)
    if (n.outputs[i] != kNoValue && !outs[i].set)
      throw InternalError(fmt::format("{}: inference set no dtype for output {}", n.describe(), i));
  return outs;
}

}  // namespace

void infer_node(Graph& g, NodeId id) {
  const Node& n = g.node(id);
  std::vector<InputInfo> ins(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    ValueId v = n.inputs[i];
    if (v == kNoValue) continue;
    const Value& val = g.value(v);
    ins[i] = {true, val.dtype, val.has_shape ? &val.shape : nullptr, val.constant.get()};
  }
  std::vector<OutputInfo> outs = run_infer(n, std::move(ins), false);
  for (size_t i = 0; i < outs.size(); ++i) {
    ValueId v = n.outputs[i];
    if (v == kNoValue) continue;
    Value& val = g.value(v);
    val.dtype = outs[i].dtype;
    val.has_shape = outs[i].has_shape;
    val.shape = outs[i].has_shape ? outs[i].shape : Shape{};
  }
}

std::vector<Tensor> evaluate_node(const Node& n, const std::vector<const Tensor*>& inputs) {
  std::vector<InputInfo> ins(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size() && i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (!t) continue;
    ins[i] = {true, t->dtype(), &t->shape(), t};
  }
  std::vector<OutputInfo> outs = run_infer(n, std::move(ins), true);
  std::vector<Tensor> result(n.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    if (n.outputs[i] == kNoValue) continue;
    const std::string what = fmt::format("{} output {}", n.describe(), i);
    check_host_memory(checked_nbytes(outs[i].dtype, outs[i].shape, what), what);
    result[i] = Tensor(outs[i].dtype, outs[i].shape);
  }
  RefCtx ctx(n, inputs, result);
  n.op->reference(ctx);
  return result;
}

Tensor transposed(const Tensor& t, const std::vector<int64_t>& perm) {
  Node n;
  n.op = &op("Transpose");
  n.name = "compile-time transpose";
  n.opset = 13;
  n.attrs["perm"] = perm;
  n.inputs = {0};
  n.outputs = {0};
  return std::move(evaluate_node(n, {&t})[0]);
}

}  // namespace braze::graph
