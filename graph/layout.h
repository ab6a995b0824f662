// Strided layouts: a value read as a view of another value's memory. A layout op (Reshape,
// Transpose, Expand, Slice, Squeeze, Unsqueeze, Flatten) moves no data: its output is a
// strided view of its input, and a chain of them is one view of the chain's first input. The
// registry gives each such op one map (OpDef::layout) from its input's layout to its
// output's; a consumer that can address memory through strides (a GEMM operand read by TMA
// or cp.async) reads the view in place instead of a copy.
//
// Each dim of a layout is a list of factors, outermost first, whose sizes multiply to the
// dim's size; element (c0, c1, …) sits at offset + Σ_d Σ_f digit_f(c_d) · stride_f, digit_f
// the dim's coordinate written in the mixed radix of its factors. A contiguous [4, 6] is
// {[(4, 6)], [(6, 1)]}; Reshape [2, 2, 6] -> [4, 6] of a transposed view keeps two factors
// in its first dim when they do not merge; Expand writes stride 0. Sizes are elements.
//
//   x [S, 3 x 768] ── Slice 768..1535 ── Reshape [S, 12, 64] ── Transpose [12, S, 64]
//   the view of x:  offset 768, dims {[(12, 64)], [(S, 2304)], [(64, 1)]}
#pragma once

#include <braze/tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace braze::graph {

// The shape's dims other than 1, in order ([1, 128, 1, 64] -> [128, 64]): two shapes with
// the same such dims hold their elements in the same row-major order.
Shape non_ones(const Shape& s);

struct StridedDim {
  int64_t size = 1;
  int64_t stride = 0;  // elements; 0 for a broadcast dim
  bool operator==(const StridedDim&) const = default;
};

struct Layout {
  int64_t offset = 0;
  std::vector<std::vector<StridedDim>> dims;  // one per dim of the value, factors outermost first

  static Layout contiguous(const Shape& shape);
  Shape shape() const;
  // Dim d's factors with size-1 factors dropped and neighbours that are contiguous with each
  // other merged; a dim of size 1 has none.
  std::vector<StridedDim> factors(size_t d) const;
  // All factors of all dims, outermost first, simplified as factors() does across dims.
  std::vector<StridedDim> flat() const;
  // Dim d as one stride (size 1 dims have stride 0), when its factors merge into one.
  std::optional<StridedDim> single(size_t d) const;
  // The element offset of `coords` (tests, the reference).
  int64_t at(const std::vector<int64_t>& coords) const;
  bool operator==(const Layout&) const = default;
};

std::string layout_str(const Layout& l);

// Size-1 factors dropped, contiguous neighbours merged (outer.stride == inner.size * inner.stride).
std::vector<StridedDim> simplify(std::vector<StridedDim> f);

// The same elements in row-major order viewed as `shape` (Reshape, Flatten, Squeeze,
// Unsqueeze); nullopt when a new dim would split a factor unevenly.
std::optional<Layout> reshape_layout(const Layout& in, const Shape& shape);
// Output dim d is input dim perm[d].
Layout transpose_layout(const Layout& in, const std::vector<int64_t>& perm);
// numpy broadcasting to `shape`: new leading dims and size-1 dims read stride 0.
std::optional<Layout> expand_layout(const Layout& in, const Shape& shape);
// Elements start, start + step, … (`size` of them) of dim `axis`. nullopt when the dim's
// factors do not allow it (a slice inside an inner factor of a dim that does not merge).
std::optional<Layout> slice_layout(const Layout& in, size_t axis, int64_t start, int64_t size,
                                   int64_t step);

}  // namespace braze::graph
