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
#include "graph/passes/rotary_match.h"
#include "graph/passes/split_to_slices.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

using rotary::constant_beside;
using rotary::is_op;
using rotary::Rotation;
using rotary::sole_user;

// One group of heads of the product: columns [start, start + heads · D), rotated or not. An
// unrotated group is viewed as T [B, heads, S, D]; a rotated one's value is rot->out.
struct HeadGroup {
  int64_t start = 0, heads = 0;
  ValueId t = kNoValue;
  std::optional<Rotation> rot;
};

// v [B, S, n]'s sole user a Reshape to [B, S, h, D]: its output, else kNoValue.
ValueId split_heads(const Graph& g, const Users& users, ValueId v, int64_t* heads, int64_t* d) {
  const Shape& vs = g.value(v).shape;
  const NodeId r = sole_user(g, users, v);
  if (r == kNoNode || !is_op(g.node(r), "Reshape") || g.node(r).inputs[0] != v) return kNoValue;
  const Shape& rs = g.value(g.node(r).outputs[0]).shape;
  if (rs.size() != 4 || rs[0] != vs[0] || rs[1] != vs[1]) return kNoValue;
  *heads = rs[2];
  *d = rs[3];
  return g.node(r).outputs[0];
}

// x's sole user a Transpose swapping axes 1 and 2 of four: its output, else kNoValue.
ValueId swap_heads_and_positions(const Graph& g, const Users& users, ValueId x) {
  const NodeId tr = sole_user(g, users, x);
  if (tr == kNoNode || !is_op(g.node(tr), "Transpose") ||
      transpose_perm(g.node(tr), 4) != std::vector<int64_t>{0, 2, 1, 3})
    return kNoValue;
  return g.node(tr).outputs[0];
}

// A part of the product split into heads, r [B, S, h, D]: rotated by RotaryEmbedding's
// expansion on r (3-D X) or on T's transpose back (4-D X), by rotate_half on T, or not.
bool classify(const Graph& g, const Users& users, ValueId r, HeadGroup* h) {
  h->t = swap_heads_and_positions(g, users, r);
  if (h->t == kNoValue) {
    h->rot = rotary::match_rotary_op(g, users, r);
    return h->rot.has_value();
  }
  if (const ValueId p = swap_heads_and_positions(g, users, h->t); p != kNoValue)
    h->rot = rotary::match_rotary_op(g, users, p);
  else
    h->rot = rotary::match_rotate_half(g, users, h->t);
  return true;
}

