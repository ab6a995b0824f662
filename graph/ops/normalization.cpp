// Normalizations: LayerNormalization, BatchNormalization (inference and training mode),
// InstanceNormalization, GroupNormalization, MeanVarianceNormalization, LpNormalization, LRN.
//
// Canonical forms (the newest opset <= 21): BatchNormalization of opset 15 (training mode an
// attribute; older opsets' training mode, signalled by extra outputs, and opset 7-8's
// non-spatial form are rewritten on import); GroupNormalization of opset 21 (scale and bias
// per channel; opset 18's per-group ones are expanded on import). Statistics are computed in
// double whatever stash_type asks for, which is at least as precise.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "graph/onnx_dtype.h"
#include "graph/ops/families.h"
#include "graph/ops/helpers.h"
#include "graph/ops/normalization.h"

namespace braze::graph {
namespace {

using namespace ops;

// ONNX's default epsilons and factors are float attributes; keep their float32 values so a
// default and the same value written in a model are equal.
const double kEps = static_cast<double>(1e-5f);

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

}  // namespace

// A per-channel parameter of X (N x C x D1 …) viewed to broadcast against X: [C, 1, …].
Shape channel_view(const Shape& x) {
  Shape v(x.size() - 1, 1);
  v[0] = x[1];
  return v;
}

namespace {

struct Moments {
  double mean, var;  // population variance
};

// Two-pass mean and variance of x over the elements at base + inner[k].
Moments moments(const Tensor& x, int64_t base, const std::vector<int64_t>& inner) {
  double n = static_cast<double>(inner.size()), s = 0, ss = 0;
  for (int64_t k : inner) s += x.get_f64(base + k);
  double mean = s / n;
  for (int64_t k : inner) {
    double d = x.get_f64(base + k) - mean;
    ss += d * d;
  }
  return {mean, ss / n};
}

// Moments of a contiguous block of `n` elements from `start`.
Moments block_moments(const Tensor& x, int64_t start, int64_t n) {
  double s = 0, ss = 0;
  for (int64_t i = 0; i < n; ++i) s += x.get_f64(start + i);
  double mean = s / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    double d = x.get_f64(start + i) - mean;
    ss += d * d;
  }
  return {mean, ss / static_cast<double>(n)};
}

// X of shape (N x C x D1 ... Dn); fails on lower rank. Returns C.
int64_t channels(const InferCtx& ctx, const Shape& x) {
  if (x.size() < 2)
    ctx.fail(fmt::format("X must have rank 2 or more (N x C x ...), not shape {}", shape_str(x)));
  return x[1];
}

// Input i must be of X's dtype (unless `any_float`) and shape [c].
void check_per_channel(const InferCtx& ctx, size_t i, const char* what, int64_t c,
                       bool any_float = false) {
  if (any_float ? !is_float(ctx.dtype(i)) : ctx.dtype(i) != ctx.dtype(0))
    ctx.fail(fmt::format("{} must be {}, not {}", what,
                         any_float ? "a float tensor" : dtype_name(ctx.dtype(0)),
                         dtype_name(ctx.dtype(i))));
  const Shape& s = ctx.shape(i);
  if (s != Shape{c})
    ctx.fail(fmt::format("{} must have shape [{}], not {}", what, c, shape_str(s)));
}

DType stash_dtype(const InferCtx& ctx) {
  auto dt = dtype_from_onnx(ctx.node().attr_int("stash_type"));
  if (!dt || !is_float(*dt))
    ctx.fail(fmt::format("stash_type {} is not a floating-point type",
                         ctx.node().attr_int("stash_type")));
  return *dt;
}

// The values of `t` broadcast (unidirectionally) to `shape`, one per element.
std::vector<double> broadcast_values(const Tensor& t, const Shape& shape) {
  std::vector<double> out(static_cast<size_t>(checked_numel(shape)));
  for_each_broadcast(shape, {&t.shape()}, [&](int64_t i, const std::vector<int64_t>& off) {
    out[static_cast<size_t>(i)] = t.get_f64(off[0]);
  });
  return out;
}

// A value of `shape` holding v: v itself when it has that shape already, a reshaped
// constant when v is constant, else the output of a new Reshape node.
ValueId reshaped_value(Graph& g, ValueId v, const Shape& shape, const Node& for_node) {
  const std::string node_name = for_node.name, what = for_node.describe();
  const int opset = for_node.opset;
  const Value& val = g.value(v);
  if (val.has_shape && val.shape == shape) return v;
  std::string nm = g.unique_name(val.name + "_flat");
  DType dt = val.dtype;
  if (val.constant) {
    if (checked_numel(val.constant->shape()) != checked_numel(shape))
      throw UserError(fmt::format("{}: '{}' has shape {}, which does not reshape to {}", what,
                                  val.name, shape_str(val.constant->shape()), shape_str(shape)));
    return g.add_constant(nm, val.constant->reshaped(shape));
  }
  const OpDef& reshape = op("Reshape");
  ValueId s = g.add_constant(g.unique_name(nm + "_shape"),
                             Tensor::from_int64s(shape, {static_cast<int64_t>(shape.size())}));
  ValueId out = g.add_value(nm, dt, shape);
  g.add_node(&reshape, node_name + "_" + nm, {v, s}, {out}, {}, opset);
  return out;
}

// ---- LayerNormalization ----------------------------------------------------------------
OpDef layer_norm_op() {
  OpDef d;
  d.name = "LayerNormalization";
  d.since = 17;
  d.kind = FusionKind::Reduce;
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.max_outputs = 3;
  d.attrs = {attr_i("axis", -1), attr_f("epsilon", kEps), attr_i("stash_type", 1)};
  d.types = kFloatTypes;
  d.infer = [](InferCtx& ctx) {
    DType dt = ctx.dtype(0), u = stash_dtype(ctx);
    ctx.set_dtype(0, dt);
    ctx.set_dtype(1, u);
    ctx.set_dtype(2, u);
    const Shape& x = ctx.shape(0);
    size_t axis =
        static_cast<size_t>(ctx.axis(ctx.node().attr_int("axis"), static_cast<int64_t>(x.size())));
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      const char* what = i == 1 ? "Scale" : "B";
      if (ctx.dtype(i) != dt)
        ctx.fail(
            fmt::format("{} must be {}, not {}", what, dtype_name(dt), dtype_name(ctx.dtype(i))));
      const Shape& s = ctx.shape(i);
      bool ok = s.size() <= x.size();
      for (size_t k = 0; ok && k < s.size(); ++k)
        ok = s[k] == 1 || s[k] == x[x.size() - s.size() + k];
      if (!ok)
        ctx.fail(fmt::format("{} of shape {} does not broadcast to X's shape {}", what,
                             shape_str(s), shape_str(x)));
    }
    Shape stat = x;
    for (size_t k = axis; k < stat.size(); ++k) stat[k] = 1;
    ctx.set_shape(0, x);
    ctx.set_shape(1, stat);
    ctx.set_shape(2, stat);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += x.rank();
    double eps = ctx.node().attr_float("epsilon");
    std::vector<double> scale = broadcast_values(ctx.input(1), x.shape());
    std::vector<double> bias = ctx.has_input(2) ? broadcast_values(ctx.input(2), x.shape())
                                                : std::vector<double>(scale.size(), 0.0);
    const int64_t outer = product(x.shape(), 0, static_cast<size_t>(axis));
    const int64_t inner = product(x.shape(), static_cast<size_t>(axis), x.shape().size());
    Tensor& y = ctx.output(0);
    for (int64_t o = 0; o < outer; ++o) {
      Moments m = block_moments(x, o * inner, inner);
      double inv = 1.0 / std::sqrt(m.var + eps);
      for (int64_t i = o * inner; i < (o + 1) * inner; ++i) {
        size_t k = static_cast<size_t>(i);
        y.set_f64(i, (x.get_f64(i) - m.mean) * inv * scale[k] + bias[k]);
      }
      if (ctx.has_output(1)) ctx.output(1).set_f64(o, m.mean);
      if (ctx.has_output(2)) ctx.output(2).set_f64(o, inv);
    }
  };
  return d;
}

