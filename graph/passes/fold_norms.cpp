#include "graph/passes/fold_norms.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

#include "graph/onnx_dtype.h"
#include "graph/op_context.h"
#include "graph/passes/pass.h"
#include "graph/registry.h"

namespace braze::graph::passes {

namespace {

// A product reading LN(x): its rows Reshape (or none), the MatMul, and its constant weights
// W [K, N], given directly or as Transpose(Wᵀ) with Wᵀ [N, K] a constant (k-major).
struct Reader {
  NodeId reshape = kNoNode, matmul = kNoNode;
  ValueId weights = kNoValue;  // the constant: W, or Wᵀ when k_major
  bool k_major = false;
};

// The LayerNormalization `id` and what reads its output, when it folds.
struct Fold {
  NodeId norm = kNoNode;
  std::vector<Reader> products;
  std::vector<NodeId> elementwise;
};

bool is_op(const Node& n, const char* name) { return n.op_type() == name && n.op->domain.empty(); }

// W of MatMul m as a constant [K, N] (or Transpose(Wᵀ) of one), K the normalised length.
std::optional<Reader> product_reader(const Graph& g, NodeId m, int64_t k) {
  const Node& mm = g.node(m);
  if (!is_op(mm, "MatMul") || mm.inputs.size() != 2) return std::nullopt;
  Reader r;
  r.matmul = m;
  const Value& w = g.value(mm.inputs[1]);
  if (!w.has_shape || w.shape.size() != 2 || w.shape[0] != k) return std::nullopt;
  if (w.constant) {
    r.weights = mm.inputs[1];
    return r;
  }
  if (w.producer == kNoNode) return std::nullopt;
  const Node& t = g.node(w.producer);
  if (!is_op(t, "Transpose") || t.attr_ints("perm") != std::vector<int64_t>{1, 0} ||
      !g.value(t.inputs[0]).constant)
    return std::nullopt;
  r.weights = t.inputs[0];
  r.k_major = true;
  return r;
}

// Whether LayerNormalization `id` folds: over the last axis, γ and β constants of [K],
// statistics unread, its output read by products (as their A) and element-wise ops only.
std::optional<Fold> fold_of(const Graph& g, const Users& users, NodeId id) {
  const Node& n = g.node(id);
  if (!is_op(n, "LayerNormalization") || n.outputs.empty()) return std::nullopt;
  const ValueId y = n.outputs[0];
  const Value& x = g.value(n.inputs[0]);
  if (y == kNoValue || g.is_graph_output(y) || !x.has_shape || x.shape.empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.shape.size()), k = x.shape.back();
  int64_t axis = n.attr_int("axis");
  if (axis < 0) axis += rank;
  if (axis != rank - 1 || n.attr_int("stash_type") != 1) return std::nullopt;
  if (x.dtype != DType::Float32 && x.dtype != DType::Float16 && x.dtype != DType::BFloat16)
    return std::nullopt;
  for (size_t i = 1; i < 3; ++i) {
    if (!n.has_input(i)) continue;
    const Value& p = g.value(n.inputs[i]);
    if (!p.constant || p.constant->numel() != k) return std::nullopt;
  }
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.outputs[o] != kNoValue &&
        (g.is_graph_output(n.outputs[o]) || !users[n.outputs[o]].empty()))
      return std::nullopt;
  Fold f;
  f.norm = id;
  for (NodeId u : users[y]) {
    const Node& un = g.node(u);
    NodeId m = u, reshape = kNoNode;
    if (is_op(un, "Reshape") && un.inputs[0] == y) {
      const ValueId rows = un.outputs[0];
      const Value& rv = g.value(rows);
      if (g.is_graph_output(rows) || users[rows].size() != 1 || !rv.has_shape ||
          rv.shape.size() != 2 || rv.shape[1] != k)
        return std::nullopt;
      reshape = u;
      m = users[rows][0];
    }
    std::optional<Reader> r = product_reader(g, m, k);
    if (r && g.node(m).inputs[0] == (reshape == kNoNode ? y : g.node(reshape).outputs[0])) {
      r->reshape = reshape;
      f.products.push_back(*r);
    } else if (reshape == kNoNode && is_elementwise(un)) {
      f.elementwise.push_back(u);
    } else {
      return std::nullopt;
    }
  }
  if (f.products.empty()) return std::nullopt;
  return f;
}

// Builds nodes of one fold.
class Folder {
 public:
  Folder(Graph& g, const Fold& f) : g_(g), f_(f) {
    const Node& n = g_.node(f.norm);
    name_ = n.name;
    x_ = n.inputs[0];
    dtype_ = g_.value(x_).dtype;
    shape_ = g_.value(x_).shape;
    k_ = shape_.back();
    gamma_ = values_of(n.inputs[1]);
    beta_ = n.has_input(2) ? values_of(n.inputs[2]) : std::vector<double>(k_, 0.0);
  }

