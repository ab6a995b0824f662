// The forms an op's lowering (codegen/lowering.h) takes, and the CUDA text helpers they use:
//   - element-wise ops give a CUDA expression over their operands (CudaExprFn);
//   - injective ops give their value at an output coordinate in terms of loads of their
//     inputs at computed coordinates (CudaIndexFn) — Transpose, Slice, Gather, Concat …
//     become index arithmetic inside the consuming kernel's loads, never copies;
//   - reductions and normalisations give a row program (CudaRowFn).
// The emitter implements CudaIndexCtx. Expressions may call the braze_* device functions of
// codegen/device/ops.cuh (integer power, Python-style mod …).
#pragma once

#include <braze/tensor.h>

#include <fmt/format.h>

#include <functional>
#include <string_view>
#include <optional>
#include <string>
#include <vector>

#include "graph/scalar.h"

namespace braze::graph {
struct Node;
class Graph;
}  // namespace braze::graph

namespace braze::codegen {

using graph::Graph;
using graph::Node;

// The types kernels compute in (graph/scalar.h): float for float16/bfloat16/float32, double,
// long long (Int) for signed integers, unsigned long long (UInt) for unsigned ones, bool.
// Formatted (fmt) as their CUDA names.
using graph::compute_type;
using graph::ComputeType;
using graph::is_floating;
// "float", "double", "long long", "unsigned long long", "bool".
const std::string& cuda_name(ComputeType t);
// cuda_name(compute_type(dt)).
std::string cuda_compute_type(DType dt);
// The C type a tensor of dt is stored as on the device ("__half", "signed char" …).
std::string cuda_storage_type(DType dt);
// "expf" for float, "exp" for double.
std::string cuda_math(ComputeType t, const std::string& fn);
// A literal of the compute type, exactly ("1.5f", "(double)0.1", "3LL"); inf and nan spelled
// through the CUDA intrinsics.
std::string cuda_literal(ComputeType t, double v);

// Index arithmetic as expressions over `long long` coordinates, for CudaIndexFns:
// the row-major flat offset of coords in shape (size-1 dims skipped), and the coordinates
// of a flat offset.
std::string cuda_linearize(const std::vector<std::string>& coords, const Shape& shape);
std::vector<std::string> cuda_unravel(const std::string& flat, const Shape& shape);

struct CudaExprCtx {
  const Node& node;
  ComputeType type;               // compute type of the first operand
  std::vector<std::string> args;  // operand expressions, each in its own compute type
  std::vector<DType> arg_dtypes;
  DType out_dtype;
};
// Returns an expression of the output's compute type.
using CudaExprFn = std::function<std::string(const CudaExprCtx&)>;

class CudaIndexCtx {
 public:
  virtual ~CudaIndexCtx() = default;
  virtual const Node& node() const = 0;
  virtual size_t output_index() const = 0;  // which output of the node is asked for (Split)
  virtual const Shape& out_shape() const = 0;
  // The output coordinate along dim d, a `long long` expression.
  virtual const std::string& coord(size_t d) const = 0;
  virtual const Shape& in_shape(size_t i) const = 0;
  virtual DType in_dtype(size_t i) const = 0;
  virtual const Tensor* in_value(size_t i) const = 0;  // constant inputs (shape arguments)
  virtual bool has_input(size_t i) const = 0;
  // Input i's value at `coords` (one `long long` expression per dim of input i); returns an
  // expression in the input's compute type. Emits code at the current point.
  virtual std::string load(size_t i, const std::vector<std::string>& coords) = 0;
  // Binds expr to a fresh local of `type`; returns its name.
  virtual std::string let(const std::string& type, const std::string& expr) = 0;
  // cond ? then() : otherwise(), with each branch's loads emitted inside its branch only
  // (so a load that would be out of bounds is never issued). Returns a local of `type`.
  virtual std::string select(const std::string& cond, const std::string& type,
                             const std::function<std::string()>& then,
                             const std::function<std::string()>& otherwise) = 0;
  // A loop: acc = init; for k in [0, count): acc = step(acc, k); returns acc's local.
  // `step` returns the new accumulator value; loads it makes are emitted inside the loop.
  virtual std::string accumulate(
      const std::string& type, const std::string& init, int64_t count,
      const std::function<std::string(const std::string& acc, const std::string& k)>& step) = 0;
  // The same for a compute type.
  std::string let(ComputeType t, const std::string& expr) { return let(cuda_name(t), expr); }
  std::string select(const std::string& cond, ComputeType t,
                     const std::function<std::string()>& then,
                     const std::function<std::string()>& otherwise) {
    return select(cond, cuda_name(t), then, otherwise);
  }
  std::string accumulate(
      ComputeType t, const std::string& init, int64_t count,
      const std::function<std::string(const std::string& acc, const std::string& k)>& step) {
    return accumulate(cuda_name(t), init, count, step);
  }
  // At run time, when `cond` is false the run fails with `message` (naming the node) and
  // `fixup` (a statement) makes the current element safe to finish, e.g. by zeroing an index.
  virtual void check(const std::string& cond, const std::string& message,
                     const std::string& fixup) = 0;