// ---- BatchNormalization ----------------------------------------------------------------
// Opset 7-8's spatial=0 normalizes per activation with (C x D1 ... Dn) parameters: the same
// as spatial BatchNormalization of X flattened to (N x C*D1*...*Dn), which is what it
// becomes (the rewrite ONNX suggests).
void flatten_non_spatial(Graph& g, NodeId n) {
  Node& node = g.node(n);
  if (node.inputs.size() != 5 || node.outputs.empty() || node.outputs[0] == kNoValue ||
      std::count(node.inputs.begin(), node.inputs.end(), kNoValue))
    return;  // wrong arity: inference reports it
  ValueId x = node.inputs[0];
  if (!g.value(x).has_shape)
    throw UserError(fmt::format("{}: with spatial=0 the shape of '{}' must be known at import",
                                node.describe(), g.value(x).name));
  const Shape dims = g.value(x).shape;
  if (dims.size() < 2) return;  // inference reports it
  const int64_t features = product(dims, 1, dims.size());
  const Node orig = node;  // a copy: adding nodes may move `node`
  const OpDef* self = orig.op;
  const std::string& name = orig.name;
  const int opset = orig.opset;
  std::vector<ValueId> ins = orig.inputs;
  const ValueId y = orig.outputs[0];
  const bool flatten_x = dims.size() > 2;
  g.kill_node(n);

  ins[0] = reshaped_value(g, x, {dims[0], features}, orig);
  for (size_t i = 1; i < 5; ++i) ins[i] = reshaped_value(g, ins[i], {features}, orig);
  if (!flatten_x) {
    g.add_node(self, name, ins, {y}, orig.attrs, opset);
    return;
  }
  ValueId y2 =
      g.add_value(g.unique_name(g.value(y).name + "_flat"), g.value(y).dtype, {dims[0], features});
  g.add_node(self, name, ins, {y2}, orig.attrs, opset);
  ValueId s = g.add_constant(g.unique_name(name + "_shape"),
                             Tensor::from_int64s(dims, {static_cast<int64_t>(dims.size())}));
  g.add_node(&op("Reshape"), name + "_unflatten", {y2, s}, {y}, {}, opset);
}

