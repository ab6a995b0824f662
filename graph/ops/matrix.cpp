// Matrix products: MatMul (numpy matmul semantics), Gemm, and Einsum with general equations.
#include <algorithm>
#include <limits>
#include <map>
#include <type_traits>

#include <fmt/format.h>

#include "graph/ops/families.h"
#include "graph/ops/helpers.h"
#include "graph/ops/matrix.h"

namespace braze::graph {
namespace {

using namespace ops;

// Float types plus the integer types ONNX allows for MatMul and Gemm (opset 9+ / 11+).
constexpr DTypeSet kMatrixTypes =
    kFloatTypes | DTypeSet{DType::Int32, DType::Int64, DType::UInt32, DType::UInt64};

[[noreturn]] void fail_node(const Node& n, const std::string& msg) {
  throw UserError(fmt::format("{}: {}", n.describe(), msg));
}

// a + b * c in the compute type; integers wrap as two's complement instead of overflowing.
template <class C>
C mul_add(C a, C b, C c) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<uint64_t>(a) +
                          static_cast<uint64_t>(b) * static_cast<uint64_t>(c));
  else
    return a + b * c;
}

template <class C>
C mul(C a, C b) {
  return mul_add<C>(0, a, b);
}

template <class C>
C add(C a, C b) {
  return mul_add<C>(a, b, 1);
}

// alpha * v for Gemm's float scale factors; integers stay exact when alpha is 1.
template <class C>
C scale(C v, double alpha) {
  if constexpr (std::is_integral_v<C>) {
    if (alpha == 1.0) return v;
    double r = alpha * static_cast<double>(v);  // saturate rather than overflow the cast
    if (!(r > static_cast<double>(std::numeric_limits<C>::lowest())))
      return std::numeric_limits<C>::lowest();
    if (r >= static_cast<double>(std::numeric_limits<C>::max()))
      return std::numeric_limits<C>::max();
    return static_cast<C>(r);
  } else {
    return static_cast<C>(alpha) * v;
  }
}

void check_same_dtype(const InferCtx& ctx, size_t i, const char* what) {
  if (ctx.has_input(i) && ctx.dtype(i) != ctx.dtype(0))
    ctx.fail(fmt::format("{} has dtype {}, but A has {}", what, dtype_name(ctx.dtype(i)),
                         dtype_name(ctx.dtype(0))));
}

// ---- MatMul ----------------------------------------------------------------------------
// A 1-D A is [1,K] and a 1-D B is [K,1] for the product; the added dims are dropped from
// the output. Dims before the last two are batch dims, broadcast numpy-style.
struct MatMulDims {
  Shape batch_a, batch_b, batch, out;
  int64_t m = 0, k = 0, n = 0;
};

MatMulDims matmul_dims(const Node& node, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty())
    fail_node(node, fmt::format("operands must have rank >= 1, got A {} and B {}", shape_str(a),
                                shape_str(b)));
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  Shape am = a_vec ? Shape{1, a[0]} : a;
  Shape bm = b_vec ? Shape{b[0], 1} : b;
  MatMulDims d;
  d.m = am[am.size() - 2];
  d.k = am[am.size() - 1];
  int64_t kb = bm[bm.size() - 2];
  d.n = bm[bm.size() - 1];
  if (d.k != kb)
    fail_node(node, fmt::format("inner dimensions differ: A {} has {} columns but B {} has {} rows",
                                shape_str(a), d.k, shape_str(b), kb));
  d.batch_a.assign(am.begin(), am.end() - 2);
  d.batch_b.assign(bm.begin(), bm.end() - 2);
  size_t rank = std::max(d.batch_a.size(), d.batch_b.size());
  d.batch.assign(rank, 1);
  for (const Shape* s : {&d.batch_a, &d.batch_b}) {
    size_t off = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t x = (*s)[i];
      int64_t& o = d.batch[off + i];
      if (x == o || x == 1) continue;
      if (o != 1)
        fail_node(node,
                  fmt::format("batch dimensions of A {} and B {} cannot be broadcast together",
                              shape_str(a), shape_str(b)));
      o = x;
    }
  }
  d.out = d.batch;
  if (!a_vec) d.out.push_back(d.m);
  if (!b_vec) d.out.push_back(d.n);
  return d;
}