  // Lane-parallel index maps (CudaLanesFn): one call computes lanes() outputs whose
  // coordinates are coord(d) but along lane_dim(), where lane j's is lane_coord(j)
  // (lane_coord(0) == coord(lane_dim())). A CudaIndexFn's call has one lane.
  virtual int lanes() const { return 1; }
  virtual size_t lane_dim() const { return 0; }
  virtual std::string lane_coord(int j) const { return j == 0 ? coord(lane_dim()) : ""; }
  // select and accumulate over several values at once: one branch and one loop for all of
  // them, so that loads the lanes share (a vector of channels) are issued once.
  using Values = std::vector<std::string>;
  // select_n's branches each give n values.
  virtual Values select_n(const std::string& cond, const std::string& type, size_t n,
                          const std::function<Values()>& then,
                          const std::function<Values()>& otherwise) = 0;
  virtual Values accumulate_n(
      const std::string& type, const Values& inits, int64_t count,
      const std::function<Values(const Values& accs, const std::string& k)>& step) = 0;
};
// The output coordinate's expressions, one per dim of the output.
std::vector<std::string> out_coords(const CudaIndexCtx& ctx);

// Layout ops (Reshape, Transpose …) also map forward: the output coordinate of the element
// at input coordinate `in` — so a kernel that computes its elements in the input's order
// (a GEMM tile) can store them where the op puts them. `in_shape`/`out_shape` are the
// node's input 0 and output shapes.
using CudaForwardFn =
    std::function<std::vector<std::string>(const Node& node, const std::vector<std::string>& in,
                                           const Shape& in_shape, const Shape& out_shape)>;

// Thrown by a CudaIndexFn or CudaExprFn for a node it cannot generate code for (an
// attribute combination, or an input it needs as a constant that is not one); the node then
// runs on the CPU reference, with `why` said aloud.
struct CudaUnsupported {
  std::string why;
};

// Returns the expression (in the output's compute type) of the op's output
// ctx.output_index() at the output coordinate.
using CudaIndexFn = std::function<std::string(CudaIndexCtx& ctx)>;
// An index map's lane-parallel form: the expressions of ctx.lanes() outputs along
// ctx.lane_dim() (a depthwise convolution's or a pooling's channels, whose channels-last
// loads are then vectors), or none where it has no such form for this node or dimension
// (the emitter then asks the CudaIndexFn lane by lane).
using CudaLanesFn = std::function<std::vector<std::string>(CudaIndexCtx& ctx)>;

// How a reduction or normalisation op runs on the GPU: passes over each "row" (the
// elements of input 0 that reduce into one output position), then outputs.
//
// Expressions are fmt-style templates over named fields:
//   {x}   input 0 at the current element (compute type of input 0)
//   {r}   the element's flat index within its row (long long)
//   {n}   the row length, as a literal of the pass or output type
//   {s0}, {s1} … the results of earlier passes (their accumulator types)
//   {in1}, {in2} … other inputs at the current element, read through `views`
// How a row pass combines its elements: a sum, product, maximum or minimum (NaN-propagating)
// of the mapped values, or the row index of the first extreme (ArgMax, ArgMin) or the last
// (ArgMaxLast, ArgMinLast).
enum class Combine { Sum, Prod, Max, Min, ArgMax, ArgMin, ArgMaxLast, ArgMinLast };
inline bool is_arg(Combine c) { return c >= Combine::ArgMax; }
inline bool picks_max(Combine c) {
  return c == Combine::Max || c == Combine::ArgMax || c == Combine::ArgMaxLast;
}
inline bool picks_last(Combine c) { return c == Combine::ArgMaxLast || c == Combine::ArgMinLast; }

struct CudaRowProgram {
  std::vector<int64_t> axes;  // reduced axes of input 0, ascending
  struct Pass {
    Combine combine;
    std::string map;   // the value combined, per element
    ComputeType type;  // accumulator type; an arg reduction's result is Int (the row index)
  };
  std::vector<Pass> passes;
  // Passes 0 and 1 are max({x}) and sum(exp({x} - {s0})): a schedule that streams the row
  // may fuse them into one online pass (running max and rescaled sum), reading it once.
  bool online_softmax = false;
  struct Output {
    bool per_element = false;  // input 0's shape (a normalisation) or one value per row
    std::string expr;          // empty: this output is not produced
  };
  // Output expressions may use {s0}, {s1} … (the passes' row results) and, per element,
  // {p0}, {p1} … (pass K's map at this element: reused where the schedule holds it, else
  // recomputed), besides the fields the maps use ({x}, {in1} …, {r}, {n}).
  std::vector<Output> outputs;  // one per node output
  // Input 0 may be viewed as another shape of the same element count (GroupNormalization
  // views [N, C, …] as [N, G, C/G, …]); `axes` then refer to the view. Empty: its shape.
  Shape x_view;
  // For inputs 1, 2 …: the shape each is viewed as (same element count) so that it
  // broadcasts against input 0 (or its view); empty keeps the input's own shape. Per-row
  // outputs may read them too, at the row's first element.
  std::vector<Shape> views;
};
// nullopt when this node (its attributes, shapes or dtypes) has no GPU row program.
struct CudaRowInputs {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<const Tensor*> values;  // constant inputs (axes …), else nullptr
};
using CudaRowFn =
    std::function<std::optional<CudaRowProgram>(const Node& node, const CudaRowInputs& inputs)>;
// The inputs of node `n` of `g` as a row program sees them (an omitted one: no shape,
// float32, no value).
CudaRowInputs cuda_row_inputs(const Graph& g, const Node& n);

}  // namespace braze::codegen

template <>
struct fmt::formatter<braze::graph::ComputeType> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(braze::graph::ComputeType t, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(braze::codegen::cuda_name(t), ctx);
  }
};
