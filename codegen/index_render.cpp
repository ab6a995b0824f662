#include "codegen/index_render.h"

#include <braze/error.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "graph/ir.h"

namespace braze::codegen {
namespace {

using graph::IndexId;
using graph::IndexMap;
using graph::IndexNode;
using graph::IndexOp;
using graph::IndexSource;

// Bounds of an index expression's values over the output's coordinates, saturating at ±2^62
// (anything out of 32 bits is as good as unbounded here).
struct Span {
  int64_t lo, hi;
};
constexpr int64_t kWide = int64_t{1} << 62;
constexpr Span kAny{-kWide, kWide};

int64_t clamp_wide(__int128 v) {
  return static_cast<int64_t>(v < -kWide ? -kWide : v > kWide ? kWide : v);
}

// Within ±2^30, half of int's range: a coordinate a kernel computes past its tensor's end (a
// tile's edge, masked afterwards) stays far from wrapping.
bool fits_32_bits(const Span& s) {
  constexpr int64_t kLimit = int64_t{1} << 30;
  return s.lo > -kLimit && s.hi < kLimit;
}

// `memo` holds the spans found so far, by node (a map is a DAG: its temporaries and shared
// operands are visited once).
Span span_of(const IndexMap& m, IndexId id, const Shape& out,
             std::vector<std::optional<Span>>& memo);

Span span_uncached(const IndexMap& m, IndexId id, const Shape& out,
                   std::vector<std::optional<Span>>& memo) {
  const IndexNode& n = m.at(id);
  auto arg = [&](size_t k) { return span_of(m, n.args.at(k), out, memo); };
  switch (n.op) {
    case IndexOp::Coord: {
      const size_t d = static_cast<size_t>(n.value);
      return d < out.size() ? Span{0, std::max<int64_t>(out[d] - 1, 0)} : kAny;
    }
    case IndexOp::Const:
      return Span{n.value, n.value};
    case IndexOp::Temp:
      return span_of(m, m.temps().at(static_cast<size_t>(n.value)), out, memo);
    case IndexOp::Add: {
      const Span a = arg(0), b = arg(1);
      return Span{clamp_wide(__int128{a.lo} + b.lo), clamp_wide(__int128{a.hi} + b.hi)};
    }
    case IndexOp::Sub: {
      const Span a = arg(0), b = arg(1);
      return Span{clamp_wide(__int128{a.lo} - b.hi), clamp_wide(__int128{a.hi} - b.lo)};
    }
    case IndexOp::Mul: {
      const Span a = arg(0), b = arg(1);
      const __int128 p[4] = {__int128{a.lo} * b.lo, __int128{a.lo} * b.hi, __int128{a.hi} * b.lo,
                             __int128{a.hi} * b.hi};
      return Span{clamp_wide(*std::min_element(p, p + 4)), clamp_wide(*std::max_element(p, p + 4))};
    }
    case IndexOp::Div: {  // C's truncating division, monotone in the dividend for c > 0
      const Span a = arg(0), b = arg(1);
      if (b.lo != b.hi || b.lo <= 0) return kAny;
      return Span{a.lo / b.lo, a.hi / b.lo};
    }
    case IndexOp::Mod: {
      const Span a = arg(0), b = arg(1);
      if (b.lo != b.hi || b.lo <= 0) return kAny;
      return a.lo >= 0 ? Span{0, std::min(a.hi, b.lo - 1)} : Span{1 - b.lo, b.lo - 1};
    }
    case IndexOp::Lt:
    case IndexOp::Ge:
    case IndexOp::And:
      return Span{0, 1};
    case IndexOp::Select: {
      const Span a = arg(1), b = arg(2);
      return Span{std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case IndexOp::Linearize: {
      Span r{0, 0};
      for (size_t k = 0; k < n.args.size(); ++k) {
        const Span a = n.shape[k] == 1 ? Span{0, 0} : arg(k);
        r = Span{clamp_wide(__int128{r.lo} * n.shape[k] + a.lo),
                 clamp_wide(__int128{r.hi} * n.shape[k] + a.hi)};
      }
      return r;
    }
  }
  return kAny;
}

Span span_of(const IndexMap& m, IndexId id, const Shape& out,
             std::vector<std::optional<Span>>& memo) {
  const size_t i = static_cast<size_t>(id);
  if (i >= memo.size()) memo.resize(i + 1);
  if (!memo[i]) memo[i] = span_uncached(m, id, out, memo);
  return *memo[i];
}

// Expressions of one map in one kernel: `long long` CUDA text over the output coordinates,
// the map's temporaries bound to locals first. A division or remainder by a positive constant
// whose dividend stays within 32 bits over the output's coordinates divides in 32 bits: C's
// truncation gives the same quotient, and a 64-bit division by a constant is a dozen
// instructions or more where a 32-bit one is three or four (an Im2Col's window arithmetic
// was most of the ResNet-50 stem's 143 us).
class IndexRenderer {
 public:
  IndexRenderer(CudaIndexCtx& ctx, const IndexMap& m) : ctx_(ctx), m_(m) {
    for (IndexId t : m.temps()) temps_.push_back(ctx.let("long long", expr(t)));
  }

  std::string expr(IndexId id) const {
    const IndexNode& n = m_.at(id);
    auto a = [&](size_t k) { return expr(n.args.at(k)); };
    switch (n.op) {
      case IndexOp::Coord:
        return ctx_.coord(static_cast<size_t>(n.value));
      case IndexOp::Const:
        return fmt::format("{}LL", n.value);
      case IndexOp::Temp:
        return temps_.at(static_cast<size_t>(n.value));
      case IndexOp::Add:
        return fmt::format("({} + {})", a(0), a(1));
      case IndexOp::Sub:
        return fmt::format("({} - {})", a(0), a(1));
      case IndexOp::Mul:
        return fmt::format("({} * {})", a(0), a(1));
      case IndexOp::Div:
      case IndexOp::Mod: {
        const char* op = n.op == IndexOp::Div ? "/" : "%";
        if (narrow_divisor(n))
          return fmt::format("((long long)((int)({}) {} {}))", a(0), op, m_.at(n.args[1]).value);
        return fmt::format("({} {} {})", a(0), op, a(1));
      }
      case IndexOp::Lt:
        return fmt::format("({} < {})", a(0), a(1));
      case IndexOp::Ge:
        return fmt::format("({} >= {})", a(0), a(1));
      case IndexOp::And: {
        std::vector<std::string> parts;
        for (size_t k = 0; k < n.args.size(); ++k) parts.push_back(a(k));
        return fmt::format("({})", fmt::join(parts, " && "));
      }
      case IndexOp::Select:
        return fmt::format("({} ? {} : {})", a(0), a(1), a(2));
      case IndexOp::Linearize: {
        std::vector<std::string> coords;
        for (size_t k = 0; k < n.args.size(); ++k) coords.push_back(a(k));
        return cuda_linearize(coords, n.shape);
      }
    }
    throw InternalError("index map: unknown op");
  }

  // The element from region k on: a load where the region holds, else the next region's.
  std::string from(size_t k) {
    const IndexMap::Region& r = m_.regions().at(k);
    if (r.when == IndexMap::kAlways) return load(r.source);
    return ctx_.select(
        expr(r.when), cuda_compute_type(ctx_.in_dtype(0)), [&] { return load(r.source); },
        [&] { return from(k + 1); });
  }

 private:
  // Whether Div / Mod node n divides by a positive constant a dividend within 32 bits.
  bool narrow_divisor(const IndexNode& n) const {
    const IndexNode& b = m_.at(n.args[1]);
    return b.op == IndexOp::Const && b.value > 0 && b.value <= INT32_MAX &&
           fits_32_bits(span_of(m_, n.args[0], ctx_.out_shape(), spans_));
  }

  std::string load(const IndexSource& s) {
    if (s.input == IndexSource::kZero) return cuda_literal(compute_type(ctx_.in_dtype(0)), 0);
    std::vector<std::string> coords;
    for (IndexId c : s.coords) coords.push_back(expr(c));
    return ctx_.load(static_cast<size_t>(s.input), coords);
  }

  CudaIndexCtx& ctx_;
  const IndexMap& m_;
  std::vector<std::string> temps_;
  mutable std::vector<std::optional<Span>> spans_;
};

// The forward map of a same-order op: flat offset in the input, unravelled in the output.
// The dims it leaves alone at either end keep their coordinates, and only those between are
// linearised and unravelled: [1024, 2304] -> [8, 128, 2304] maps (i, j) to (i / 128, i % 128,
// j), not to three divisions of i * 2304 + j (a GEMM epilogue computes them for every
// element, and a bias indexed by j needs no division at all).
std::vector<std::string> same_order_forward(const std::vector<std::string>& in,
                                            const Shape& in_shape, const Shape& out_shape) {
  const size_t ni = in_shape.size(), no = out_shape.size();
  size_t p = 0, s = 0;
  while (p < ni && p < no && in_shape[p] == out_shape[p]) ++p;
  while (s < ni - p && s < no - p && in_shape[ni - 1 - s] == out_shape[no - 1 - s]) ++s;
  std::vector<std::string> out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(p));
  const std::vector<std::string> mid_in(in.begin() + static_cast<std::ptrdiff_t>(p),
                                        in.end() - static_cast<std::ptrdiff_t>(s));
  const Shape in_mid(in_shape.begin() + static_cast<std::ptrdiff_t>(p),
                     in_shape.end() - static_cast<std::ptrdiff_t>(s));
  const Shape out_mid(out_shape.begin() + static_cast<std::ptrdiff_t>(p),
                      out_shape.end() - static_cast<std::ptrdiff_t>(s));
  for (std::string& c : cuda_unravel(cuda_linearize(mid_in, in_mid), out_mid))
    out.push_back(std::move(c));
  out.insert(out.end(), in.end() - static_cast<std::ptrdiff_t>(s), in.end());
  return out;
}

}  // namespace

graph::IndexMapArgs index_map_args(const CudaIndexCtx& ctx) {
  graph::IndexMapArgs a{ctx.node(), {}, {}, {}, ctx.out_shape(), ctx.output_index()};
  for (size_t i = 0; i < ctx.node().inputs.size(); ++i) {
    const bool has = ctx.has_input(i);
    a.present.push_back(has);
    a.shapes.push_back(has ? ctx.in_shape(i) : Shape{});
    a.values.push_back(has ? ctx.in_value(i) : nullptr);
  }
  return a;
}

std::string render_index_map(CudaIndexCtx& ctx, const IndexMap& m) {
  IndexRenderer r(ctx, m);
  return r.from(0);
}

std::vector<std::string> forward_coords(const IndexMap& m, const std::vector<std::string>& in,
                                        const Shape& in_shape, const Shape& out_shape) {
  if (m.same_order) return same_order_forward(in, in_shape, out_shape);
  std::optional<std::vector<int64_t>> perm = m.permutation();
  if (!perm || perm->size() != in.size() || in.size() != out_shape.size())
    throw InternalError("forward_coords: the index map neither permutes nor keeps order");
  std::vector<std::string> out(in.size());
  for (size_t j = 0; j < in.size(); ++j) out.at(static_cast<size_t>((*perm)[j])) = in[j];
  return out;
}

}  // namespace braze::codegen
