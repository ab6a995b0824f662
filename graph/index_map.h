// Layout ops as index maps: what a data-movement op (Reshape, Transpose, Expand, Tile, Slice,
// Split, Concat, Pad, DepthToSpace, SpaceToDepth …) computes, written once in the registry
// (OpDef::index_map) as where each output element comes from — which input, at which
// coordinates, each an integer expression of the output coordinates (affine, with div and
// mod). The reference executor copies elements through it (graph/ops/movement.cpp, with
// strided copies where the map is affine); codegen renders it as the loads of a fused kernel
// and inverts it for a GEMM epilogue's stores (codegen/index_render.cpp, the only place that
// turns it into CUDA).
//
//   Transpose perm (0, 2, 1):   source input 0 at (o0, o2, o1)
//   Slice 768..1535 of axis 1:  source input 0 at (o0, 768 + o1)
//   Concat of a [2, 3] and b [2, 5] on axis 1:
//                               o1 < 3 ? a at (o0, o1 - 0) : b at (o0, o1 - 3)
//   Reshape [6] -> [2, 3]:      t = linearize((o0, o1), [2, 3]); input 0 at (t)
#pragma once

#include <braze/tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "graph/layout.h"

namespace braze::graph {

class Graph;
struct Node;

using IndexId = int32_t;

enum class IndexOp : uint8_t {
  Coord,      // output coordinate number `value`
  Const,      // `value`
  Temp,       // temporary number `value` of the map (IndexMap::temps)
  Add,        // args[0] + args[1]
  Sub,        // args[0] - args[1]
  Mul,        // args[0] * args[1]
  Div,        // args[0] / args[1], C's division (truncates toward zero)
  Mod,        // args[0] % args[1], C's remainder (the sign of args[0])
  Lt,         // args[0] < args[1]: 1 or 0
  Ge,         // args[0] >= args[1]: 1 or 0
  And,        // every arg non-zero: 1 or 0
  Select,     // args[0] ? args[1] : args[2]
  Linearize,  // the row-major flat offset of args (one per dim of `shape`; size-1 dims skipped)
};

struct IndexNode {
  IndexOp op = IndexOp::Const;
  int64_t value = 0;
  std::vector<IndexId> args;
  Shape shape;  // Linearize's
};

// Where an element comes from: input `input` at `coords` (one per dim of that input), or the
// value zero when input is kZero.
struct IndexSource {
  static constexpr int kZero = -1;
  int input = 0;
  std::vector<IndexId> coords;
};

class IndexMap {
 public:
  // Regions in order: an element comes from the first region whose condition holds; the last
  // region has none (when == kAlways).
  static constexpr IndexId kAlways = -1;
  struct Region {
    IndexId when = kAlways;
    IndexSource source;
  };

  // Building. Expressions are nodes of this map; ids are valid for it only.
  IndexId coord(size_t d);
  IndexId lit(int64_t v);
  // Binds e to the next temporary (computed once per element, before the regions).
  IndexId temp(IndexId e);
  IndexId add(IndexId a, IndexId b) { return node(IndexOp::Add, {a, b}); }
  IndexId sub(IndexId a, IndexId b) { return node(IndexOp::Sub, {a, b}); }
  IndexId mul(IndexId a, IndexId b) { return node(IndexOp::Mul, {a, b}); }
  IndexId div(IndexId a, IndexId b) { return node(IndexOp::Div, {a, b}); }
  IndexId mod(IndexId a, IndexId b) { return node(IndexOp::Mod, {a, b}); }
  IndexId lt(IndexId a, IndexId b) { return node(IndexOp::Lt, {a, b}); }
  IndexId ge(IndexId a, IndexId b) { return node(IndexOp::Ge, {a, b}); }
  IndexId all(std::vector<IndexId> conds) { return node(IndexOp::And, std::move(conds)); }
  IndexId select(IndexId c, IndexId a, IndexId b) { return node(IndexOp::Select, {c, a, b}); }
  IndexId linearize(std::vector<IndexId> coords, const Shape& shape);
  // The coordinates in `shape` of flat offset `flat` (size-1 dims read 0).
  std::vector<IndexId> unravel(IndexId flat, const Shape& shape);
  // The output coordinates 0 … rank-1.
  std::vector<IndexId> coords(size_t rank);
  void add_region(IndexId when, IndexSource source);

