// Ops that ONNX defines as functions of other ops (opset 23): Attention, RMSNormalization
// and RotaryEmbedding. Each is written once, as its expansion into primitive ops; the
// importer replaces the node by it (the op's upgrade), so fusion sees what the exporters'
// written-out forms give (the attention recognition, the RMS norm row program, element-wise
// rotary), and the reference executor runs the primitives' references. Shape inference and
// the reference implementation of a lone node (evaluate_node) run the same expansion on a
// graph of that node alone. Independent oracles: tests/opset23_ops.py checks the imported
// models against ONNX's reference implementation and ONNX Runtime.
#include <braze/error.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "graph/op_context.h"
#include "graph/onnx_dtype.h"
#include "graph/ops/families.h"
#include "graph/ops/helpers.h"

namespace braze::graph {
namespace ops {
namespace {

// Builds the expansion of one node: new nodes take their names from it, each is inferred
// as it is added (later steps read their shapes), the last of each output writes the
// node's own output value.
class Expansion {
 public:
  Expansion(Graph& g, NodeId id) : g_(g), node_(g.node(id)), id_(id) {}

  const Node& node() const { return node_; }  // a copy: the node itself is killed
  bool has_input(size_t i) const { return node_.has_input(i); }
  ValueId input(size_t i) const { return node_.inputs.at(i); }
  bool wants_output(size_t i) const {
    return i < node_.outputs.size() && node_.outputs[i] != kNoValue;
  }
  // Copies: adding nodes and values moves the graph's storage.
  Shape shape(ValueId v) const { return g_.value(v).shape; }
  DType dtype(ValueId v) const { return g_.value(v).dtype; }
  [[noreturn]] void fail(const std::string& why) const {
    throw UserError(node_.describe() + ": " + why);
  }
  [[noreturn]] void unsupported(const std::string& why) const {
    throw UnsupportedError(node_.describe() + ": " + why);
  }

  ValueId constant(Tensor t) {
    return g_.add_constant(g_.unique_name(node_.name + "_const"), std::move(t));
  }
  ValueId ints(const std::vector<int64_t>& v) {
    return constant(Tensor::from_int64s(v, {static_cast<int64_t>(v.size())}));
  }
  ValueId scalar(DType dt, double v) { return constant(Tensor::scalar_of(dt, v)); }

  // op(ins) with attrs; `out` writes the node's output `out` instead of a new value.
  ValueId add(const char* op_name, std::vector<ValueId> ins, Attributes attrs = {}, int out = -1) {
    ValueId o = out >= 0
                    ? node_.outputs.at(static_cast<size_t>(out))
                    : g_.add_value(g_.unique_name(node_.name + "_" + op_name), DType::Float32, {});
    NodeId n = g_.add_node(&op(op_name), fmt::format("{}/{}{}", node_.name, op_name, count_++),
                           std::move(ins), {o}, std::move(attrs), kMaxOpset);
    infer_node(g_, n);
    return o;
  }
  ValueId cast(ValueId v, DType to, int out = -1) {
    if (dtype(v) == to && out < 0) return v;
    return add("Cast", {v}, {{"to", int64_t{dtype_to_onnx(to)}}}, out);
  }
  // Writes `v` to the node's output `out` (an Identity where v is not already it).
  void output(ValueId v, int out) {
    if (wants_output(static_cast<size_t>(out))) add("Identity", {v}, {}, out);
  }
  void kill_original() { g_.kill_node(id_); }

