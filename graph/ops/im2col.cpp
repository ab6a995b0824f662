// Im2Col (domain "braze"): the windows a convolution reads, laid out as the right operand of its
// product with the weights. conv_as_matmul makes it (a Conv becomes W [M, C·K] times these
// columns, one product per image); a model cannot name it (OpDef::internal).
//
//   X [N, C, D1 … Dr] → Y [N, C·K, P]: K = the kernel's taps, P = the output's pixels, both
//   row-major; Y[n, c·K + k, p] = X[n, c, p_d·stride_d − pad_begin_d + k_d·dilation_d …], zero
//   where a tap falls in the padding.
//   transposed = 1 (a ConvTranspose's taps): Y[n, c·K + k, p] = X[n, c, i_d …] where
//   i_d·stride_d = p_d + pad_begin_d − k_d·dilation_d, zero where no such i_d is in X.
//   channels_last = 1 (the rows of a channels-last product): X [N, D1 … Dr, C] →
//   Y [N, P, K, C] with Y[n, p, k, c] = X[n, <tap k of window p>, c], zero in the padding: a
//   kernel copies runs of channels (vector loads where C allows). With `columns` = J > K·C,
//   Y [N, P, J] instead, Y[n, p, k·C + c] as before and zero past K·C: rows of whole 16-byte
//   units for the tensor cores' loads where K·C is not (ResNet's stem: 49 taps x 3 channels).
//
// An index map like the layout ops', so the reference copies through it and a fused kernel
// gathers through it.
#include <braze/error.h>

#include <fmt/format.h>

#include "graph/index_map.h"
#include "graph/ops/conv_pool.h"
#include "graph/ops/helpers.h"
#include "graph/ops/movement.h"
#include "graph/registry.h"

