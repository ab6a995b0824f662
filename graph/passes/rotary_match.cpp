#include "graph/passes/rotary_match.h"

#include <algorithm>

#include "graph/column_pairs.h"
#include "graph/ops/movement.h"
#include "graph/passes/cse.h"
#include "graph/registry.h"

namespace braze::graph::passes::rotary {

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

namespace {

// A table over (s, d) of T [B, h, S, D]: a constant of T's type whose shape, aligned right, is
// [S, D] with ones before.
bool position_table(const Graph& g, ValueId c, const Shape& t, DType dt) {
  const Value& v = g.value(c);
  if (!v.constant || v.dtype != dt || v.shape.size() < 2 || v.shape.size() > t.size()) return false;
  const size_t r = v.shape.size();
  if (v.shape[r - 1] != t.back() || v.shape[r - 2] != t[t.size() - 2]) return false;
  return std::all_of(v.shape.begin(), v.shape.end() - 2, [](int64_t s) { return s == 1; });
}

}  // namespace

// rotate_half as written out: out = T · cos + Concat(−T[…, D/2:], T[…, :D/2]) · sin.
std::optional<Rotation> match_rotate_half(const Graph& g, const Users& users, ValueId t) {
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

namespace {

// The factor beside x of Mul node n (x · f or f · x), else kNoValue.
ValueId factor_beside(const Node& n, ValueId x) {
  if (!is_op(n, "Mul") || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return kNoValue;
  return n.inputs[0] == x ? n.inputs[1] : n.inputs[1] == x ? n.inputs[0] : kNoValue;
}

// A half table of P [B, S, h, D]: [b, s, 1, D/2] of P's type, b 1 or B, s 1 or S.
bool half_table(const Graph& g, ValueId c, const Shape& p, DType dt) {
  const Value& v = g.value(c);
  return v.has_shape && v.dtype == dt && v.shape.size() == 4 &&
         (v.shape[0] == 1 || v.shape[0] == p[0]) && (v.shape[1] == 1 || v.shape[1] == p[1]) &&
         v.shape[2] == 1 && v.shape[3] == p[3] / 2;
}

bool last_axis_concat(const Node& n, size_t rank) {
  return is_op(n, "Concat") && n.inputs.size() == 2 &&
         (n.attr_int("axis") == -1 || n.attr_int("axis") == static_cast<int64_t>(rank) - 1);
}

// The halves (or the even and odd elements) of P's last axis: x[0] and x[1], else nullopt.
struct Halves {
  ValueId x[2] = {kNoValue, kNoValue};
  bool interleaved = false;
};
std::optional<Halves> halves_of(const Graph& g, const Users& users, ValueId p) {
  const int64_t d = g.value(p).shape.back();
  if (users[p].size() != 2 || g.is_graph_output(p) || d % 2 != 0) return std::nullopt;
  Halves h;
  int steps = 0;
  for (NodeId u : users[p]) {
    const std::optional<AxisRange> s = last_axis_slice(g, g.node(u));
    if (!s || g.node(u).inputs[0] != p || s->size != d / 2) return std::nullopt;
    int part = -1;
    if (s->step == 1 && (s->start == 0 || s->start == d / 2)) part = s->start ? 1 : 0;
    if (s->step == 2 && (s->start == 0 || s->start == 1)) part = static_cast<int>(s->start);
    if (part < 0 || h.x[part] != kNoValue) return std::nullopt;
    h.x[part] = g.node(u).outputs[0];
    steps += static_cast<int>(s->step);
  }
  if (steps != 2 && steps != 4) return std::nullopt;  // both halves, or both parities
  h.interleaved = steps == 4;
  return h;
}

}  // namespace

// RotaryEmbedding's expansion (graph/ops/composite.cpp) rotating every element of P's heads:
//   x1, x2 = P[…, :D/2], P[…, D/2:]       (interleaved: P[…, 0::2], P[…, 1::2])
//   re = x1 · cos − x2 · sin,  im = x1 · sin + x2 · cos                cos, sin [b, S, 1, D/2]
//   out = Concat(re, im)                  (interleaved: Reshape(Concat(re[…, None], im[…, None])))
std::optional<Rotation> match_rotary_op(const Graph& g, const Users& users, ValueId p) {
  const Value& pv = g.value(p);
  if (pv.shape.size() != 4) return std::nullopt;
  const std::optional<Halves> h = halves_of(g, users, p);
  if (!h) return std::nullopt;
  // Each half times both tables; which product feeds the Sub and which the Add names them.
  NodeId sub = kNoNode, add = kNoNode;
  ValueId cos = kNoValue, sin = kNoValue;
  for (int i = 0; i < 2; ++i) {
    const ValueId x = h->x[i];
    if (users[x].size() != 2 || g.is_graph_output(x)) return std::nullopt;
    for (NodeId m : users[x]) {
      const ValueId f = factor_beside(g.node(m), x);
      const NodeId u = f == kNoValue ? kNoNode : sole_user(g, users, g.node(m).outputs[0]);
      if (u == kNoNode) return std::nullopt;
      const Node& un = g.node(u);
      const ValueId prod = g.node(m).outputs[0];
      // re = x1 · cos − x2 · sin: x1's product first, x2's second.
      const bool in_sub = is_op(un, "Sub") && un.inputs.size() == 2 && un.inputs[i] == prod;
      const bool in_add = is_op(un, "Add") && un.inputs.size() == 2;
      if (!in_sub && !in_add) return std::nullopt;
      NodeId& at = in_sub ? sub : add;
      if (at != kNoNode && at != u) return std::nullopt;
      at = u;
      // x1 · cos and x2 · cos are the products that go to the Sub from x1 and to the Add from x2.
      ValueId& table = (in_sub == (i == 0)) ? cos : sin;
      if (table != kNoValue && table != f) return std::nullopt;
      table = f;
    }
  }
  if (sub == kNoNode || add == kNoNode || cos == kNoValue || sin == kNoValue) return std::nullopt;
  if (!half_table(g, cos, pv.shape, pv.dtype) || !half_table(g, sin, pv.shape, pv.dtype))
    return std::nullopt;
  const ValueId re = g.node(sub).outputs[0], im = g.node(add).outputs[0];
  Rotation r{kNoValue, cos, sin, true, h->interleaved};
  if (!h->interleaved) {
    const NodeId cat = sole_user(g, users, re);
    if (cat == kNoNode || sole_user(g, users, im) != cat || !last_axis_concat(g.node(cat), 4) ||
        g.node(cat).inputs[0] != re || g.node(cat).inputs[1] != im)
      return std::nullopt;
    r.out = g.node(cat).outputs[0];
  } else {
    ValueId pair[2];
    for (int i = 0; i < 2; ++i) {
      const NodeId un = sole_user(g, users, i ? im : re);
      Shape want = g.value(i ? im : re).shape;
      want.push_back(1);
      if (un == kNoNode || !is_op(g.node(un), "Unsqueeze") ||
          g.value(g.node(un).outputs[0]).shape != want)
        return std::nullopt;
      pair[i] = g.node(un).outputs[0];
    }
    const NodeId cat = sole_user(g, users, pair[0]);
    if (cat == kNoNode || sole_user(g, users, pair[1]) != cat ||
        !last_axis_concat(g.node(cat), 5) || g.node(cat).inputs[0] != pair[0] ||
        g.node(cat).inputs[1] != pair[1])
      return std::nullopt;
    const NodeId rs = sole_user(g, users, g.node(cat).outputs[0]);
    if (rs == kNoNode || !is_op(g.node(rs), "Reshape")) return std::nullopt;
    r.out = g.node(rs).outputs[0];
  }
  if (g.value(r.out).shape != pv.shape) return std::nullopt;
  return r;
}

namespace {

// Whether a and b compute the same values: one value, equal constants, or the same op with
// the same attributes over such inputs (the tables each RotaryEmbedding node gathers alike,
// before common subexpressions are merged).
bool same_values(const Graph& g, ValueId a, ValueId b, int depth) {
  if (a == b) return true;
  const Value &va = g.value(a), &vb = g.value(b);
  if (va.constant || vb.constant)
    return va.constant && vb.constant && va.constant->bitwise_equal(*vb.constant);
  if (depth == 0 || va.producer == kNoNode || vb.producer == kNoNode) return false;
  const Node &na = g.node(va.producer), &nb = g.node(vb.producer);
  if (na.op != nb.op || na.op->may_be_random || na.inputs.size() != nb.inputs.size() ||
      na.outputs.size() != 1 || nb.outputs.size() != 1 || !same_attributes(na, nb))
    return false;
  for (size_t i = 0; i < na.inputs.size(); ++i) {
    if ((na.inputs[i] == kNoValue) != (nb.inputs[i] == kNoValue)) return false;
    if (na.inputs[i] != kNoValue && !same_values(g, na.inputs[i], nb.inputs[i], depth - 1))
      return false;
  }
  return true;
}

}  // namespace

// Whether two rotations can be one over the merged product: the same form and tables.
bool same_rotation(const Graph& g, const Rotation& a, const Rotation& b) {
  return a.seq_first == b.seq_first && a.interleaved == b.interleaved &&
         same_values(g, a.cos, b.cos, 6) && same_values(g, a.sin, b.sin, 6);
}

}  // namespace braze::graph::passes::rotary
