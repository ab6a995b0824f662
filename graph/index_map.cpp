#include "graph/index_map.h"

#include <braze/error.h>

#include <fmt/format.h>

#include "graph/ir.h"
#include "graph/registry.h"

namespace braze::graph {

IndexId IndexMap::node(IndexOp op, std::vector<IndexId> args, int64_t value) {
  for (IndexId a : args)
    if (a < 0 || static_cast<size_t>(a) >= nodes_.size())
      throw InternalError(fmt::format("index map: operand {} is not a node of this map", a));
  nodes_.push_back(IndexNode{op, value, std::move(args), {}});
  return static_cast<IndexId>(nodes_.size() - 1);
}

IndexId IndexMap::coord(size_t d) { return node(IndexOp::Coord, {}, static_cast<int64_t>(d)); }

IndexId IndexMap::lit(int64_t v) { return node(IndexOp::Const, {}, v); }

IndexId IndexMap::temp(IndexId e) {
  IndexId t = node(IndexOp::Temp, {}, static_cast<int64_t>(temps_.size()));
  temps_.push_back(e);
  return t;
}

IndexId IndexMap::linearize(std::vector<IndexId> coords, const Shape& shape) {
  if (coords.size() != shape.size())
    throw InternalError(fmt::format("index map: {} coordinates to linearise in shape {}",
                                    coords.size(), shape_str(shape)));
  IndexId id = node(IndexOp::Linearize, std::move(coords));
  nodes_.back().shape = shape;
  return id;
}

std::vector<IndexId> IndexMap::unravel(IndexId flat, const Shape& shape) {
  std::vector<IndexId> c(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) {
      c[d] = lit(0);
    } else {
      IndexId q = stride == 1 ? flat : div(flat, lit(stride));
      c[d] = d == 0 ? q : mod(q, lit(shape[d]));
    }
    stride *= shape[d];
  }
  return c;
}

std::vector<IndexId> IndexMap::coords(size_t rank) {
  std::vector<IndexId> c;
  for (size_t d = 0; d < rank; ++d) c.push_back(coord(d));
  return c;
}

void IndexMap::add_region(IndexId when, IndexSource source) {
  for (IndexId c : source.coords)
    if (c < 0 || static_cast<size_t>(c) >= nodes_.size())
      throw InternalError("index map: a source coordinate is not a node of this map");
  regions_.push_back(Region{when, std::move(source)});
}

std::optional<std::vector<int64_t>> IndexMap::permutation() const {
  if (regions_.size() != 1 || !temps_.empty() || regions_[0].source.input != 0) return std::nullopt;
  std::vector<int64_t> perm;
  for (IndexId c : regions_[0].source.coords) {
    if (at(c).op != IndexOp::Coord) return std::nullopt;
    perm.push_back(at(c).value);
  }
  return perm;
}

namespace {

// Elements [from, to) of v.
template <typename T>
std::vector<T> span(const std::vector<T>& v, size_t from, size_t to) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(from),
                        v.begin() + static_cast<std::ptrdiff_t>(to));
}

}  // namespace

// The dims the two shapes share at either end keep their coordinates; only those between are
// linearised and unravelled: [32, 56, 56, 144] read from [100352, 144] is (flat of the first
// three, c3), so a kernel indexing a bias by the last coordinate needs no division (a GEMM
// epilogue through such a Reshape computed (i * 144 + j) % 144 for every element).
IndexMap same_order_map(const Shape& in_shape, const Shape& out_shape) {
  IndexMap m;
  const size_t ni = in_shape.size(), no = out_shape.size();
  size_t p = 0, s = 0;
  while (p < ni && p < no && in_shape[p] == out_shape[p]) ++p;
  while (s < ni - p && s < no - p && in_shape[ni - 1 - s] == out_shape[no - 1 - s]) ++s;
  const std::vector<IndexId> out = m.coords(no);
  std::vector<IndexId> src = span(out, 0, p);
  if (p + s < ni) {
    const IndexId flat = m.temp(m.linearize(span(out, p, no - s), span(out_shape, p, no - s)));
    for (IndexId c : m.unravel(flat, span(in_shape, p, ni - s))) src.push_back(c);
  }
  for (size_t d = no - s; d < no; ++d) src.push_back(out[d]);
  m.add_region(IndexMap::kAlways, IndexSource{0, std::move(src)});
  m.same_order = true;
  return m;
}