namespace braze::graph {
namespace {

using namespace ops;

IndexId scaled(IndexMap& m, IndexId e, int64_t s) { return s == 1 ? e : m.mul(e, m.lit(s)); }

// Input coordinate d of tap k of the window at output pixel p: p·stride − pad_begin +
// k·dilation, bounds added to `inside` only where a window reaches the padding.
IndexId tap_at(IndexMap& m, const WindowGeometry& g, size_t d, IndexId p, IndexId k,
               std::vector<IndexId>& inside) {
  const int64_t s = g.stride[d], dil = g.dilation[d], pb = g.pad_begin[d];
  const IndexId at = m.temp(m.add(m.sub(scaled(m, p, s), m.lit(pb)), scaled(m, k, dil)));
  if (pb > 0) inside.push_back(m.ge(at, m.lit(0)));
  if ((g.out[d] - 1) * s - pb + (g.kernel[d] - 1) * dil >= g.in[d])
    inside.push_back(m.lt(at, m.lit(g.in[d])));
  return at;
}

// X at `src` where every condition of `inside` holds, else zero.
IndexMap gathered(IndexMap m, std::vector<IndexId> src, const std::vector<IndexId>& inside) {
  if (inside.empty()) {
    m.add_region(IndexMap::kAlways, {0, std::move(src)});
    return m;
  }
  m.add_region(m.all(inside), {0, std::move(src)});
  m.add_region(IndexMap::kAlways, {IndexSource::kZero, {}});
  return m;
}

// Input coordinate d of a ConvTranspose tap: (p + pad_begin − k·dilation) / stride where that
// divides and lands in X (conditions added to `inside`).
IndexId transposed_tap(IndexMap& m, const WindowGeometry& g, size_t d, IndexId p, IndexId k,
                       std::vector<IndexId>& inside) {
  const int64_t s = g.stride[d];
  const IndexId num = m.temp(m.sub(m.add(p, m.lit(g.pad_begin[d])), scaled(m, k, g.dilation[d])));
  inside.push_back(m.ge(num, m.lit(0)));
  if (s > 1) inside.push_back(m.lt(m.mod(num, m.lit(s)), m.lit(1)));
  const IndexId at = s > 1 ? m.temp(m.div(num, m.lit(s))) : num;
  inside.push_back(m.lt(at, m.lit(g.in[d])));
  return at;
}

// X [N, D1 … Dr, C] as [N, C, D1 … Dr], the order the window attributes are given in.
Shape channels_first(const Shape& x) {
  Shape s = {x.at(0), x.back()};
  s.insert(s.end(), x.begin() + 1, x.end() - 1);
  return s;
}

// Width of a channels-last row: `columns` where given (at least taps · C), else taps · C.
int64_t row_width(const Node& node, int64_t taps_by_channels) {
  const int64_t j = node.attr_int("columns");
  if (j < 0 || (j != 0 && j < taps_by_channels))
    throw UserError(fmt::format("{}: columns {} is less than the {} taps times channels",
                                node.describe(), j, taps_by_channels));
  return j == 0 ? taps_by_channels : j;
}

IndexMap channels_last_map(const IndexMapArgs& a) {
  const Shape& x = a.shapes.at(0);
  const WindowGeometry g = im2col_windows(a.node, x);
  const int64_t c = x.back(), taps = checked_numel(g.kernel);
  const bool rows = a.node.attr_int("columns") != 0;
  IndexMap m;
  const std::vector<IndexId> o = m.coords(rows ? 3 : 4);
  const IndexId tap = rows ? m.temp(m.div(o[2], m.lit(c))) : o[2];
  const IndexId channel = rows ? m.temp(m.mod(o[2], m.lit(c))) : o[3];
  const std::vector<IndexId> k = m.unravel(tap, g.kernel);
  const std::vector<IndexId> p = m.unravel(o[1], g.out);
  std::vector<IndexId> src = {o[0]}, inside;
  if (row_width(a.node, taps * c) > taps * c) inside.push_back(m.lt(o[2], m.lit(taps * c)));
  for (size_t d = 0; d < g.rank(); ++d) src.push_back(tap_at(m, g, d, p[d], k[d], inside));
  src.push_back(channel);
  return gathered(std::move(m), std::move(src), inside);
}

IndexMap im2col_map(const IndexMapArgs& a) {
  if (a.node.attr_int("channels_last") != 0) return channels_last_map(a);
  const Shape& x = a.shapes.at(0);
  const WindowGeometry g = im2col_geometry(a.node, x);
  const bool transposed = a.node.attr_int("transposed") != 0;
  const int64_t taps = checked_numel(g.kernel);
  IndexMap m;
  const std::vector<IndexId> o = m.coords(3);
  const std::vector<IndexId> k = m.unravel(m.temp(m.mod(o[1], m.lit(taps))), g.kernel);
  const std::vector<IndexId> p = m.unravel(o[2], g.out);
  std::vector<IndexId> src = {o[0], m.temp(m.div(o[1], m.lit(taps)))}, inside;
  for (size_t d = 0; d < g.rank(); ++d) {
    if (transposed) {
      src.push_back(transposed_tap(m, g, d, p[d], k[d], inside));
      continue;
    }
    src.push_back(tap_at(m, g, d, p[d], k[d], inside));
  }
  return gathered(std::move(m), std::move(src), inside);
}

}  // namespace

WindowGeometry im2col_windows(const Node& node, const Shape& x) {
  return im2col_geometry(node, node.attr_int("channels_last") != 0 ? channels_first(x) : x);
}

OpDef im2col_op() {
  OpDef d;
  d.name = "Im2Col";
  d.domain = "braze";
  d.internal = true;
  d.kind = FusionKind::Injective;
  d.types = kFloatTypes;
  d.attrs = {attr_s("auto_pad", "NOTSET"),
             attr_i("channels_last", 0),
             attr_i("columns", 0),
             attr_opt("dilations", AttrType::Ints),
             attr_req("kernel_shape", AttrType::Ints),
             attr_opt("output_spatial", AttrType::Ints),
             attr_opt("pads", AttrType::Ints),
             attr_opt("strides", AttrType::Ints),
             attr_i("transposed", 0)};
  d.infer = [](InferCtx& ctx) {
    const Shape& x = ctx.shape(0);
    const Node& node = ctx.node();
    const bool last = node.attr_int("channels_last") != 0;
    if (last && node.attr_int("transposed") != 0)
      ctx.fail("channels_last and transposed cannot both be set");
    if (!last && node.attr_int("columns") != 0) ctx.fail("columns is for channels_last only");
    const WindowGeometry g = im2col_windows(node, x);
    const std::string what = node.describe() + " output";
    const int64_t c = last ? x.back() : x[1];
    const int64_t taps = checked_numel(g.kernel, what);
    const int64_t k = checked_numel({c, taps}, what), p = checked_numel(g.out, what);
    const Shape out = !last                           ? Shape{x[0], k, p}
                      : node.attr_int("columns") != 0 ? Shape{x[0], p, row_width(node, k)}
                                                      : Shape{x[0], p, taps, c};
    checked_numel(out, what);
    ctx.set_dtype(0, ctx.dtype(0));
    ctx.set_shape(0, out);
  };
  d.index_map = im2col_map;
  d.reference = index_map_reference;
  return d;
}

}  // namespace braze::graph