void upgrade_batch_norm(Graph& g, NodeId n) {
  Node& node = g.node(n);
  node.attrs.erase("is_test");
  node.attrs.erase("consumed_inputs");
  if (node.opset >= 14) return;
  // Before opset 14 training mode is asked for by outputs beyond Y: running mean and
  // variance (as in opset 14), then saved mean and variance (gone from opset 14).
  if (node.outputs.size() > 3)
    throw UnsupportedError(
        fmt::format("{}: the saved_mean and saved_var outputs of training-mode "
                    "BatchNormalization (opset {}) are not supported",
                    node.describe(), node.opset));
  bool training = node.outputs.size() > 1;
  if (training) node.attrs["training_mode"] = int64_t{1};
  auto it = node.attrs.find("spatial");
  if (node.opset >= 9 || it == node.attrs.end()) return;
  if (attr_type(it->second) != AttrType::Int)
    throw UserError(fmt::format("{}: attribute 'spatial' should be an int", node.describe()));
  bool spatial = std::get<int64_t>(it->second) != 0;
  node.attrs.erase(it);
  if (spatial) return;
  if (training)
    throw UnsupportedError(fmt::format(
        "{}: training-mode BatchNormalization with spatial=0 is not supported", node.describe()));
  flatten_non_spatial(g, n);
}