OpDef matmul_op() {
  OpDef d;
  d.name = "MatMul";
  d.since = 1;
  d.kind = FusionKind::OutEWiseFusable;
  d.min_inputs = d.max_inputs = 2;
  d.types = kMatrixTypes;
  d.infer = [](InferCtx& ctx) {
    check_same_dtype(ctx, 1, "B");
    ctx.set_dtype(0, ctx.dtype(0));
    ctx.set_shape(0, matmul_dims(ctx.node(), ctx.shape(0), ctx.shape(1)).out);
  };
  d.reference = [](RefCtx& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    MatMulDims md = matmul_dims(ctx.node(), a.shape(), b.shape());
    const int64_t m = md.m, k = md.k, n = md.n;
    with_compute(a.dtype(), [&](auto c) {
      using C = decltype(c);
      for_each_broadcast(
          md.batch, {&md.batch_a, &md.batch_b}, [&](int64_t bi, const std::vector<int64_t>& off) {
            int64_t a0 = off[0] * m * k, b0 = off[1] * k * n, y0 = bi * m * n;
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                C acc = 0;
                for (int64_t p = 0; p < k; ++p)
                  acc = mul_add<C>(acc, a.get<C>(a0 + i * k + p), b.get<C>(b0 + p * n + j));
                y.set<C>(y0 + i * n + j, acc);
              }
          });
    });
  };
  return d;
}

// ---- Gemm ------------------------------------------------------------------------------
// Y = alpha * op(A) * op(B) + beta * C, op = transpose when transA / transB; C broadcasts
// unidirectionally to [M,N].
struct GemmDims {
  int64_t m = 0, k = 0, n = 0;
};

GemmDims gemm_dims(const Node& node, const Shape& a, const Shape& b) {
  if (a.size() != 2 || b.size() != 2)
    fail_node(node, fmt::format("A and B must be matrices, got A {} and B {}", shape_str(a),
                                shape_str(b)));
  bool ta = node.attr_int("transA") != 0, tb = node.attr_int("transB") != 0;
  GemmDims d;
  d.m = ta ? a[1] : a[0];
  d.k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0];
  d.n = tb ? b[0] : b[1];
  if (d.k != kb)
    fail_node(node,
              fmt::format(
                  "inner dimensions differ: op(A) of A {} (transA={}) has {} columns but op(B) of "
                  "B {} (transB={}) has {} rows",
                  shape_str(a), ta ? 1 : 0, d.k, shape_str(b), tb ? 1 : 0, kb));
  return d;
}

OpDef gemm_op() {
  OpDef d;
  d.name = "Gemm";
  d.since = 1;
  d.kind = FusionKind::OutEWiseFusable;
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.types = kMatrixTypes;
  d.attrs = {attr_f("alpha", 1.0), attr_f("beta", 1.0), attr_i("transA", 0), attr_i("transB", 0)};
  d.upgrade = [](Graph& g, NodeId n) {  // opsets 7-10 require C; 11 made it optional
    const Node& node = g.node(n);
    if (node.opset < 11 && !node.has_input(2))
      fail_node(node, fmt::format("input C is required before opset 11 (the model uses opset {})",
                                  node.opset));
  };
  d.infer = [](InferCtx& ctx) {
    check_same_dtype(ctx, 1, "B");
    check_same_dtype(ctx, 2, "C");
    ctx.set_dtype(0, ctx.dtype(0));
    GemmDims gd = gemm_dims(ctx.node(), ctx.shape(0), ctx.shape(1));
    if (ctx.has_input(2)) {
      const Shape& c = ctx.shape(2);
      bool ok = c.size() <= 2;
      Shape mn{gd.m, gd.n};
      for (size_t i = 0; ok && i < c.size(); ++i) {
        int64_t want = mn[2 - c.size() + i];
        ok = c[i] == want || c[i] == 1;
      }
      if (!ok)
        ctx.fail(fmt::format("C {} cannot be broadcast to the output shape [{},{}]", shape_str(c),
                             gd.m, gd.n));
    }
    ctx.set_shape(0, {gd.m, gd.n});
  };
  d.reference = [](RefCtx& ctx) {
    const Node& node = ctx.node();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* cm = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    GemmDims gd = gemm_dims(node, a.shape(), b.shape());
    const int64_t m = gd.m, k = gd.k, n = gd.n;
    bool ta = node.attr_int("transA") != 0, tb = node.attr_int("transB") != 0;
    double alpha = node.attr_float("alpha"), beta = node.attr_float("beta");
    std::vector<int64_t> cst =
        cm ? broadcast_strides(cm->shape(), {m, n}) : std::vector<int64_t>{0, 0};
    with_compute(a.dtype(), [&](auto c) {
      using C = decltype(c);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          C acc = 0;
          for (int64_t p = 0; p < k; ++p) {
            int64_t ai = ta ? p * m + i : i * k + p;
            int64_t bi = tb ? j * k + p : p * n + j;
            acc = mul_add<C>(acc, a.get<C>(ai), b.get<C>(bi));
          }
          C v = scale<C>(acc, alpha);
          if (cm) v = add<C>(v, scale<C>(cm->get<C>(i * cst[0] + j * cst[1]), beta));
          y.set<C>(i * n + j, v);
        }
    });
  };
  return d;
}