// The product's value y (rank 3, [B, S, n]) as head groups in column order, each split into
// heads and at least one rotated, all alike; else empty.
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
    const ValueId r = split_heads(g, users, v, &h.heads, &hd);
    if (r == kNoValue || start != at || (*d != 0 && hd != *d) || hd % 2 != 0) return {};
    if (!classify(g, users, r, &h)) return {};
    *d = hd;
    at += h.heads * hd;
    groups.push_back(h);
  }
  if (at != n || groups.empty()) return {};
  const HeadGroup* first = nullptr;
  for (const HeadGroup& h : groups) {
    if (!h.rot) continue;
    if (!first)
      first = &h;
    else if (!rotary::same_rotation(g, *first->rot, *h.rot))
      return {};
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

ValueId constant_ints(Graph& g, const std::vector<int64_t>& v, const std::string& name) {
  return g.add_constant(g.unique_name(name),
                        Tensor::from_int64s(v, {static_cast<int64_t>(v.size())}));
}

// A half table c [b, s, 1, D/2] (RotaryEmbedding's: one angle for each pair t) as the table
// over T' [B, H, S, D] of interleaved pairs, [b, 1, s, D]: c[t] at 2t and 2t + 1, or, signed,
// −c[t] at 2t and c[t] at 2t + 1.
ValueId pair_table(Graph& g, ValueId c, bool signed_sin, const std::string& name) {
  const Shape cs = g.value(c).shape;
  const ValueId t = transposed(g, c, {0, 2, 1, 3}, name + "_positions");
  const ValueId u = add_op(g, "Unsqueeze", name + "_pair_axis", {t, constant_ints(g, {4}, name)});
  const Shape pairs{cs[0], 1, cs[1], cs[3], 2};
  ValueId both;
  if (signed_sin) {
    Tensor sign(g.value(c).dtype, Shape{2});
    sign.set_f64(0, -1);
    sign.set_f64(1, 1);
    both = add_op(g, "Mul", name + "_signed",
                  {u, g.add_constant(g.unique_name(name + "_sign"), std::move(sign))}, {}, 14);
  } else {
    both = add_op(g, "Expand", name + "_pairs", {u, constant_ints(g, pairs, name + "_shape")});
  }
  return reshaped(g, both, {cs[0], 1, cs[1], cs[3] * 2}, name + "_interleaved");
}

// The product's value before the rotation: rotate_half's and the op's halves made neighbours
// (the weight's and the bias's columns interleaved head by head), or the op's interleaved
// pairs as they are.
ValueId paired_product(Graph& g, const Node& mm, NodeId bias_add, bool interleaved, int64_t d,
                       const std::string& base) {
  if (interleaved) return bias_add != kNoNode ? g.node(bias_add).outputs[0] : mm.outputs[0];
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
  return y;
}

// Hands a group's rotated heads H [B, h, S, D] to the uses of `old`, the same values as
// [B, S, h, D]: a use that transposes them back reads H itself (a graph output too); one that
// flattens the heads ([B, S, h · D], the 3-D op's output) only to split them again (as the
// attention does) is followed to the uses of the split; any other use, or a graph output,
// reads Transpose(H), made on first need (`back`). So the attention reads the product's
// output in place, through no more layout ops than after rotate_half.
void hand_out_heads(Graph& g, ValueId old, ValueId heads, ValueId* back, const std::string& name) {
  const Shape os = g.value(old).shape;
  auto transposed_back = [&]() {
    if (*back == kNoValue) *back = transposed(g, heads, {0, 2, 1, 3}, name);
    return *back;
  };
  const Users users = g.users();
  const Graph& cg = g;
  for (NodeId id : users[old]) {
    const Node& n = cg.node(id);  // read before any node is added
    const ValueId out = n.outputs.empty() ? kNoValue : n.outputs[0];
    const bool to_output = out != kNoValue && g.is_graph_output(out);
    if (is_op(n, "Transpose") && transpose_perm(n, 4) == std::vector<int64_t>{0, 2, 1, 3}) {
      g.replace_all_uses(out, heads);
      continue;
    }
    const bool flattens = !to_output && is_op(n, "Reshape") && n.inputs[0] == old &&
                          g.value(out).shape == Shape{os[0], os[1], os[2] * os[3]};
    if (flattens && !users[out].empty() &&
        std::all_of(users[out].begin(), users[out].end(), [&](NodeId r) {
          const Node& rn = cg.node(r);
          return is_op(rn, "Reshape") && rn.inputs[0] == out && g.value(rn.outputs[0]).shape == os;
        })) {
      for (NodeId r : users[out]) hand_out_heads(g, cg.node(r).outputs[0], heads, back, name);
      continue;
    }
    const ValueId b = transposed_back();
    for (ValueId& in : g.node(id).inputs)
      if (in == old) in = b;
  }
  for (size_t i = 0; i < g.outputs().size(); ++i)
    if (g.outputs()[i].value == old) g.set_output_value(i, transposed_back());
}

void rewrite(Graph& g, NodeId mm_id, NodeId bias_add, const std::vector<HeadGroup>& groups,
             int64_t d) {
  const Node mm = g.node(mm_id);  // a copy: adding nodes may move the graph's
  const std::string base = mm.name + "_rotary";
  const Shape ys = g.value(mm.outputs[0]).shape;
  const int64_t b = ys[0], s = ys[1], n = ys[2], heads = n / d;
  const Rotation rot =
      *std::find_if(groups.begin(), groups.end(), [](const HeadGroup& h) { return h.rot; })->rot;
  const ValueId y = paired_product(g, mm, bias_add, rot.interleaved, d, base);
  const ValueId t = transposed(g, reshaped(g, y, {b, s, heads, d}, base + "_heads"), {0, 2, 1, 3},
                               base + "_heads_first");
  ValueId cos, sin;
  if (rot.seq_first) {
    cos = pair_table(g, rot.cos, false, base + "_cos");
    sin = pair_table(g, rot.sin, true, base + "_sin");
  } else {
    cos = g.add_constant(g.unique_name(base + "_cos"),
                         interleave_table(*g.value(rot.cos).constant, s, d, false));
    sin = g.add_constant(g.unique_name(base + "_sin"),
                         interleave_table(*g.value(rot.sin).constant, s, d, true));
  }
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
  ValueId u = r;
  if (!rot.interleaved) {
    const ValueId pairs = reshaped(g, r, {b, heads, s, d / 2, 2}, base + "_pairs");
    const ValueId halves = transposed(g, pairs, {0, 1, 2, 4, 3}, base + "_halves");
    u = reshaped(g, halves, {b, heads, s, d}, base + "_in_order");
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const HeadGroup& h = groups[i];
    const int64_t first = h.start / d;
    if (h.rot && h.rot->seq_first) {  // [B, S, h, D]: the group's heads transposed back
      ValueId part = u;
      if (groups.size() > 1)
        part = add_op(g, "Slice", fmt::format("{}_group{}", base, i),
                      {u, constant_ints(g, {first}, base + "_start"),
                       constant_ints(g, {first + h.heads}, base + "_end"),
                       constant_ints(g, {1}, base + "_axis")});
      ValueId back = kNoValue;
      hand_out_heads(g, h.rot->out, part, &back, fmt::format("{}_seq{}", base, i));
      continue;
    }
    const ValueId old = h.rot ? h.rot->out : h.t;
    if (groups.size() == 1)
      g.replace_all_uses(old, u);
    else
      replace_with_slice(g, old, u, first, first + h.heads, 1, base, i);
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