 private:
  Graph& g_;
  Node node_;
  NodeId id_;
  int count_ = 0;
};

using ExpandFn = std::function<void(Expansion&)>;

// Replaces node `id` by its expansion.
void expand_in_place(Graph& g, NodeId id, const ExpandFn& fn) {
  Expansion x(g, id);
  x.kill_original();
  fn(x);
}

// Inference: the expansion of a graph holding the node alone, its inputs as values of the
// node's input types (and constants where the node's are), read back at the outputs.
void infer_by_expansion(InferCtx& ctx, const ExpandFn& fn) {
  Graph g;
  std::vector<ValueId> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) {
      ins.push_back(kNoValue);
      continue;
    }
    const Tensor* c = ctx.value(i);
    ins.push_back(c ? g.add_constant(fmt::format("in{}", i), *c)
                    : g.add_value(fmt::format("in{}", i), ctx.dtype(i), ctx.shape(i)));
  }
  std::vector<ValueId> outs;
  for (size_t i = 0; i < ctx.num_outputs(); ++i)
    outs.push_back(g.add_value(fmt::format("out{}", i), DType::Float32, {}));
  const Node& n = ctx.node();
  NodeId id = g.add_node(n.op, n.name, ins, outs, n.attrs, n.opset);
  expand_in_place(g, id, fn);
  for (size_t i = 0; i < outs.size(); ++i)
    if (g.value(outs[i]).producer != kNoNode)
      ctx.set_output(i, g.value(outs[i]).dtype, g.value(outs[i]).shape);
}

// Reference: the same expansion, evaluated node by node on the inputs.
void reference_by_expansion(RefCtx& ctx, const ExpandFn& fn) {
  Graph g;
  std::vector<ValueId> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    ins.push_back(ctx.has_input(i) ? g.add_constant(fmt::format("in{}", i), ctx.input(i))
                                   : kNoValue);
  std::vector<ValueId> outs;
  for (size_t i = 0; i < ctx.num_outputs(); ++i)
    outs.push_back(ctx.has_output(i) ? g.add_value(fmt::format("out{}", i), DType::Float32, {})
                                     : kNoValue);
  const Node& n = ctx.node();
  NodeId id = g.add_node(n.op, n.name, ins, outs, n.attrs, n.opset);
  expand_in_place(g, id, fn);
  std::map<ValueId, Tensor> vals;
  auto get = [&](ValueId v) -> const Tensor* {
    if (v == kNoValue) return nullptr;
    if (g.value(v).constant) return g.value(v).constant.get();
    return &vals.at(v);
  };
  for (NodeId j : g.topo_order()) {
    const Node& m = g.node(j);
    std::vector<const Tensor*> in;
    for (ValueId v : m.inputs) in.push_back(get(v));
    std::vector<Tensor> r = evaluate_node(m, in);
    for (size_t k = 0; k < m.outputs.size(); ++k)
      if (m.outputs[k] != kNoValue) vals[m.outputs[k]] = std::move(r[k]);
  }
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i] != kNoValue) ctx.output(i) = *get(outs[i]);
}

OpDef composite(std::string name, int since, const ExpandFn& fn) {
  OpDef d;
  d.name = std::move(name);
  d.since = d.oldest = since;
  d.kind = FusionKind::Opaque;
  d.upgrade = [fn](Graph& g, NodeId id) { expand_in_place(g, id, fn); };
  d.infer = [fn](InferCtx& ctx) { infer_by_expansion(ctx, fn); };
  d.reference = [fn](RefCtx& ctx) { reference_by_expansion(ctx, fn); };
  return d;
}

// ---- RMSNormalization ------------------------------------------------------------------
// Y = X / sqrt(mean(X², axes [axis, rank)) + epsilon) · scale, stage one in stash_type.
void expand_rms_norm(Expansion& x) {
  const Node& n = x.node();
  const ValueId in = x.input(0), scale = x.input(1);
  const int64_t rank = static_cast<int64_t>(x.shape(in).size());
  int64_t axis = n.attr_int("axis");
  if (axis < -rank || axis >= rank)
    x.fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  const auto stash = dtype_from_onnx(static_cast<int>(n.attr_int("stash_type")));
  if (!stash || !is_float(*stash))
    x.fail(fmt::format("stash_type {} is not a floating type", n.attr_int("stash_type")));
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  const ValueId xs = x.cast(in, *stash);
  const ValueId sq = x.add("Mul", {xs, xs});
  const ValueId mean = x.add("ReduceMean", {sq, x.ints(axes)}, {{"keepdims", int64_t{1}}});
  const ValueId var = x.add("Add", {mean, x.scalar(*stash, n.attr_float("epsilon"))});
  const ValueId rms = x.add("Sqrt", {var});
  const ValueId normed = x.cast(x.add("Div", {xs, rms}), x.dtype(in));
  x.add("Mul", {x.cast(normed, x.dtype(scale)), scale}, {}, 0);
}