struct EinsumTerm {
  std::string letters;  // in order, with '.' standing for the ellipsis
  bool ellipsis = false;
};

EinsumTerm parse_term(const Node& node, const std::string& term, const std::string& eq) {
  EinsumTerm t;
  for (size_t i = 0; i < term.size(); ++i) {
    char ch = term[i];
    if (ch == '.') {
      if (term.compare(i, 3, "...") != 0 || t.ellipsis)
        fail_node(node,
                  fmt::format("equation '{}': '.' must appear only as one '...' per term", eq));
      t.ellipsis = true;
      t.letters += '.';
      i += 2;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      t.letters += ch;
    } else {
      fail_node(node, fmt::format("equation '{}' has an invalid character '{}'", eq, ch));
    }
  }
  return t;
}

}  // namespace

namespace {

// The equation's operand terms, one per input.
std::vector<EinsumTerm> einsum_terms(const Node& node, const std::string& eq,
                                     const std::string& lhs, size_t inputs) {
  std::vector<EinsumTerm> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(
        node, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start),
        eq));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != inputs)
    fail_node(node, fmt::format("equation '{}' has {} operand terms but the node has {} inputs", eq,
                                terms.size(), inputs));
  return terms;
}

// Each term's ellipsis rank (into ell_rank); returns E, the largest.
int64_t ellipsis_ranks(const Node& node, const std::string& eq,
                       const std::vector<EinsumTerm>& terms, const std::vector<Shape>& shapes,
                       std::vector<int64_t>& ell_rank) {
  ell_rank.assign(terms.size(), 0);
  int64_t e = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    int64_t nletters = static_cast<int64_t>(terms[k].letters.size()) - (terms[k].ellipsis ? 1 : 0);
    int64_t rank = static_cast<int64_t>(shapes[k].size());
    if (terms[k].ellipsis ? nletters > rank : nletters != rank)
      fail_node(node, fmt::format("equation '{}': term {} ('{}') does not fit input {} of shape {}",
                                  eq, k, terms[k].letters, k, shape_str(shapes[k])));
    if (terms[k].ellipsis) ell_rank[k] = rank - nletters;
    e = std::max(e, ell_rank[k]);
  }
  return e;
}

// Input k's labels, and the sizes they give: a label repeated within one operand (a
// diagonal) needs equal dims there; across operands, dims broadcast as numpy's einsum does
// (equal, or 1).
void label_operand(const Node& node, const std::string& eq, size_t k, const EinsumTerm& term,
                   const Shape& shape, const std::map<char, int>& letter_id, int64_t e,
                   int64_t ell_rank, EinsumSpec& spec) {
  std::vector<int>& labels = spec.in_labels[k];
  for (char ch : term.letters) {
    if (ch != '.') {
      labels.push_back(letter_id.at(ch));
      continue;
    }
    for (int64_t j = 0; j < ell_rank; ++j) labels.push_back(static_cast<int>(e - ell_rank + j));
  }
  std::map<int, int64_t> seen;
  for (size_t i = 0; i < labels.size(); ++i) {
    int l = labels[i];
    int64_t dim = shape[i];
    auto [it, fresh] = seen.emplace(l, dim);
    if (!fresh && it->second != dim)
      fail_node(node,
                fmt::format("equation '{}': a repeated index of input {} (shape {}) spans dims of "
                            "different sizes {} and {}",
                            eq, k, shape_str(shape), it->second, dim));
  }
  for (auto [l, dim] : seen) {
    int64_t& s = spec.sizes[static_cast<size_t>(l)];
    if (s == -1 || s == 1)
      s = dim;
    else if (dim != s && dim != 1)
      fail_node(node,
                fmt::format("equation '{}': an index has size {} in one input and {} in input {} "
                            "(shape {})",
                            eq, s, dim, k, shape_str(shape)));
  }
}