  void run() {
    make_statistics();
    for (const Reader& r : f_.products) fold_product(r);
    if (!f_.elementwise.empty()) rebuild_for_elementwise();
  }

 private:
  std::vector<double> values_of(ValueId v) const {
    const Tensor& t = *g_.value(v).constant;
    std::vector<double> r(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) r[i] = t.get_f64(i);
    return r;
  }

  ValueId constant(const std::string& what, Tensor t) {
    return g_.add_constant(g_.unique_name(fmt::format("{}_{}", name_, what)), std::move(t));
  }
  ValueId floats(const std::string& what, const std::vector<double>& v) {
    Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.set_f64(static_cast<int64_t>(i), v[i]);
    return constant(what, std::move(t));
  }
  ValueId node(const char* op_name, std::vector<ValueId> ins, DType dt, Shape shape,
               Attributes attrs = {}) {
    const ValueId out =
        g_.add_value(g_.unique_name(fmt::format("{}_{}", name_, op_name)), dt, std::move(shape));
    infer_node(g_, g_.add_node(&op(op_name), g_.unique_name(name_ + "_fold"), std::move(ins), {out},
                               std::move(attrs), 19));
    return out;
  }
  ValueId cast(ValueId v, DType to) {
    if (g_.value(v).dtype == to) return v;
    return node("Cast", {v}, to, g_.value(v).shape, {{"to", dtype_to_onnx(to)}});
  }
  ValueId reshape(ValueId v, const Shape& to) {
    const ValueId s = shape_constant(g_, name_ + "_shape", to);
    return node("Reshape", {v, s}, g_.value(v).dtype, to);
  }

  // The LayerNormalization's Mean and InvStdDev outputs (float32, x's shape with the last dim 1).
  void make_statistics() {
    Shape stat = shape_;
    stat.back() = 1;
    Node& n = g_.node(f_.norm);
    n.outputs.resize(3, kNoValue);
    for (size_t o = 1; o < 3; ++o) {
      if (n.outputs[o] == kNoValue) {
        const ValueId v =
            g_.add_value(g_.unique_name(fmt::format("{}_{}", name_, o == 1 ? "mean" : "rstd")),
                         DType::Float32, stat);
        g_.node(f_.norm).outputs[o] = v;
        g_.value(v).producer = f_.norm;
      }
    }
    mean_ = g_.node(f_.norm).outputs[1];
    rstd_ = g_.node(f_.norm).outputs[2];
  }