std::vector<int64_t> IndexMapArgs::list(size_t i) const {
  if (i >= values.size() || !values[i])
    throw InternalError(
        fmt::format("{}: input {} is needed as a constant to map indices", node.describe(), i));
  return values[i]->to_int64s();
}

std::optional<std::vector<int64_t>> IndexMapArgs::opt_list(size_t i) const {
  if (!has(i)) return std::nullopt;
  return list(i);
}

int64_t IndexEvaluator::eval(IndexId id, const std::vector<int64_t>& out) const {
  const IndexNode& n = m_.at(id);
  auto arg = [&](size_t k) { return eval(n.args[k], out); };
  switch (n.op) {
    case IndexOp::Coord:
      return out.at(static_cast<size_t>(n.value));
    case IndexOp::Const:
      return n.value;
    case IndexOp::Temp:
      return temps_.at(static_cast<size_t>(n.value));
    case IndexOp::Add:
      return arg(0) + arg(1);
    case IndexOp::Sub:
      return arg(0) - arg(1);
    case IndexOp::Mul:
      return arg(0) * arg(1);
    case IndexOp::Div:
    case IndexOp::Mod: {
      int64_t a = arg(0), b = arg(1);
      if (b == 0) throw InternalError("index map: division by zero");
      return n.op == IndexOp::Div ? a / b : a % b;
    }
    case IndexOp::Lt:
      return arg(0) < arg(1);
    case IndexOp::Ge:
      return arg(0) >= arg(1);
    case IndexOp::And:
      for (size_t k = 0; k < n.args.size(); ++k)
        if (!arg(k)) return 0;
      return 1;
    case IndexOp::Select:
      return arg(0) ? arg(1) : arg(2);
    case IndexOp::Linearize: {
      int64_t flat = 0;
      for (size_t k = 0; k < n.args.size(); ++k)
        flat = flat * n.shape[k] + (n.shape[k] == 1 ? 0 : arg(k));
      return flat;
    }
  }
  throw InternalError("index map: unknown op");
}

void IndexEvaluator::bind(const std::vector<int64_t>& out) {
  for (size_t t = 0; t < temps_.size(); ++t) temps_[t] = eval(m_.temps()[t], out);
}

const IndexSource& IndexEvaluator::locate(const std::vector<int64_t>& out,
                                          std::vector<int64_t>& in) {
  bind(out);
  for (const IndexMap::Region& r : m_.regions()) {
    if (r.when != IndexMap::kAlways && !eval(r.when, out)) continue;
    in.resize(r.source.coords.size());
    for (size_t d = 0; d < in.size(); ++d) in[d] = eval(r.source.coords[d], out);
    return r.source;
  }
  throw InternalError("index map: no region holds the element");
}

uint64_t index_dims(const IndexMap& m, IndexId e) {
  const IndexNode& n = m.at(e);
  switch (n.op) {
    case IndexOp::Coord:
      if (n.value >= 64) throw InternalError("index map: more than 64 output dims");
      return uint64_t{1} << n.value;
    case IndexOp::Const:
      return 0;
    case IndexOp::Temp:
      return index_dims(m, m.temps().at(static_cast<size_t>(n.value)));
    default: {
      uint64_t d = 0;
      for (IndexId a : n.args) d |= index_dims(m, a);
      return d;
    }
  }
}