OpDef batch_norm_op() {
  OpDef d;
  d.name = "BatchNormalization";
  d.since = 1;
  d.oldest = 1;  // opsets 1-6 add only consumed_inputs and is_test, which upgrade drops
  d.kind = FusionKind::Reduce;
  d.min_inputs = d.max_inputs = 5;
  d.max_outputs = 3;
  d.attrs = {attr_f("epsilon", kEps), attr_f("momentum", static_cast<double>(0.9f)),
             attr_i("training_mode", 0)};
  d.types = kFloatTypes;
  d.upgrade = upgrade_batch_norm;
  // Inference: element-wise with per-channel statistics. Training: per-channel moments over
  // N and the spatial dims, and the running statistics updated from them.
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    ctx.set_dtype(1, ctx.dtype(3));
    ctx.set_dtype(2, ctx.dtype(4));
    bool training = ctx.node().attr_int("training_mode") != 0;
    if (!training && ctx.num_outputs() > 1)
      ctx.fail("running_mean and running_var are outputs only in training mode (training_mode=1)");
    const Shape& x = ctx.shape(0);
    int64_t c = channels(ctx, x);
    check_per_channel(ctx, 1, "scale", c, true);
    check_per_channel(ctx, 2, "B", c, true);
    check_per_channel(ctx, 3, "input_mean", c, true);
    check_per_channel(ctx, 4, "input_var", c, true);
    if (ctx.dtype(2) != ctx.dtype(1)) ctx.fail("scale and B must have the same dtype");
    if (ctx.dtype(4) != ctx.dtype(3)) ctx.fail("input_mean and input_var must have the same dtype");
    ctx.set_shape(0, x);
    ctx.set_shape(1, {c});
    ctx.set_shape(2, {c});
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor &scale = ctx.input(1), &bias = ctx.input(2), &mean = ctx.input(3),
                 &var = ctx.input(4);
    double eps = ctx.node().attr_float("epsilon"), momentum = ctx.node().attr_float("momentum");
    bool training = ctx.node().attr_int("training_mode") != 0;
    const Shape& s = x.shape();
    const int64_t batch = s[0], c = s[1], inner = product(s, 2, s.size());
    // Per channel: the statistics Y is normalized with.
    std::vector<bool> reduced(s.size(), true);
    reduced[1] = false;
    ReduceIndex ix = reduce_index(s, reduced);
    Tensor& y = ctx.output(0);
    for (int64_t ch = 0; ch < c; ++ch) {
      Moments m{mean.get_f64(ch), var.get_f64(ch)};
      if (training) {
        m = moments(x, ix.outer[static_cast<size_t>(ch)], ix.inner);
        if (ctx.has_output(1))
          ctx.output(1).set_f64(ch, mean.get_f64(ch) * momentum + m.mean * (1 - momentum));
        if (ctx.has_output(2))
          ctx.output(2).set_f64(ch, var.get_f64(ch) * momentum + m.var * (1 - momentum));
      }
      double a = scale.get_f64(ch) / std::sqrt(m.var + eps), b = bias.get_f64(ch);
      for (int64_t nb = 0; nb < batch; ++nb)
        for (int64_t i = (nb * c + ch) * inner; i < (nb * c + ch + 1) * inner; ++i)
          y.set_f64(i, (x.get_f64(i) - m.mean) * a + b);
    }
  };
  return d;
}

// ---- InstanceNormalization, GroupNormalization ------------------------------------------
// Normalizes each of the `groups` channel groups of each instance of X (N x C x ...) and
// applies per-channel scale and bias.
void group_norm_ref(RefCtx& ctx, int64_t groups) {
  const Tensor& x = ctx.input(0);
  const Tensor &scale = ctx.input(1), &bias = ctx.input(2);
  double eps = ctx.node().attr_float("epsilon");
  if (x.numel() == 0) return;  // also C = 0, where there are no groups to divide by
  const Shape& s = x.shape();
  const int64_t batch = s[0], c = s[1], inner = product(s, 2, s.size());
  const int64_t per_group = c / groups, block = per_group * inner;
  Tensor& y = ctx.output(0);
  for (int64_t nb = 0; nb < batch; ++nb)
    for (int64_t gr = 0; gr < groups; ++gr) {
      int64_t start = (nb * groups + gr) * block;
      Moments m = block_moments(x, start, block);
      double inv = 1.0 / std::sqrt(m.var + eps);
      for (int64_t i = start; i < start + block; ++i) {
        int64_t ch = (i / inner) % c;
        y.set_f64(i, (x.get_f64(i) - m.mean) * inv * scale.get_f64(ch) + bias.get_f64(ch));
      }
    }
}

OpDef instance_norm_op() {
  OpDef d;
  d.name = "InstanceNormalization";
  d.since = 1;
  d.oldest = 1;
  d.kind = FusionKind::Reduce;
  d.min_inputs = d.max_inputs = 3;
  d.attrs = {attr_f("epsilon", kEps)};
  d.types = kFloatTypes;
  // Opset 1's consumed_inputs was a hint for in-place memory reuse; it changes nothing.
  d.upgrade = [](Graph& g, NodeId n) { g.node(n).attrs.erase("consumed_inputs"); };
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    const Shape& x = ctx.shape(0);
    int64_t c = channels(ctx, x);
    check_per_channel(ctx, 1, "scale", c);
    check_per_channel(ctx, 2, "B", c);
    ctx.set_shape(0, x);
  };
  d.reference = [](RefCtx& ctx) { group_norm_ref(ctx, ctx.input(0).shape()[1]); };
  return d;
}

