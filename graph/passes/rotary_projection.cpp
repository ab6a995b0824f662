#include "graph/passes/rotary_projection.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "graph/column_pairs.h"
#include "graph/op_context.h"
#include "graph/ops/movement.h"
#include "graph/parallel.h"
#include "graph/passes/split_to_slices.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

bool is_op(const Node& n, const char* name) { return n.op->name == name && n.op->domain.empty(); }

// The only consumer of v (no graph output), else kNoNode.
NodeId sole_user(const Graph& g, const Users& users, ValueId v) {
  if (users[v].size() != 1 || g.is_graph_output(v)) return kNoNode;
  return users[v][0];
}

// The constant operand of binary node n whose other operand is x, else kNoValue.
ValueId constant_beside(const Graph& g, const Node& n, ValueId x) {
  if (n.inputs.size() != 2) return kNoValue;
  const ValueId other = n.inputs[0] == x ? n.inputs[1] : n.inputs[1] == x ? n.inputs[0] : kNoValue;
  return other != kNoValue && other != x && g.value(other).constant ? other : kNoValue;
}

// A table over (s, d) of T [B, h, S, D]: a constant of T's type whose shape, aligned right, is
// [S, D] with ones before.
bool position_table(const Graph& g, ValueId c, const Shape& t, DType dt) {
  const Value& v = g.value(c);
  if (!v.constant || v.dtype != dt || v.shape.size() < 2 || v.shape.size() > t.size()) return false;
  const size_t r = v.shape.size();
  if (v.shape[r - 1] != t.back() || v.shape[r - 2] != t[t.size() - 2]) return false;
  return std::all_of(v.shape.begin(), v.shape.end() - 2, [](int64_t s) { return s == 1; });
}

// rotate_half as written out: out = T · cos + Concat(−T[…, D/2:], T[…, :D/2]) · sin.
struct Rotation {
  ValueId out = kNoValue, cos = kNoValue, sin = kNoValue;
};
std::optional<Rotation> match_rotation(const Graph& g, const Users& users, ValueId t) {
  const Value& tv = g.value(t);
  const int64_t d = tv.shape.back();
  if (users[t].size() != 3 || g.is_graph_output(t) || d % 2 != 0) return std::nullopt;
  NodeId mul_cos = kNoNode, lo = kNoNode, hi = kNoNode;
  Rotation r;
  for (NodeId u : users[t]) {
    const Node& n = g.node(u);
    if (is_op(n, "Mul") && constant_beside(g, n, t) != kNoValue && mul_cos == kNoNode) {
      mul_cos = u;
      r.cos = constant_beside(g, n, t);
      continue;
    }
    const std::optional<AxisRange> s = last_axis_slice(g, n);
    if (!s || n.inputs[0] != t || s->step != 1 || s->size != d / 2) return std::nullopt;
    if (s->start == 0 && lo == kNoNode)
      lo = u;
    else if (s->start == d / 2 && hi == kNoNode)
      hi = u;
    else
      return std::nullopt;
  }
  if (mul_cos == kNoNode || lo == kNoNode || hi == kNoNode) return std::nullopt;
  const NodeId neg = sole_user(g, users, g.node(hi).outputs[0]);
  if (neg == kNoNode || !is_op(g.node(neg), "Neg")) return std::nullopt;
  const NodeId cat = sole_user(g, users, g.node(neg).outputs[0]);
  if (cat == kNoNode || sole_user(g, users, g.node(lo).outputs[0]) != cat) return std::nullopt;
  const Node& cn = g.node(cat);
  const int64_t rank = static_cast<int64_t>(tv.shape.size());
  if (!is_op(cn, "Concat") || cn.inputs.size() != 2 || cn.inputs[0] != g.node(neg).outputs[0] ||
      cn.inputs[1] != g.node(lo).outputs[0] ||
      (cn.attr_int("axis") != -1 && cn.attr_int("axis") != rank - 1))
    return std::nullopt;
  const NodeId mul_sin = sole_user(g, users, cn.outputs[0]);
  if (mul_sin == kNoNode || !is_op(g.node(mul_sin), "Mul")) return std::nullopt;
  r.sin = constant_beside(g, g.node(mul_sin), cn.outputs[0]);
  const NodeId add = sole_user(g, users, g.node(mul_cos).outputs[0]);
  if (r.sin == kNoValue || add == kNoNode || !is_op(g.node(add), "Add") ||
      sole_user(g, users, g.node(mul_sin).outputs[0]) != add)
    return std::nullopt;
  if (!position_table(g, r.cos, tv.shape, tv.dtype) ||
      !position_table(g, r.sin, tv.shape, tv.dtype))
    return std::nullopt;
  r.out = g.node(add).outputs[0];
  if (g.value(r.out).shape != tv.shape) return std::nullopt;
  return r;
}