std::optional<AffineIndex> affine_index(const IndexMap& m, IndexId e, size_t rank) {
  const IndexNode& n = m.at(e);
  AffineIndex r{0, std::vector<int64_t>(rank, 0)};
  auto both = [&]() -> std::optional<std::pair<AffineIndex, AffineIndex>> {
    std::optional<AffineIndex> a = affine_index(m, n.args[0], rank);
    std::optional<AffineIndex> b = affine_index(m, n.args[1], rank);
    if (!a || !b) return std::nullopt;
    return std::pair{*a, *b};
  };
  auto is_const = [](const AffineIndex& a) {
    for (int64_t c : a.coeff)
      if (c) return false;
    return true;
  };
  switch (n.op) {
    case IndexOp::Coord:
      if (static_cast<size_t>(n.value) >= rank) return std::nullopt;
      r.coeff[static_cast<size_t>(n.value)] = 1;
      return r;
    case IndexOp::Const:
      r.offset = n.value;
      return r;
    case IndexOp::Temp:
      return affine_index(m, m.temps().at(static_cast<size_t>(n.value)), rank);
    case IndexOp::Add:
    case IndexOp::Sub: {
      auto ab = both();
      if (!ab) return std::nullopt;
      const int64_t s = n.op == IndexOp::Add ? 1 : -1;
      r.offset = ab->first.offset + s * ab->second.offset;
      for (size_t d = 0; d < rank; ++d) r.coeff[d] = ab->first.coeff[d] + s * ab->second.coeff[d];
      return r;
    }
    case IndexOp::Mul: {
      auto ab = both();
      if (!ab) return std::nullopt;
      auto [a, b] = *ab;
      if (!is_const(a) && !is_const(b)) return std::nullopt;
      if (!is_const(a)) std::swap(a, b);
      r.offset = a.offset * b.offset;
      for (size_t d = 0; d < rank; ++d) r.coeff[d] = a.offset * b.coeff[d];
      return r;
    }
    default:
      return std::nullopt;
  }
}

std::optional<IndexMapArgs> index_map_args(const Graph& g, const Node& n, size_t output) {
  IndexMapArgs a{n, {}, {}, {}, g.value(n.outputs.at(output)).shape, output};
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const bool has = n.has_input(i);
    const Value* v = has ? &g.value(n.inputs[i]) : nullptr;
    if (has && !v->constant && n.op->is_shape_input(static_cast<int>(i))) return std::nullopt;
    a.present.push_back(has);
    a.shapes.push_back(has ? v->shape : Shape{});
    a.values.push_back(has && v->constant ? &*v->constant : nullptr);
  }
  return a;
}

std::optional<Layout> layout_through(const IndexMap& m, const Layout& in, const Shape& out_shape) {
  if (m.same_order) return reshape_layout(in, out_shape);
  if (m.regions().size() != 1 || m.regions()[0].source.input != 0) return std::nullopt;
  const std::vector<IndexId>& coords = m.regions()[0].source.coords;
  const Shape in_shape = in.shape();
  if (coords.size() != in_shape.size()) return std::nullopt;
  std::optional<Layout> l = in;
  std::vector<int64_t> owner(out_shape.size(), -1);  // the input dim each output dim reads
  for (size_t d = 0; d < coords.size() && l; ++d) {
    std::optional<AffineIndex> a = affine_index(m, coords[d], out_shape.size());
    if (!a) return std::nullopt;
    std::vector<size_t> uses;
    for (size_t k = 0; k < out_shape.size(); ++k)
      if (a->coeff[k] != 0) uses.push_back(k);
    if (uses.empty()) {  // one element of dim d
      if (in_shape[d] != 1 || a->offset != 0) l = slice_layout(*l, d, a->offset, 1, 1);
      continue;
    }
    const size_t k = uses[0];
    if (uses.size() > 1 || owner[k] >= 0) return std::nullopt;
    owner[k] = static_cast<int64_t>(d);
    if (a->offset != 0 || a->coeff[k] != 1 || out_shape[k] != in_shape[d])
      l = slice_layout(*l, d, a->offset, out_shape[k], a->coeff[k]);
  }
  if (!l) return std::nullopt;
  Layout out;
  out.offset = l->offset;
  for (size_t k = 0; k < out_shape.size(); ++k) {
    if (owner[k] >= 0)
      out.dims.push_back(l->dims[static_cast<size_t>(owner[k])]);
    else if (out_shape[k] == 1)
      out.dims.push_back({});
    else
      out.dims.push_back({{out_shape[k], 0}});  // broadcast
  }
  return out;
}

std::optional<Layout> map_layout(const Graph& g, const Node& n, const Layout& in) {
  std::optional<IndexMapArgs> a = index_map_args(g, n, 0);
  if (!a) return std::nullopt;
  return layout_through(n.op->index_map(*a), in, a->out_shape);
}

}  // namespace braze::graph