int64_t check_groups(const Node& node, const Shape& x) {
  int64_t groups = node.attr_int("num_groups");
  if (x.size() < 2)
    throw UserError(fmt::format("{}: X must have rank 2 or more (N x C x ...), not shape {}",
                                node.describe(), shape_str(x)));
  if (groups <= 0 || x[1] % groups != 0)
    throw UserError(fmt::format("{}: num_groups {} does not divide the {} channels",
                                node.describe(), groups, x[1]));
  return groups;
}

// Opset 18 gives scale and bias per group; from 21 they are per channel. Constant ones are
// expanded; others go through a Gather of each group's value for every channel.
void upgrade_group_norm(Graph& g, NodeId n) {
  Node& node = g.node(n);
  if (node.opset >= 21) return;
  if (node.inputs.size() != 3 || std::count(node.inputs.begin(), node.inputs.end(), kNoValue))
    return;
  if (!g.value(node.inputs[0]).has_shape)
    throw UserError(fmt::format(
        "{}: before opset 21 the shape of X must be known at import (scale and bias are "
        "per group and become per channel)",
        node.describe()));
  const Shape x = g.value(node.inputs[0]).shape;
  const int64_t groups = check_groups(node, x), c = x[1], per_group = c / groups;
  const std::string name = node.name;
  const int opset = node.opset;
  for (size_t i = 1; i < 3; ++i) {
    ValueId v = g.node(n).inputs[i];
    const Value& val = g.value(v);
    const char* what = i == 1 ? "scale" : "bias";
    if (val.has_shape && val.shape != Shape{groups})
      throw UserError(fmt::format("{}: in opset {} {} must have shape [num_groups] = [{}], not {}",
                                  g.node(n).describe(), opset, what, groups, shape_str(val.shape)));
    if (groups == c) continue;  // one channel per group: already per channel
    if (val.constant) {
      Tensor t(val.dtype, {c});
      for (int64_t ch = 0; ch < c; ++ch) copy_element(*val.constant, ch / per_group, t, ch);
      set_const_input(g, n, i, std::move(t));
      continue;
    }
    const OpDef* gather = find_op("", "Gather");
    if (!gather)
      throw UnsupportedError(
          fmt::format("{}: opset-18 GroupNormalization with a non-constant {} needs Gather, "
                      "which braze lacks",
                      g.node(n).describe(), what));
    std::vector<int64_t> idx(static_cast<size_t>(c));
    for (int64_t ch = 0; ch < c; ++ch) idx[static_cast<size_t>(ch)] = ch / per_group;
    DType dt = val.dtype;
    std::string vname = val.name;
    ValueId ids =
        g.add_constant(g.unique_name(name + "_channel_groups"), Tensor::from_int64s(idx, {c}));
    ValueId per_channel = g.add_value(g.unique_name(vname + "_per_channel"), dt, {c});
    g.add_node(gather, fmt::format("{}_{}_per_channel", name, what), {v, ids}, {per_channel},
               {{"axis", int64_t{0}}}, opset);
    g.node(n).inputs[i] = per_channel;
  }
}

OpDef group_norm_op() {
  OpDef d;
  d.name = "GroupNormalization";
  d.since = 18;
  d.kind = FusionKind::Reduce;
  d.min_inputs = d.max_inputs = 3;
  d.attrs = {attr_f("epsilon", kEps), attr_req("num_groups", AttrType::Int),
             attr_i("stash_type", 1)};
  d.types = kFloatTypes;
  d.upgrade = upgrade_group_norm;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    stash_dtype(ctx);
    const Shape& x = ctx.shape(0);
    check_groups(ctx.node(), x);
    check_per_channel(ctx, 1, "scale", x[1]);
    check_per_channel(ctx, 2, "bias", x[1]);
    ctx.set_shape(0, x);
  };
  d.reference = [](RefCtx& ctx) { group_norm_ref(ctx, ctx.node().attr_int("num_groups")); };
  return d;
}