// One group of heads of the product: columns [start, start + heads · D), viewed as
// T [B, heads, S, D], rotated or not.
struct HeadGroup {
  int64_t start = 0, heads = 0;
  ValueId t = kNoValue;
  std::optional<Rotation> rot;
};

// y [B, S, n] → Reshape [B, S, h, D] → Transpose perm [0, 2, 1, 3]: T, else kNoValue.
ValueId heads_view(const Graph& g, const Users& users, ValueId y, int64_t* heads, int64_t* d) {
  const Shape& ys = g.value(y).shape;
  const NodeId r = sole_user(g, users, y);
  if (r == kNoNode || !is_op(g.node(r), "Reshape") || g.node(r).inputs[0] != y) return kNoValue;
  const Shape& rs = g.value(g.node(r).outputs[0]).shape;
  if (rs.size() != 4 || rs[0] != ys[0] || rs[1] != ys[1]) return kNoValue;
  const NodeId tr = sole_user(g, users, g.node(r).outputs[0]);
  if (tr == kNoNode || !is_op(g.node(tr), "Transpose") ||
      transpose_perm(g.node(tr), 4) != std::vector<int64_t>{0, 2, 1, 3})
    return kNoValue;
  *heads = rs[2];
  *d = rs[3];
  return g.node(tr).outputs[0];
}

// The product's value y (rank 3, [B, S, n]) as head groups in column order, each viewed
// as heads and at least one rotated, all by the same tables; else empty.
std::vector<HeadGroup> head_groups(const Graph& g, const Users& users, ValueId y, int64_t* d) {
  const int64_t n = g.value(y).shape.back();
  std::vector<std::pair<int64_t, ValueId>> parts;  // column start, the part's value
  if (users[y].size() == 1 && is_op(g.node(users[y][0]), "Reshape")) {
    parts.emplace_back(0, y);
  } else {
    for (NodeId u : users[y]) {
      const std::optional<AxisRange> s = last_axis_slice(g, g.node(u));
      if (!s || g.node(u).inputs[0] != y || s->step != 1) return {};
      parts.emplace_back(s->start, g.node(u).outputs[0]);
    }
    std::sort(parts.begin(), parts.end());
  }
  std::vector<HeadGroup> groups;
  int64_t at = 0;
  *d = 0;
  for (const auto& [start, v] : parts) {
    HeadGroup h;
    int64_t hd = 0;
    h.start = start;
    h.t = heads_view(g, users, v, &h.heads, &hd);
    if (h.t == kNoValue || start != at || (*d != 0 && hd != *d) || hd % 2 != 0) return {};
    *d = hd;
    at += h.heads * hd;
    h.rot = match_rotation(g, users, h.t);
    groups.push_back(h);
  }
  if (at != n || groups.empty()) return {};
  const HeadGroup* first = nullptr;
  for (const HeadGroup& h : groups) {
    if (!h.rot) continue;
    if (!first) {
      first = &h;
      continue;
    }
    for (auto table : {&Rotation::cos, &Rotation::sin}) {
      const ValueId a = (*first->rot).*table, b = (*h.rot).*table;
      if (a != b && !g.value(a).constant->bitwise_equal(*g.value(b).constant)) return {};
    }
  }
  return first ? groups : std::vector<HeadGroup>{};
}