// ---- RotaryEmbedding -------------------------------------------------------------------
// X [B, H, S, D] (or [B, S, H·D] with num_heads): the first rotary_embedding_dim of each
// head rotated by the angles of cos_cache / sin_cache at the token's position (position_ids
// [B, S] gathers them; without, the caches are [B, S, d / 2]), its halves or its even / odd
// elements (interleaved) as the real and imaginary parts.
void expand_rotary(Expansion& x) {
  const Node& n = x.node();
  const ValueId in = x.input(0);
  const Shape xs = x.shape(in);
  if (xs.size() != 3 && xs.size() != 4) x.fail("X must be [B, H, S, D] or [B, S, hidden]");
  ValueId bshd;  // [B, S, H, D]
  int64_t heads, head;
  if (xs.size() == 4) {
    heads = xs[1];
    head = xs[3];
    bshd = x.add("Transpose", {in}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  } else {
    heads = n.has_attr("num_heads") ? n.attr_int("num_heads") : 0;
    if (heads <= 0 || xs[2] % heads != 0)
      x.fail("a 3-D X needs num_heads dividing its hidden size");
    head = xs[2] / heads;
    bshd = x.add("Reshape", {in, x.ints({xs[0], xs[1], heads, head})});
  }
  int64_t rd = n.attr_int("rotary_embedding_dim");
  if (rd == 0) rd = head;
  if (rd < 2 || rd > head || rd % 2)
    x.fail(fmt::format("rotary_embedding_dim {} does not fit head size {}", rd, head));
  ValueId cos = x.input(1), sin = x.input(2);
  if (x.has_input(3)) {
    cos = x.add("Gather", {cos, x.input(3)}, {{"axis", int64_t{0}}});
    sin = x.add("Gather", {sin, x.input(3)}, {{"axis", int64_t{0}}});
  }
  if (x.shape(cos).empty() || x.shape(cos).back() != rd / 2)
    x.fail(fmt::format("the caches' last dimension must be rotary_embedding_dim / 2 = {}", rd / 2));
  cos = x.add("Unsqueeze", {cos, x.ints({2})});  // [B, S, 1, rd / 2]
  sin = x.add("Unsqueeze", {sin, x.ints({2})});
  auto slice = [&](ValueId v, int64_t from, int64_t to, int64_t step) {
    return x.add("Slice", {v, x.ints({from}), x.ints({to}), x.ints({3}), x.ints({step})});
  };
  const bool inter = n.attr_int("interleaved") != 0;
  const ValueId x1 = inter ? slice(bshd, 0, rd, 2) : slice(bshd, 0, rd / 2, 1);
  const ValueId x2 = inter ? slice(bshd, 1, rd, 2) : slice(bshd, rd / 2, rd, 1);
  const ValueId real = x.add("Sub", {x.add("Mul", {cos, x1}), x.add("Mul", {sin, x2})});
  const ValueId imag = x.add("Add", {x.add("Mul", {sin, x1}), x.add("Mul", {cos, x2})});
  ValueId rotated;
  Shape rs = x.shape(bshd);
  rs[3] = rd;
  if (inter) {
    const ValueId pairs =
        x.add("Concat",
              {x.add("Unsqueeze", {real, x.ints({4})}), x.add("Unsqueeze", {imag, x.ints({4})})},
              {{"axis", int64_t{4}}});
    rotated = x.add("Reshape", {pairs, x.ints(rs)});
  } else {
    rotated = x.add("Concat", {real, imag}, {{"axis", int64_t{3}}});
  }
  if (rd < head)
    rotated = x.add("Concat", {rotated, slice(bshd, rd, head, 1)}, {{"axis", int64_t{3}}});
  if (xs.size() == 4)
    x.add("Transpose", {rotated}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, 0);
  else
    x.add("Reshape", {rotated, x.ints(xs)}, {}, 0);
}

// ---- Attention -------------------------------------------------------------------------
// softmax(Q Kᵀ · scale [softcap] + mask [causal]) V as the exporters write it (so that the
// attention recognition makes one kernel of it): Q and K each scaled by sqrt(scale), GQA's
// K and V repeated by Unsqueeze / Expand / Reshape, a boolean mask through Where, a float
// mask added, the causal triangle (offset by the past's length) a constant Where, and
// Where(IsNaN(P), 0, P) giving a fully masked row zeros.
struct Heads {
  ValueId q, k, v;  // [B, H, S, D]
  bool three_d;
};

ValueId to_bhsd(Expansion& x, ValueId v, int64_t heads) {
  const Shape s = x.shape(v);
  if (heads <= 0 || s[2] % heads != 0)
    x.fail("3-D Q, K and V need q_num_heads and kv_num_heads dividing their hidden sizes");
  const ValueId r = x.add("Reshape", {v, x.ints({s[0], s[1], heads, s[2] / heads})});
  return x.add("Transpose", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
}

Heads attention_heads(Expansion& x) {
  const Node& n = x.node();
  const size_t rank = x.shape(x.input(0)).size();
  if (rank != 3 && rank != 4) x.fail("Q must be 3-D or 4-D");
  for (size_t i = 1; i < 3; ++i)
    if (x.shape(x.input(i)).size() != rank) x.fail("Q, K and V must have the same rank");
  if (rank == 4) return {x.input(0), x.input(1), x.input(2), false};
  const int64_t qh = n.has_attr("q_num_heads") ? n.attr_int("q_num_heads") : 0;
  const int64_t kvh = n.has_attr("kv_num_heads") ? n.attr_int("kv_num_heads") : 0;
  return {to_bhsd(x, x.input(0), qh), to_bhsd(x, x.input(1), kvh), to_bhsd(x, x.input(2), kvh),
          true};
}

// K or V of `kv` heads repeated for `heads` query heads (head h reads kv head h / (heads / kv)).
ValueId repeat_heads(Expansion& x, ValueId v, int64_t heads) {
  const Shape s = x.shape(v);
  if (s[1] == heads) return v;
  if (s[1] <= 0 || heads % s[1] != 0)
    x.fail(fmt::format("{} query heads are not a multiple of {} key / value heads", heads, s[1]));
  const ValueId u = x.add("Unsqueeze", {v, x.ints({2})});
  const ValueId e = x.add("Expand", {u, x.ints({s[0], s[1], heads / s[1], s[2], s[3]})});
  return x.add("Reshape", {e, x.ints({s[0], heads, s[2], s[3]})});
}

// The mask padded to `sk` keys with masked keys (false, or -inf), as ONNX's reference does.
ValueId pad_mask_keys(Expansion& x, ValueId mask, int64_t sk) {
  Shape s = x.shape(mask);
  if (s.empty() || s.back() == sk || s.back() == 1) return mask;
  if (s.back() > sk) x.fail(fmt::format("attn_mask has {} keys for {} keys of K", s.back(), sk));
  s.back() = sk - s.back();
  Tensor fill(x.dtype(mask), s);
  const double dead = x.dtype(mask) == DType::Bool ? 0.0 : -INFINITY;
  for (int64_t i = 0; i < fill.numel(); ++i) fill.set_f64(i, dead);
  return x.add("Concat", {mask, x.constant(std::move(fill))}, {{"axis", int64_t{-1}}});
}

void expand_attention(Expansion& x) {
  const Node& n = x.node();
  if (x.has_input(6)) x.unsupported("nonpad_kv_seqlen (an external KV cache) is not supported");
  if (x.has_input(4) != x.has_input(5)) x.fail("past_key and past_value must be given together");
  Heads h = attention_heads(x);
  const DType t = x.dtype(h.q);
  if (!is_float(t)) x.fail("Q must be a floating type");
  int64_t past = 0;
  if (x.has_input(4)) {
    past = x.shape(x.input(4)).size() == 4 ? x.shape(x.input(4))[2] : 0;
    h.k = x.add("Concat", {x.input(4), h.k}, {{"axis", int64_t{2}}});
    h.v = x.add("Concat", {x.input(5), h.v}, {{"axis", int64_t{2}}});
  }
  x.output(h.k, 1);
  x.output(h.v, 2);
  const Shape qs = x.shape(h.q), ks = x.shape(h.k);
  const int64_t sq = qs[2], sk = ks[2];
  const double scale =
      n.has_attr("scale") ? n.attr_float("scale") : 1.0 / std::sqrt(static_cast<double>(qs[3]));
  const ValueId kt = x.add("Transpose", {repeat_heads(x, h.k, qs[1])},
                           {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  ValueId s;
  if (scale > 0) {  // sqrt(scale) on each side, as the reference does (no overflow in Q Kᵀ)
    const ValueId root = x.scalar(t, std::sqrt(scale));
    s = x.add("MatMul", {x.add("Mul", {h.q, root}), x.add("Mul", {kt, root})});
  } else {  // ONNX's reference takes a negative scale's square root too (NaN); braze applies it
    s = x.add("Mul", {x.add("MatMul", {h.q, kt}), x.scalar(t, scale)});
  }
  const int64_t mode = n.attr_int("qk_matmul_output_mode");
  if (mode < 0 || mode > 3) x.fail(fmt::format("qk_matmul_output_mode {} is not 0 to 3", mode));
  if (mode == 0) x.output(s, 3);
  const double softcap = n.attr_float("softcap");
  if (softcap > 0) {
    const ValueId c = x.scalar(t, softcap);
    s = x.add("Mul", {x.add("Tanh", {x.add("Div", {s, c})}), c});
  }
  if (mode == 1) x.output(s, 3);
  const ValueId ninf = x.scalar(t, -INFINITY);
  if (x.has_input(3)) {
    const ValueId mask = pad_mask_keys(x, x.input(3), sk);
    s = x.dtype(mask) == DType::Bool ? x.add("Where", {mask, s, ninf})
                                     : x.add("Add", {s, x.cast(mask, t)});
  }
  if (n.attr_int("is_causal")) {
    if (sq * sk > (int64_t{1} << 32))
      x.unsupported(
          fmt::format("a causal mask of {} x {} elements (braze builds it as a constant)", sq, sk));
    Tensor live(DType::Bool, {sq, sk});
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j) live.set_f64(i * sk + j, j <= i + past ? 1 : 0);
    s = x.add("Where", {x.constant(std::move(live)), s, ninf});
  }
  if (mode == 2) x.output(s, 3);
  DType soft = t;
  if (n.has_attr("softmax_precision")) {
    const auto p = dtype_from_onnx(static_cast<int>(n.attr_int("softmax_precision")));
    if (!p || !is_float(*p)) x.fail("softmax_precision must be a floating type");
    soft = *p;
  }
  ValueId p = x.add("Softmax", {x.cast(s, soft)}, {{"axis", int64_t{-1}}});
  p = x.add("Where", {x.add("IsNaN", {p}), x.scalar(soft, 0), p});
  p = x.cast(p, t);
  if (mode == 3) x.output(p, 3);
  const ValueId y = x.add("MatMul", {p, repeat_heads(x, h.v, qs[1])});
  if (!h.three_d) {
    x.add("Identity", {y}, {}, 0);
    return;
  }
  const Shape ys = x.shape(y);
  const ValueId yt = x.add("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  x.add("Reshape", {yt, x.ints({ys[0], ys[2], ys[1] * ys[3]})}, {}, 0);
}

OpDef attention_op() {
  OpDef d = composite("Attention", 23, expand_attention);
  d.min_inputs = 3;
  d.max_inputs = 7;
  d.max_outputs = 4;
  d.types = kFloatTypes;
  d.attrs = {attr_i("is_causal", 0),
             attr_opt("kv_num_heads", AttrType::Int),
             attr_opt("q_num_heads", AttrType::Int),
             attr_i("qk_matmul_output_mode", 0),
             attr_opt("scale", AttrType::Float),
             attr_f("softcap", 0.0),
             attr_opt("softmax_precision", AttrType::Int)};
  return d;
}

OpDef rms_norm_op() {
  OpDef d = composite("RMSNormalization", 23, expand_rms_norm);
  d.min_inputs = d.max_inputs = 2;
  d.types = kFloatTypes;
  d.attrs = {attr_i("axis", -1), attr_f("epsilon", 1e-5), attr_i("stash_type", 1)};
  return d;
}

OpDef rotary_op() {
  OpDef d = composite("RotaryEmbedding", 23, expand_rotary);
  d.min_inputs = 3;
  d.max_inputs = 4;
  d.types = kFloatTypes;
  d.attrs = {attr_i("interleaved", 0), attr_opt("num_heads", AttrType::Int),
             attr_i("rotary_embedding_dim", 0)};
  return d;
}

}  // namespace
}  // namespace ops

void register_composite_ops(std::vector<OpDef>& r) {
  r.push_back(ops::attention_op());
  r.push_back(ops::rms_norm_op());
  r.push_back(ops::rotary_op());
}

}  // namespace braze::graph