  // γ W as the product's weights (W's dtype, its layout), and the columns' c and d.
  void fold_product(const Reader& r) {
    const Tensor& w = *g_.value(r.weights).constant;
    const int64_t n_cols = r.k_major ? w.shape()[0] : w.shape()[1];
    Tensor scaled(w.dtype(), w.shape());
    std::vector<double> c(static_cast<size_t>(n_cols), 0.0), d(static_cast<size_t>(n_cols), 0.0);
    for (int64_t kk = 0; kk < k_; ++kk)
      for (int64_t nn = 0; nn < n_cols; ++nn) {
        const int64_t at = r.k_major ? nn * k_ + kk : kk * n_cols + nn;
        const double wv = w.get_f64(at);
        scaled.set_f64(at, wv * gamma_[kk]);
        c[nn] += scaled.get_f64(at);  // the weights as stored: the sum's own rounding
        d[nn] += beta_[kk] * wv;
      }
    ValueId wv = constant("weights", std::move(scaled));
    if (r.k_major)
      wv = node("Transpose", {wv}, w.dtype(), {k_, n_cols}, {{"perm", std::vector<int64_t>{1, 0}}});
    const ValueId old_out = g_.node(r.matmul).outputs[0];
    const Shape out_shape = g_.value(old_out).shape;
    const DType out_dtype = g_.value(old_out).dtype;
    const ValueId a =
        r.reshape != kNoNode ? reshape(x_, g_.value(g_.node(r.reshape).outputs[0]).shape) : x_;
    const ValueId product = node("MatMul", {a, wv}, out_dtype, out_shape);
    // The correction where the statistics have their own shape (x's rows' dims): after the
    // Reshape back from rows that flatten_matmul_rows put after the product, if there is one —
    // a Reshape of the statistics would be one more value the products' kernels share.
    Shape full = shape_;
    full.back() = n_cols;
    const NodeId back = reshape_back(old_out, full);
    const ValueId target = back != kNoNode ? g_.node(back).outputs[0] : old_out;
    ValueId sum = product, mean = mean_, rstd = rstd_;
    if (back != kNoNode || r.reshape == kNoNode) {
      if (back != kNoNode) sum = reshape(product, full);
    } else {
      Shape stat_rows = out_shape;
      stat_rows.back() = 1;
      mean = reshape(mean_, stat_rows);
      rstd = reshape(rstd_, stat_rows);
    }
    const Shape ys = g_.value(sum).shape;
    const ValueId t = node("Mul", {mean, floats("colsum", c)}, DType::Float32, ys);
    const ValueId u = node("Sub", {cast(sum, DType::Float32), t}, DType::Float32, ys);
    const ValueId v = node("Mul", {u, rstd}, DType::Float32, ys);
    const ValueId y = node("Add", {v, floats("bias", d)}, DType::Float32, ys);
    g_.replace_all_uses(target, cast(y, out_dtype));
    if (back != kNoNode) g_.kill_node(back);
    g_.kill_node(r.matmul);
    if (r.reshape != kNoNode) g_.kill_node(r.reshape);
  }

  // The Reshape of `v` to `shape` that is v's only reader, or kNoNode.
  NodeId reshape_back(ValueId v, const Shape& shape) const {
    const Users users = g_.users();
    if (g_.is_graph_output(v) || users[v].size() != 1) return kNoNode;
    const NodeId u = users[v][0];
    const Node& un = g_.node(u);
    if (!is_op(un, "Reshape") || un.inputs[0] != v || g_.value(un.outputs[0]).shape != shape)
      return kNoNode;
    return u;
  }

  // LN(x) rebuilt for its element-wise readers: (x − mean) · rstd · γ + β in float32.
  void rebuild_for_elementwise() {
    const ValueId y_old = g_.node(f_.norm).outputs[0];
    const ValueId s = node("Sub", {cast(x_, DType::Float32), mean_}, DType::Float32, shape_);
    const ValueId r = node("Mul", {s, rstd_}, DType::Float32, shape_);
    const ValueId gm = node("Mul", {r, floats("scale", gamma_)}, DType::Float32, shape_);
    const ValueId h =
        cast(node("Add", {gm, floats("shift", beta_)}, DType::Float32, shape_), dtype_);
    for (NodeId e : f_.elementwise)
      for (ValueId& in : g_.node(e).inputs)
        if (in == y_old) in = h;
  }

  Graph& g_;
  const Fold& f_;
  std::string name_;
  ValueId x_ = kNoValue, mean_ = kNoValue, rstd_ = kNoValue;
  DType dtype_ = DType::Float32;
  Shape shape_;
  int64_t k_ = 0;
  std::vector<double> gamma_, beta_;
};

}  // namespace

int fold_norms_into_products(Graph& g) {
  int folded = 0;
  for (NodeId id : g.topo_order()) {
    if (g.node(id).dead || !is_op(g.node(id), "LayerNormalization")) continue;
    const Users users = g.users();
    const std::optional<Fold> f = fold_of(g, users, id);
    if (!f) continue;
    Folder(g, *f).run();
    ++folded;
  }
  return folded;
}

}  // namespace braze::graph::passes