// Column p · D/2 + t of each head moved to 2t + p, in every row of `rows` x n elements (rows
// in parallel: a 7B model's merged Q, K, V weight is 50 M elements).
Tensor interleave_heads(const Tensor& w, int64_t rows, int64_t d) {
  Tensor out = Tensor::uninitialized(w.dtype(), w.shape());  // every byte written below
  const int64_t n = w.numel() / rows, half = d / 2;
  const size_t es = dtype_size(w.dtype());
  const auto* src = static_cast<const char*>(w.raw());
  auto* dst = static_cast<char*>(out.raw());
  parallel_for(static_cast<size_t>(rows), [&](size_t row) {
    const int64_t r = static_cast<int64_t>(row);
    for (int64_t c = 0; c < n; ++c) {
      const int64_t head = c / d, t = (c % d) / 2, p = c % 2;
      std::memcpy(dst + static_cast<size_t>(r * n + c) * es,
                  src + static_cast<size_t>(r * n + head * d + p * half + t) * es, es);
    }
  });
  return out;
}

// cos' and sin' [1, 1, S, D] from the tables over (s, d): cos'[s, 2t + p] = cos[s, p·D/2 + t];
// sin'[s, 2t] = −sin[s, t], sin'[s, 2t + 1] = sin[s, D/2 + t] (rotate_half's sign).
Tensor interleave_table(const Tensor& table, int64_t s, int64_t d, bool signed_sin) {
  Tensor out(table.dtype(), Shape{1, 1, s, d});
  const int64_t half = d / 2;
  for (int64_t i = 0; i < s; ++i)
    for (int64_t c = 0; c < d; ++c) {
      const int64_t t = c / 2, p = c % 2;
      const double v = table.get_f64(i * d + p * half + t);
      out.set_f64(i * d + c, signed_sin && p == 0 ? -v : v);
    }
  return out;
}

ValueId add_op(Graph& g, const char* op_name, const std::string& name, std::vector<ValueId> ins,
               Attributes attrs = {}, int opset = 13) {
  const Value& x = g.value(ins[0]);
  const ValueId y = g.add_value(g.unique_name(name), x.dtype, x.shape);
  infer_node(g, g.add_node(&op(op_name), name, std::move(ins), {y}, std::move(attrs), opset));
  return y;
}

ValueId reshaped(Graph& g, ValueId x, const Shape& to, const std::string& name) {
  const ValueId s = g.add_constant(g.unique_name(name + "_shape"),
                                   Tensor::from_int64s(to, {static_cast<int64_t>(to.size())}));
  return add_op(g, "Reshape", name, {x, s}, {}, 14);
}

ValueId transposed(Graph& g, ValueId x, std::vector<int64_t> perm, const std::string& name) {
  Attributes a;
  a["perm"] = AttrValue(std::move(perm));
  return add_op(g, "Transpose", name, {x}, std::move(a));
}

