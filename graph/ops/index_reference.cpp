// The reference implementation of every data-movement op: its index map (graph/index_map.h)
// applied to raw bytes. Maps whose regions are boxes read through affine coordinates
// (Transpose, Expand, Slice, Split, Concat) run as strided copies, a same-order map (Reshape …)
// as one memcpy, maps whose expressions each read one output dim (Tile, Pad) element by element
// through per-dim tables, and the rest (DepthToSpace, SpaceToDepth) through the evaluator.
#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "graph/ops/helpers.h"
#include "graph/ops/movement.h"

namespace braze::graph {
namespace {

const unsigned char* bytes(const Tensor& t) { return static_cast<const unsigned char*>(t.raw()); }
unsigned char* bytes(Tensor& t) { return static_cast<unsigned char*>(t.raw()); }

// A tensor seen through an element offset and one stride per dimension of a box.
struct View {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

// Copies the box of extent `box`: element idx goes from src[s.offset + idx·s.strides] to
// dst[d.offset + idx·d.strides]. Runs contiguous in both are copied with one memcpy.
void copy_box(const Tensor& src, const View& s, Tensor& dst, const View& d, const Shape& box) {
  int64_t n = checked_numel(box);
  if (n == 0) return;
  size_t es = dtype_size(src.dtype());
  const unsigned char* sp = bytes(src);
  unsigned char* dp = bytes(dst);
  size_t r = box.size();
  if (r == 0) {
    std::memcpy(dp + d.offset * es, sp + s.offset * es, es);
    return;
  }
  int64_t inner = box[r - 1];
  int64_t ss = s.strides[r - 1], ds = d.strides[r - 1];
  bool run = ss == 1 && ds == 1;
  std::vector<int64_t> idx(r - 1, 0);
  int64_t so = s.offset, dof = d.offset;
  for (int64_t k = 0, outer = n / inner; k < outer; ++k) {
    if (run) {
      std::memcpy(dp + dof * es, sp + so * es, static_cast<size_t>(inner) * es);
    } else {
      for (int64_t j = 0; j < inner; ++j)
        std::memcpy(dp + (dof + j * ds) * es, sp + (so + j * ss) * es, es);
    }
    for (size_t a = r - 1; a-- > 0;) {
      ++idx[a];
      so += s.strides[a];
      dof += d.strides[a];
      if (idx[a] < box[a]) break;
      so -= s.strides[a] * box[a];
      dof -= d.strides[a] * box[a];
      idx[a] = 0;
    }
  }
}

// A region as a box of the output: [lo, lo + extent) along each dim.
struct Box {
  std::vector<int64_t> lo;
  Shape extent;
};

// The regions of m as boxes, when each condition is `output coordinate a < k` on one axis a
// (Concat's) and the last region has none; nullopt otherwise.
std::optional<std::vector<Box>> region_boxes(const IndexMap& m, const Shape& out) {
  std::vector<Box> boxes;
  int64_t at = 0;
  std::optional<int64_t> axis;
  for (const IndexMap::Region& r : m.regions()) {
    Box b{std::vector<int64_t>(out.size(), 0), out};
    if (r.when != IndexMap::kAlways) {
      const IndexNode& c = m.at(r.when);
      if (c.op != IndexOp::Lt || m.at(c.args[0]).op != IndexOp::Coord ||
          m.at(c.args[1]).op != IndexOp::Const)
        return std::nullopt;
      const int64_t a = m.at(c.args[0]).value;
      if (axis && *axis != a) return std::nullopt;
      axis = a;
      const int64_t end = std::clamp<int64_t>(m.at(c.args[1]).value, at, out[a]);
      b.lo[a] = at;
      b.extent[a] = end - at;
      at = end;
    } else if (axis) {
      b.lo[*axis] = at;
      b.extent[*axis] = out[*axis] - at;
    }
    boxes.push_back(std::move(b));
    if (r.when == IndexMap::kAlways) break;
  }
  return boxes;
}

// Where the box's element at each output coordinate lives in its source input (contiguous):
// nullopt when a source coordinate is not affine or the strides overflow.
std::optional<View> source_view(const IndexMap& m, const IndexSource& src, const Shape& in,
                                const Box& box) {
  const size_t rank = box.extent.size();
  const std::vector<int64_t> st = contiguous_strides(in);
  View v{0, std::vector<int64_t>(rank, 0)};
  for (size_t d = 0; d < src.coords.size(); ++d) {
    std::optional<AffineIndex> a = affine_index(m, src.coords[d], rank);
    if (!a) return std::nullopt;
    int64_t at = a->offset;
    for (size_t k = 0; k < rank; ++k) {
      int64_t s, c;
      if (__builtin_mul_overflow(a->coeff[k], box.lo[k], &c) || __builtin_add_overflow(at, c, &at))
        return std::nullopt;
      if (box.extent[k] <= 1) continue;  // one coordinate: no stride (Slice's huge steps)
      if (__builtin_mul_overflow(a->coeff[k], st[d], &s) ||
          __builtin_add_overflow(v.strides[k], s, &v.strides[k]))
        return std::nullopt;
    }
    if (__builtin_mul_overflow(at, st[d], &at) || __builtin_add_overflow(v.offset, at, &v.offset))
      return std::nullopt;
  }
  return v;
}

// Copies by boxes; false (nothing written) where the map is not made of affine boxes.
bool copy_boxes(const IndexMap& m, const std::vector<const Tensor*>& in, Tensor& y) {
  std::optional<std::vector<Box>> boxes = region_boxes(m, y.shape());
  if (!boxes) return false;
  std::vector<View> views;
  for (size_t i = 0; i < boxes->size(); ++i) {
    const IndexSource& src = m.regions()[i].source;
    if (src.input == IndexSource::kZero) return false;
    std::optional<View> v = source_view(m, src, in.at(src.input)->shape(), (*boxes)[i]);
    if (!v) return false;
    views.push_back(*v);
  }
  const std::vector<int64_t> ys = contiguous_strides(y.shape());
  for (size_t i = 0; i < boxes->size(); ++i) {
    const Box& b = (*boxes)[i];
    View dst{0, ys};
    for (size_t k = 0; k < b.lo.size(); ++k) dst.offset += b.lo[k] * ys[k];
    copy_box(*in.at(m.regions()[i].source.input), views[i], y, dst, b.extent);
  }
  return true;
}

// An expression of one output dim at most, as a table over that dim's coordinates (dim -1: a
// constant, one entry).
struct AxisTable {
  int dim = -1;
  std::vector<int64_t> values;
  int64_t at(const std::vector<int64_t>& o) const {
    return values[dim < 0 ? 0 : static_cast<size_t>(o[static_cast<size_t>(dim)])];
  }
};

std::optional<AxisTable> tabulate(const IndexMap& m, IndexEvaluator& ev, IndexId e,
                                  const Shape& out) {
  const uint64_t dims = index_dims(m, e);
  if (dims & (dims - 1)) return std::nullopt;  // more than one dim
  AxisTable t;
  std::vector<int64_t> o(out.size(), 0);
  if (dims == 0) {
    ev.bind(o);
    t.values = {ev.eval(e, o)};
    return t;
  }
  t.dim = std::countr_zero(dims);
  for (int64_t c = 0; c < out[static_cast<size_t>(t.dim)]; ++c) {
    o[static_cast<size_t>(t.dim)] = c;
    ev.bind(o);  // temporaries of other dims see 0 there, and e reads none of them
    t.values.push_back(ev.eval(e, o));
  }
  return t;
}

// A region whose condition is a conjunction of terms and whose source coordinates each read
// one output dim at most (Tile, Pad): tables per dim.
struct AxisRegion {
  std::vector<AxisTable> when;  // all non-zero: the region holds
  int input = 0;
  std::vector<AxisTable> coords;
};

std::optional<std::vector<AxisRegion>> axis_regions(const IndexMap& m, const Shape& out) {
  IndexEvaluator ev(m);
  std::vector<AxisRegion> regions;
  for (const IndexMap::Region& r : m.regions()) {
    AxisRegion a;
    a.input = r.source.input;
    std::vector<IndexId> terms;
    if (r.when != IndexMap::kAlways)
      terms = m.at(r.when).op == IndexOp::And ? m.at(r.when).args : std::vector<IndexId>{r.when};
    for (IndexId t : terms) {
      std::optional<AxisTable> tab = tabulate(m, ev, t, out);
      if (!tab) return std::nullopt;
      a.when.push_back(std::move(*tab));
    }
    for (IndexId c : r.source.coords) {
      std::optional<AxisTable> tab = tabulate(m, ev, c, out);
      if (!tab) return std::nullopt;
      a.coords.push_back(std::move(*tab));
    }
    regions.push_back(std::move(a));
  }
  return regions;
}

// Copies y element by element: locate(o, src) gives the input element o comes from (kZero:
// zero) and writes its coordinates to src.
template <typename Locate>
void copy_located(const std::vector<const Tensor*>& in, Tensor& y, Locate&& locate) {
  const size_t es = dtype_size(y.dtype());
  const std::vector<unsigned char> zero(es, 0);
  const Shape& out = y.shape();
  std::vector<int64_t> o(out.size(), 0), src;
  unsigned char* dp = bytes(y);
  for (int64_t k = 0, n = y.numel(); k < n; ++k) {
    const int input = locate(o, src);
    const unsigned char* from = zero.data();
    if (input != IndexSource::kZero) {
      const Tensor& x = *in.at(static_cast<size_t>(input));
      int64_t at = 0;
      for (size_t d = 0; d < src.size(); ++d) {
        const int64_t size = x.shape()[d];
        if (src[d] < 0 || src[d] >= size)
          throw InternalError(
              fmt::format("index map reads coordinate {} of dim {} of size {}", src[d], d, size));
        at = at * size + src[d];
      }
      from = bytes(x) + static_cast<size_t>(at) * es;
    }
    std::memcpy(dp + static_cast<size_t>(k) * es, from, es);
    for (size_t d = out.size(); d-- > 0;) {
      if (++o[d] < out[d]) break;
      o[d] = 0;
    }
  }
}

// Through per-dim tables; false (nothing written) where the map's expressions read several
// output dims at once (DepthToSpace's channel).
bool copy_by_axes(const IndexMap& m, const std::vector<const Tensor*>& in, Tensor& y) {
  if (y.shape().size() > 64) return false;
  std::optional<std::vector<AxisRegion>> regions = axis_regions(m, y.shape());
  if (!regions) return false;
  copy_located(in, y, [&](const std::vector<int64_t>& o, std::vector<int64_t>& src) {
    for (const AxisRegion& a : *regions) {
      if (!std::all_of(a.when.begin(), a.when.end(), [&](const AxisTable& t) { return t.at(o); }))
        continue;
      src.resize(a.coords.size());
      for (size_t d = 0; d < src.size(); ++d) src[d] = a.coords[d].at(o);
      return a.input;
    }
    throw InternalError("index map: no region holds the element");
  });
  return true;
}

// Each output coordinate through the evaluator.
void copy_elements(const IndexMap& m, const std::vector<const Tensor*>& in, Tensor& y) {
  IndexEvaluator ev(m);
  copy_located(in, y, [&](const std::vector<int64_t>& o, std::vector<int64_t>& src) {
    return ev.locate(o, src).input;
  });
}

}  // namespace

IndexMapArgs index_map_args(RefCtx& ctx, size_t output) {
  IndexMapArgs a{ctx.node(), {}, {}, {}, ctx.output(output).shape(), output};
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const bool has = ctx.has_input(i);
    a.present.push_back(has);
    a.shapes.push_back(has ? ctx.input(i).shape() : Shape{});
    a.values.push_back(has ? &ctx.input(i) : nullptr);
  }
  return a;
}

void index_map_reference(RefCtx& ctx) {
  std::vector<const Tensor*> in;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    in.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
  for (size_t o = 0; o < ctx.num_outputs(); ++o) {
    if (!ctx.has_output(o)) continue;
    Tensor& y = ctx.output(o);
    // Nothing to copy; a zero-size output may still be huge along one dim (no tables).
    if (y.numel() == 0) continue;
    const IndexMap m = ctx.node().op->index_map(index_map_args(ctx, o));
    if (m.same_order) {
      if (y.nbytes()) std::memcpy(y.raw(), in.at(0)->raw(), y.nbytes());
    } else if (!copy_boxes(m, in, y) && !copy_by_axes(m, in, y)) {
      copy_elements(m, in, y);
    }
  }
}

}  // namespace braze::graph