// The output's labels: as written after '->', else the ellipsis then the letters seen once,
// in order.
std::vector<int> output_labels(const Node& node, const std::string& eq, size_t arrow, int64_t e,
                               const std::map<char, int>& letter_id,
                               const std::map<char, int>& count) {
  std::vector<int> out_labels;
  if (arrow == std::string::npos) {
    for (int l = 0; l < e; ++l) out_labels.push_back(l);
    for (auto [ch, id] : letter_id)
      if (count.at(ch) == 1) out_labels.push_back(id);
    return out_labels;
  }
  EinsumTerm out = parse_term(node, eq.substr(arrow + 2), eq);
  if (e > 0 && !out.ellipsis)
    fail_node(node, fmt::format("equation '{}': the inputs' '...' stands for {} dims, but the "
                                "output has no '...'",
                                eq, e));
  for (char ch : out.letters) {
    if (ch == '.') {
      for (int l = 0; l < e; ++l) out_labels.push_back(l);
      continue;
    }
    auto it = letter_id.find(ch);
    if (it == letter_id.end())
      fail_node(node, fmt::format("equation '{}': output index '{}' appears in no input", eq, ch));
    if (std::count(out.letters.begin(), out.letters.end(), ch) > 1)
      fail_node(node,
                fmt::format("equation '{}': output index '{}' appears more than once", eq, ch));
    out_labels.push_back(it->second);
  }
  return out_labels;
}

}  // namespace

EinsumSpec parse_einsum(const Node& node, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char ch : node.attr_string("equation"))
    if (ch != ' ' && ch != '\t') eq += ch;
  size_t arrow = eq.find("->");
  if (arrow != std::string::npos && eq.find("->", arrow + 2) != std::string::npos)
    fail_node(node, fmt::format("equation '{}' has more than one '->'", eq));
  const std::vector<EinsumTerm> terms = einsum_terms(node, eq, eq.substr(0, arrow), shapes.size());
  std::vector<int64_t> ell_rank;
  const int64_t e = ellipsis_ranks(node, eq, terms, shapes, ell_rank);
  // Letters get ids after the ellipsis labels; ids in ASCII order so that the implicit output
  // (letters sorted) is simply id order.
  std::map<char, int> letter_id;
  std::map<char, int> count;
  for (const EinsumTerm& t : terms)
    for (char ch : t.letters)
      if (ch != '.') {
        letter_id[ch] = 0;
        ++count[ch];
      }
  int next = static_cast<int>(e);
  for (auto& [ch, id] : letter_id) id = next++;
  EinsumSpec spec;
  spec.sizes.assign(static_cast<size_t>(next), -1);
  spec.in_labels.resize(terms.size());
  for (size_t k = 0; k < terms.size(); ++k)
    label_operand(node, eq, k, terms[k], shapes[k], letter_id, e, ell_rank[k], spec);
  spec.out_labels = output_labels(node, eq, arrow, e, letter_id, count);
  return spec;
}

namespace {

// Einsum's inference: every input present and of input 0's dtype; the output's shape.
void infer_einsum(InferCtx& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) ctx.fail(fmt::format("input {} is missing", i));
    if (ctx.dtype(i) != ctx.dtype(0))
      ctx.fail(fmt::format("input {} has dtype {}, but input 0 has {}", i, dtype_name(ctx.dtype(i)),
                           dtype_name(ctx.dtype(0))));
  }
  ctx.set_dtype(0, ctx.dtype(0));
  for (size_t i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.shape(i));
  EinsumSpec spec = parse_einsum(ctx.node(), shapes);
  Shape out;
  for (int l : spec.out_labels) out.push_back(spec.sizes[static_cast<size_t>(l)]);
  ctx.set_shape(0, out);
}

// One odometer over all labels, output labels outermost: each run of `inner` steps sums into
// one output element.
struct EinsumLoop {
  std::vector<int> order;  // the labels, outermost first
  Shape dims;              // their sizes
  int64_t inner = 0, total = 0;
  // stride[k][i]: step of input k's offset when label order[i] advances (0 when broadcast).
  std::vector<std::vector<int64_t>> stride;
};