// ---- MeanVarianceNormalization, LpNormalization, LRN ----------------------------------
OpDef mvn_op() {
  OpDef d;
  d.name = "MeanVarianceNormalization";
  d.since = 9;
  d.kind = FusionKind::Reduce;
  d.attrs = {attr_ints("axes", {0, 2, 3})};
  d.types = kFloatTypes;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    const Shape& x = ctx.shape(0);
    normalize_axes(ctx, ctx.node().attr_ints("axes"), static_cast<int64_t>(x.size()));
    ctx.set_shape(0, x);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    std::vector<bool> reduced(x.shape().size(), false);
    for (int64_t a : ctx.node().attr_ints("axes"))
      reduced[static_cast<size_t>(a < 0 ? a + x.rank() : a)] = true;
    ReduceIndex ix = reduce_index(x.shape(), reduced);
    Tensor& y = ctx.output(0);
    for (int64_t base : ix.outer) {
      Moments m = moments(x, base, ix.inner);
      // ONNX's function body: (X - mean) / (sqrt(var) + 1e-9).
      double den = std::sqrt(m.var) + 1e-9;
      for (int64_t k : ix.inner) y.set_f64(base + k, (x.get_f64(base + k) - m.mean) / den);
    }
  };
  return d;
}

OpDef lp_norm_op() {
  OpDef d;
  d.name = "LpNormalization";
  d.since = 1;
  d.oldest = 1;
  d.kind = FusionKind::Reduce;
  d.attrs = {attr_i("axis", -1), attr_i("p", 2)};
  d.types = kFloatTypes;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    const Shape& x = ctx.shape(0);
    ctx.axis(ctx.node().attr_int("axis"), static_cast<int64_t>(x.size()));
    int64_t p = ctx.node().attr_int("p");
    if (p != 1 && p != 2) ctx.fail(fmt::format("p must be 1 or 2, not {}", p));
    ctx.set_shape(0, x);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    int64_t axis = ctx.node().attr_int("axis");
    if (axis < 0) axis += x.rank();
    bool l1 = ctx.node().attr_int("p") == 1;
    std::vector<bool> reduced(x.shape().size(), false);
    reduced[static_cast<size_t>(axis)] = true;
    ReduceIndex ix = reduce_index(x.shape(), reduced);
    Tensor& y = ctx.output(0);
    for (int64_t base : ix.outer) {
      double s = 0;
      for (int64_t k : ix.inner) {
        double v = x.get_f64(base + k);
        s += l1 ? std::fabs(v) : v * v;
      }
      double norm = l1 ? s : std::sqrt(s);  // a zero vector stays zero (ONNX's tests)
      for (int64_t k : ix.inner) y.set_f64(base + k, norm == 0 ? 0.0 : x.get_f64(base + k) / norm);
    }
  };
  return d;
}

OpDef lrn_op() {
  OpDef d;
  d.name = "LRN";
  d.since = 1;
  d.oldest = 1;
  d.kind = FusionKind::Reduce;
  d.attrs = {attr_f("alpha", static_cast<double>(1e-4f)), attr_f("beta", 0.75), attr_f("bias", 1.0),
             attr_req("size", AttrType::Int)};
  d.types = kFloatTypes;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    const Shape& x = ctx.shape(0);
    channels(ctx, x);
    int64_t size = ctx.node().attr_int("size");
    if (size <= 0) ctx.fail(fmt::format("size must be positive, not {}", size));
    ctx.set_shape(0, x);
  };
  // On the GPU each output element sums the squares of its channel window.
  d.reference = [](RefCtx& ctx) {
    const Tensor& x = ctx.input(0);
    const Node& node = ctx.node();
    double alpha = node.attr_float("alpha"), beta = node.attr_float("beta"),
           bias = node.attr_float("bias");
    int64_t size = node.attr_int("size");
    // The window of channel ch is [ch - floor((size-1)/2), ch + ceil((size-1)/2)], clipped.
    int64_t before = (size - 1) / 2, after = size / 2;
    const Shape& s = x.shape();
    const int64_t batch = s[0], c = s[1], inner = product(s, 2, s.size());
    Tensor& y = ctx.output(0);
    for (int64_t nb = 0; nb < batch; ++nb)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t j = 0; j < inner; ++j) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after);
               ++k) {
            double v = x.get_f64((nb * c + k) * inner + j);
            sq += v * v;
          }
          int64_t i = (nb * c + ch) * inner + j;
          y.set_f64(i,
                    x.get_f64(i) / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
        }
  };
  return d;
}

}  // namespace

void register_normalization_ops(std::vector<OpDef>& r) {
  r.push_back(layer_norm_op());
  r.push_back(batch_norm_op());
  r.push_back(instance_norm_op());
  r.push_back(group_norm_op());
  r.push_back(mvn_op());
  r.push_back(lp_norm_op());
  r.push_back(lrn_op());
}

}  // namespace braze::graph