  const IndexNode& at(IndexId id) const { return nodes_.at(static_cast<size_t>(id)); }
  const std::vector<IndexId>& temps() const { return temps_; }
  const std::vector<Region>& regions() const { return regions_; }

  // The output holds input 0's elements in the same row-major order (Reshape, Flatten, Squeeze,
  // Unsqueeze): set by same_order_map.
  bool same_order = false;

  // perm where the map reads input 0 at output coordinate perm[d] for its dim d, in one
  // region without temporaries (Transpose); nullopt otherwise.
  std::optional<std::vector<int64_t>> permutation() const;

 private:
  IndexId node(IndexOp op, std::vector<IndexId> args, int64_t value = 0);
  std::vector<IndexNode> nodes_;
  std::vector<IndexId> temps_;
  std::vector<Region> regions_;
};

// The map of an op whose output holds its input's elements in the same order, in_shape
// viewed as out_shape.
IndexMap same_order_map(const Shape& in_shape, const Shape& out_shape);

// What an op's index map is built from: the node, its inputs' shapes and the values of
// those that are constants (the shape arguments: Slice's starts, Pad's pads …), and which
// output is asked for (Split).
struct IndexMapArgs {
  const Node& node;
  std::vector<Shape> shapes;          // one per input; empty for an omitted one
  std::vector<bool> present;          // whether input i is given
  std::vector<const Tensor*> values;  // input i's value where it is a constant, else nullptr
  Shape out_shape;
  size_t output = 0;

  bool has(size_t i) const { return i < present.size() && present[i]; }
  // Input i's values as integers; InternalError when it is no constant (shape arguments
  // always are once shapes are inferred).
  std::vector<int64_t> list(size_t i) const;
  // nullopt for an omitted input.
  std::optional<std::vector<int64_t>> opt_list(size_t i) const;
};
using IndexMapFn = std::function<IndexMap(const IndexMapArgs&)>;

// The args of node n of g for output `output`, from the graph's shapes and constants; nullopt
// when a shape argument (OpDef::shape_inputs) is not a constant.
std::optional<IndexMapArgs> index_map_args(const Graph& g, const Node& n, size_t output);

// The output of a map that reads input 0 as a strided view, given input 0's layout: a
// same-order map reshapes the view; a map of one region whose every input coordinate is
// constant or start + step · one output coordinate (Transpose, Expand, Slice) permutes,
// slices and broadcasts it. nullopt otherwise, or where the view's factors do not allow it.
std::optional<Layout> layout_through(const IndexMap& m, const Layout& in, const Shape& out_shape);
// OpDef::layout of an op whose output is a view of input 0: layout_through its map.
std::optional<Layout> map_layout(const Graph& g, const Node& n, const Layout& in);

// Evaluates a map at output coordinates: which region gives the element, and its source
// coordinates.
class IndexEvaluator {
 public:
  explicit IndexEvaluator(const IndexMap& m) : m_(m), temps_(m.temps().size()) {}
  // The source of the element at `out`; `in` receives its coordinates.
  const IndexSource& locate(const std::vector<int64_t>& out, std::vector<int64_t>& in);
  // Computes the temporaries at `out`, which eval then reads.
  void bind(const std::vector<int64_t>& out);
  int64_t eval(IndexId id, const std::vector<int64_t>& out) const;

 private:
  const IndexMap& m_;
  std::vector<int64_t> temps_;
};

// Expression e as offset + Σ coeff[d] · output coordinate d, when it is one (no div, mod,
// condition or product of two coordinates); `rank` is the output's.
struct AffineIndex {
  int64_t offset = 0;
  std::vector<int64_t> coeff;
};
std::optional<AffineIndex> affine_index(const IndexMap& m, IndexId e, size_t rank);

// The output dims expression e reads, as a bit set (bit d: output coordinate d); rank ≤ 64.
uint64_t index_dims(const IndexMap& m, IndexId e);

}  // namespace braze::graph
