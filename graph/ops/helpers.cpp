#include "graph/ops/helpers.h"

#include <algorithm>

#include <fmt/format.h>

namespace braze::graph::ops {

Shape broadcast_shapes(const InferCtx& ctx, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i];
      int64_t& o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::vector<std::string> strs;
      for (const Shape& x : shapes) strs.push_back(shape_str(x));
      ctx.fail(fmt::format("shapes {} cannot be broadcast together", fmt::join(strs, " and ")));
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  size_t off = out.size() - in.size();
  int64_t s = 1;
  for (size_t i = in.size(); i-- > 0;) {
    st[off + i] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return st;
}

std::vector<int64_t> normalize_axes(const InferCtx& ctx, std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) a = ctx.axis(a, rank);
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    ctx.fail(fmt::format("axes [{}] repeat an axis", fmt::join(axes, ",")));
  return axes;
}

void infer_same_as_input0(InferCtx& ctx) {
  ctx.set_dtype(0, ctx.dtype(0));
  ctx.set_shape(0, ctx.shape(0));
}

void set_const_input(Graph& g, NodeId n, size_t index, Tensor value) {
  std::string nm = g.unique_name(g.node(n).name + "_const" + std::to_string(index));
  ValueId v = g.add_constant(nm, std::move(value));
  Node& node = g.node(n);
  if (node.inputs.size() <= index) node.inputs.resize(index + 1, kNoValue);
  node.inputs[index] = v;
}

void move_attr_to_input(Graph& g, NodeId n, const std::string& attr, size_t index, DType dt) {
  Node& node = g.node(n);
  auto it = node.attrs.find(attr);
  if (it == node.attrs.end()) return;
  Tensor t;
  switch (attr_type(it->second)) {
    case AttrType::Int:
      t = Tensor(dt, {});
      t.set_i64(0, std::get<int64_t>(it->second));
      break;
    case AttrType::Float:
      t = Tensor(dt, {});
      t.set_f64(0, std::get<double>(it->second));
      break;
    case AttrType::Ints: {
      const auto& xs = std::get<std::vector<int64_t>>(it->second);
      t = Tensor(dt, {static_cast<int64_t>(xs.size())});
      for (size_t i = 0; i < xs.size(); ++i) t.set_i64(static_cast<int64_t>(i), xs[i]);
      break;
    }
    case AttrType::Floats: {
      const auto& xs = std::get<std::vector<double>>(it->second);
      t = Tensor(dt, {static_cast<int64_t>(xs.size())});
      for (size_t i = 0; i < xs.size(); ++i) t.set_f64(static_cast<int64_t>(i), xs[i]);
      break;
    }
    default:
      throw UserError(
          fmt::format("{}: attribute '{}' has an unexpected type", node.describe(), attr));
  }
  node.attrs.erase(it);
  set_const_input(g, n, index, std::move(t));
}

ReduceIndex reduce_index(const Shape& shape, const std::vector<bool>& reduced) {
  std::vector<int64_t> strides = contiguous_strides(shape);
  ReduceIndex ix;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<int64_t>& v = reduced[d] ? ix.inner : ix.outer;
    std::vector<int64_t> next;
    next.reserve(v.size() * static_cast<size_t>(shape[d]));
    for (int64_t base : v)
      for (int64_t i = 0; i < shape[d]; ++i) next.push_back(base + i * strides[d]);
    v = std::move(next);
  }
  return ix;
}

}  // namespace braze::graph::ops