void rewrite(Graph& g, NodeId mm_id, NodeId bias_add, const std::vector<HeadGroup>& groups,
             int64_t d) {
  const Node mm = g.node(mm_id);  // a copy: adding nodes may move the graph's
  const std::string base = mm.name + "_rotary";
  const Shape ys = g.value(mm.outputs[0]).shape;
  const int64_t b = ys[0], s = ys[1], n = ys[2], heads = n / d;
  const Tensor& w = *g.value(mm.inputs[1]).constant;
  const ValueId w2 =
      g.add_constant(g.unique_name(base + "_weight"), interleave_heads(w, w.shape()[0], d));
  ValueId y = add_op(g, "MatMul", base, {mm.inputs[0], w2});
  if (bias_add != kNoNode) {
    const Node add = g.node(bias_add);
    const ValueId bias = add.inputs[0] == mm.outputs[0] ? add.inputs[1] : add.inputs[0];
    const ValueId b2 = g.add_constant(g.unique_name(base + "_bias"),
                                      interleave_heads(*g.value(bias).constant, 1, d));
    y = add_op(g, "Add", base + "_bias_add", {y, b2}, {}, 14);
  }
  const ValueId t = transposed(g, reshaped(g, y, {b, s, heads, d}, base + "_heads"), {0, 2, 1, 3},
                               base + "_heads_first");
  const Rotation& rot =
      *std::find_if(groups.begin(), groups.end(), [](const HeadGroup& h) { return h.rot; })->rot;
  const ValueId cos = g.add_constant(g.unique_name(base + "_cos"),
                                     interleave_table(*g.value(rot.cos).constant, s, d, false));
  const ValueId sin = g.add_constant(g.unique_name(base + "_sin"),
                                     interleave_table(*g.value(rot.sin).constant, s, d, true));
  const ValueId tc = add_op(g, "Mul", base + "_cos_mul", {t, cos}, {}, 14);
  const ValueId sw =
      g.add_value(g.unique_name(base + "_swapped"), g.value(t).dtype, g.value(t).shape);
  infer_node(g, g.add_node(find_op("braze", "SwapPairs"), base + "_swap", {t}, {sw}, {}, 1));
  const ValueId ts = add_op(g, "Mul", base + "_sin_mul", {sw, sin}, {}, 14);
  ValueId r = add_op(g, "Add", base + "_rotated", {tc, ts}, {}, 14);
  if (std::any_of(groups.begin(), groups.end(), [](const HeadGroup& h) { return !h.rot; })) {
    Tensor mask(DType::Bool, Shape{1, heads, 1, 1});
    for (const HeadGroup& h : groups)
      for (int64_t i = 0; i < h.heads; ++i) mask.set_u64(h.start / d + i, h.rot ? 1 : 0);
    const ValueId m = g.add_constant(g.unique_name(base + "_rotated_heads"), std::move(mask));
    r = add_op(g, "Where", base + "_where", {m, r, t}, {}, 16);
  }
  const ValueId pairs = reshaped(g, r, {b, heads, s, d / 2, 2}, base + "_pairs");
  const ValueId halves = transposed(g, pairs, {0, 1, 2, 4, 3}, base + "_halves");
  const ValueId u = reshaped(g, halves, {b, heads, s, d}, base + "_in_order");
  for (size_t i = 0; i < groups.size(); ++i) {
    const HeadGroup& h = groups[i];
    const ValueId old = h.rot ? h.rot->out : h.t;
    if (groups.size() == 1)
      g.replace_all_uses(old, u);
    else
      replace_with_slice(g, old, u, h.start / d, h.start / d + h.heads, 1, base, i);
  }
}

}  // namespace

int rotary_projections(Graph& g) {
  const Users users = g.users();
  struct Match {
    NodeId mm, bias_add;
    std::vector<HeadGroup> groups;
    int64_t d;
  };
  std::vector<Match> found;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (!is_op(n, "MatMul") || n.inputs.size() != 2) continue;
    const Value &a = g.value(n.inputs[0]), &w = g.value(n.inputs[1]), &y = g.value(n.outputs[0]);
    if (!a.has_shape || !y.has_shape || y.shape.size() != 3 || !w.constant || w.shape.size() != 2 ||
        a.dtype != w.dtype || g.is_graph_output(n.outputs[0]))
      continue;
    // Through a bias Add of a constant [n] where there is one.
    ValueId v = n.outputs[0];
    NodeId bias_add = kNoNode;
    if (const NodeId u = sole_user(g, users, v); u != kNoNode && is_op(g.node(u), "Add")) {
      const ValueId c = constant_beside(g, g.node(u), v);
      if (c == kNoValue || g.value(c).shape != Shape{y.shape[2]} || g.value(c).dtype != y.dtype ||
          g.value(g.node(u).outputs[0]).shape != y.shape)
        continue;
      bias_add = u;
      v = g.node(u).outputs[0];
    }
    int64_t d = 0;
    std::vector<HeadGroup> groups = head_groups(g, users, v, &d);
    if (!groups.empty()) found.push_back({id, bias_add, std::move(groups), d});
  }
  for (const Match& m : found) rewrite(g, m.mm, m.bias_add, m.groups, m.d);
  return static_cast<int>(found.size());
}

}  // namespace braze::graph::passes