// The odometer for `spec` over inputs of `shapes`.
EinsumLoop einsum_loop(const Node& node, const EinsumSpec& spec, const std::vector<Shape>& shapes) {
  EinsumLoop lp;
  lp.order = spec.out_labels;
  for (int l = 0; l < static_cast<int>(spec.sizes.size()); ++l)
    if (std::find(lp.order.begin(), lp.order.end(), l) == lp.order.end()) lp.order.push_back(l);
  Shape inner_dims;
  for (size_t i = 0; i < lp.order.size(); ++i) {
    lp.dims.push_back(spec.sizes[static_cast<size_t>(lp.order[i])]);
    if (i >= spec.out_labels.size()) inner_dims.push_back(lp.dims.back());
  }
  lp.inner = checked_numel(inner_dims, node.describe() + " summation space");
  lp.total = checked_numel(lp.dims, node.describe() + " iteration space");
  std::vector<int> pos(spec.sizes.size());
  for (size_t i = 0; i < lp.order.size(); ++i)
    pos[static_cast<size_t>(lp.order[i])] = static_cast<int>(i);
  lp.stride.assign(shapes.size(), std::vector<int64_t>(lp.order.size(), 0));
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<int64_t> cs = contiguous_strides(shapes[k]);
    for (size_t dim = 0; dim < shapes[k].size(); ++dim) {
      int l = spec.in_labels[k][dim];
      if (shapes[k][dim] != 1)
        lp.stride[k][static_cast<size_t>(pos[static_cast<size_t>(l)])] += cs[dim];
    }
  }
  return lp;
}

// Runs the odometer in compute type C: y's elements, each the sum of the operands' products.
template <class C>
void einsum_sum(const std::vector<const Tensor*>& ins, const EinsumLoop& lp, Tensor& y) {
  if (lp.inner == 0) {
    for (int64_t o = 0; o < y.numel(); ++o) y.set<C>(o, 0);
    return;
  }
  std::vector<int64_t> idx(lp.order.size(), 0), off(ins.size(), 0);
  C acc = 0;
  for (int64_t it = 0; it < lp.total; ++it) {
    C prod = ins[0]->get<C>(off[0]);
    for (size_t k = 1; k < ins.size(); ++k) prod = mul<C>(prod, ins[k]->get<C>(off[k]));
    acc = add<C>(acc, prod);
    if ((it + 1) % lp.inner == 0) {
      y.set<C>(it / lp.inner, acc);
      acc = 0;
    }
    for (size_t i = lp.order.size(); i-- > 0;) {
      ++idx[i];
      for (size_t k = 0; k < ins.size(); ++k) off[k] += lp.stride[k][i];
      if (idx[i] < lp.dims[i]) break;
      for (size_t k = 0; k < ins.size(); ++k) off[k] -= lp.stride[k][i] * lp.dims[i];
      idx[i] = 0;
    }
  }
}

// Einsum's reference. On the GPU each output element is one loop over the flattened
// contracted labels (their sizes are constants, so unravelling is constant division), the
// product of the operands at each step. Integers wrap as in the reference.
void reference_einsum(RefCtx& ctx) {
  std::vector<const Tensor*> ins;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ins.push_back(&ctx.input(i));
    shapes.push_back(ctx.input(i).shape());
  }
  EinsumSpec spec = parse_einsum(ctx.node(), shapes);
  Tensor& y = ctx.output(0);
  const EinsumLoop lp = einsum_loop(ctx.node(), spec, shapes);
  with_compute(ins[0]->dtype(), [&](auto c) { einsum_sum<decltype(c)>(ins, lp, y); });
}

OpDef einsum_op() {
  OpDef d;
  d.name = "Einsum";
  d.since = 12;
  d.kind = FusionKind::Opaque;
  d.min_inputs = 1;
  d.max_inputs = -1;
  d.types = kNumericTypes;
  d.attrs = {attr_req("equation", AttrType::String)};
  d.infer = infer_einsum;
  d.reference = reference_einsum;
  return d;
}

}  // namespace

void register_matrix_ops(std::vector<OpDef>& r) {
  r.push_back(matmul_op());
  r.push_back(gemm_op());
  r.push_back(einsum_op());
}

}  // namespace braze::graph
