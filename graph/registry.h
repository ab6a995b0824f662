// The op registry: the single source of truth for what an op is. Every op braze knows is
// one OpDef — its ONNX name and opsets, fusion kind, attributes with defaults, arity, type
// constraint, the inputs whose values fix output shapes, the rewrite of older opsets' forms
// into the canonical one, shape inference, the CPU reference implementation, for
// element-wise ops the scalar expression and for data-movement ops the index map both the
// reference and codegen are made from.
// The importer, constant folding, the reference executor (and later fusion and codegen)
// all read this table; no pass keeps its own list of op names.
#pragma once

#include <braze/dtype.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/attribute.h"
#include "graph/index_map.h"
#include "graph/ir.h"
#include "graph/layout.h"
#include "graph/scalar.h"

namespace braze::graph {

// Ordered so fusion rules read as comparisons (TVM's op pattern kinds).
enum class FusionKind { ElemWise, Broadcast, Injective, Reduce, OutEWiseFusable, Opaque };
std::string_view fusion_kind_name(FusionKind k);

// What an attribute means beyond its value, for passes that act on it without naming ops.
enum class AttrRole : uint8_t {
  None,
  OutputDType,  // an ONNX dtype code the output takes (Cast's `to`, EyeLike's `dtype`)
  OutputValue,  // a one-element tensor the output is filled with, of its dtype (ConstantOfShape)
};

struct AttrSpec {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value;  // nullopt: optional without default or required
  bool required = false;
  AttrRole role = AttrRole::None;
};

class InferCtx;
class RefCtx;

// Rewrites a node imported at `opset` into the op's canonical (newest-opset) form, e.g. an
// attribute that later opsets take as an input becomes a constant input. May add nodes.
using UpgradeFn = std::function<void(Graph& g, NodeId n)>;
using InferFn = std::function<void(InferCtx& ctx)>;
using RefFn = std::function<void(RefCtx& ctx)>;
// Layout ops: the node's output as a strided view of input 0, given input 0's layout
// (graph/layout.h); nullopt where this node's output is no strided view of its input. The
// layout ops' is map_layout (graph/index_map.h): their index map applied to the view.
using LayoutFn =
    std::function<std::optional<Layout>(const Graph& g, const Node& n, const Layout& in)>;
// Element-wise ops: node n's output as a scalar expression of its operands (graph/scalar.h),
// built with b, whose args are n's inputs; the reference executor evaluates it and codegen
// renders it. Throws UserError for attributes the op does not take.
using ScalarFn = std::function<ScalarId(ScalarBuilder& b, const Node& n)>;
// True when this node's output 0 is its input 0 unchanged.
using PassThroughFn = std::function<bool(const Graph& g, const Node& n)>;

struct OpDef {
  std::string name;
  std::string domain;  // "" is ai.onnx
  int since = 1;       // first opset of the domain in which the op exists
  // Oldest opset whose form of the op braze imports. Opsets before 7 changed several ops
  // (broadcast attributes, attributes later made inputs); ops whose meaning never changed
  // take their very first form too.
  int oldest = 7;
  FusionKind kind = FusionKind::Opaque;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: variadic
  int min_outputs = 1;
  int max_outputs = 1;
  std::vector<AttrSpec> attrs;
  std::vector<int> shape_inputs;   // inputs whose values fix output shapes or attributes
  DTypeSet types = kAllTypes;      // accepted dtypes of the first input
  bool reads_shapes_only = false;  // reference reads its inputs' shapes, never their data
  // The result jumps where an input crosses a point (Floor, comparisons, Cast to integers …):
  // fused kernels, which keep float16 / bfloat16 intermediates in float, round such an op's
  // 16-bit inputs to their type first — the values the reference computes it on — or a
  // difference far below the type's precision (x - y = 0.99998 in float, 1.0 in float16)
  // becomes a whole unit after it.
  bool rounds_half_inputs = false;
  // May draw random numbers (Dropout in training mode): never merged with an equal node or
  // folded at compile time.
  bool may_be_random = false;
  // Made by passes only (Im2Col): the importer refuses it in a model.
  bool internal = false;
  UpgradeFn upgrade;
  InferFn infer;
  RefFn reference;
  LayoutFn layout;  // layout ops: the output as a view of input 0's memory
  ScalarFn scalar;  // element-wise ops: what they compute, for the reference and codegen
  // Data-movement ops: where each output element comes from (graph/index_map.h), for the
  // reference and codegen.
  IndexMapFn index_map;
  // The index map moves each element once, keeping their order (Reshape, Flatten, Squeeze,
  // Unsqueeze) or permuting dims (Transpose): codegen inverts it, so a GEMM epilogue stores
  // through the op.
  bool invertible_map = false;
  // Ops that are sometimes the identity on input 0 (Identity always, Cast to the type its input
  // has, Dropout in inference mode): eliminate_identities removes such a node, its other
  // outputs (Dropout's mask) then all ones.
  PassThroughFn passes_through;

  const AttrSpec* find_attr(std::string_view attr) const;
  bool is_shape_input(int i) const;
};

// Lowest and highest opset of the default domain braze imports (each op's own oldest
// form bounds it further).
inline constexpr int kMinOpset = 1;
inline constexpr int kMaxOpset = 24;

const OpDef* find_op(std::string_view domain, std::string_view name);
// Throws InternalError for an op not in the registry (for passes that build nodes).
const OpDef& op(std::string_view name);
const std::vector<const OpDef*>& all_ops();

// Node n's scalar expression (n.op->scalar), its operands of the given dtypes (nullopt: an
// absent optional input).
ScalarExpr scalar_expr(const Node& n, const std::vector<std::optional<DType>>& arg_dtypes);

// An element-wise op node: a scalar expression of its operands, not random, one output.
bool is_elementwise(const Node& n);

}  // namespace braze::graph
