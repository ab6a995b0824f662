// The GEMM schedules for MatMul and Gemm groups, and what they share. A group's product
// (batched over numpy-broadcast batch dims, either operand transposed) runs on the
// tensor-core schedule (gemm_tc.cpp) for float16 / bfloat16 operands it can read directly on
// sm_80+, else on the register-blocked SIMT schedule (gemm_simt.cpp); the tensor-core
// candidates come first in the search space. Both finish the output in registers with the
// code here: alpha and Gemm's beta * C, then the chain of element-wise ops after the product
// (bias, activation, residual, scale, cast) and layout ops, whose forward maps say where each
// element lands — so the result is written once, in the layout its consumer wants.
#include "codegen/lowering.h"
#include "codegen/gemm.h"

#include <braze/error.h>

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "codegen/cuda_hooks.h"
#include "graph/column_pairs.h"
#include "graph/registry.h"

namespace braze::codegen {

std::vector<std::string> operand_coords(const Shape& out_batch, const Shape& in_batch,
                                        std::vector<std::string> tail) {
  std::vector<std::string> ob = cuda_unravel("b", out_batch);
  std::vector<std::string> c;
  size_t off = out_batch.size() - in_batch.size();
  for (size_t d = 0; d < in_batch.size(); ++d) c.push_back(in_batch[d] == 1 ? "0LL" : ob[off + d]);
  c.insert(c.end(), tail.begin(), tail.end());
  return c;
}

std::optional<GemmDims> gemm_dims(const graph::Graph& g, const fusion::Group& group,
                                  std::string* why_not) {
  GemmDims d;
  for (graph::NodeId id : group.nodes)
    if (g.node(id).op->kind == graph::FusionKind::OutEWiseFusable) {
      if (d.node) {
        *why_not = "two matrix products in one group";
        return std::nullopt;
      }
      d.node = &g.node(id);
    }
  BRAZE_CHECK(d.node != nullptr, "a GEMM group without a matrix product");
  const graph::Node& n = *d.node;
  if (n.op_type() == "Gemm") {
    d.ta = n.attr_int("transA") != 0;
    d.tb = n.attr_int("transB") != 0;
    d.alpha = n.attr_float("alpha");
    d.beta = n.attr_float("beta");
  }
  const graph::Value& a = g.value(n.inputs[0]);
  const graph::Value& b = g.value(n.inputs[1]);
  d.elem_bytes = static_cast<int>(dtype_size(a.dtype));
  d.a_vec = a.shape.size() == 1;
  d.b_vec = b.shape.size() == 1;
  Shape as = a.shape, bs = b.shape;
  if (d.a_vec) as.insert(as.begin(), 1);  // numpy promotion of 1-D operands
  if (d.b_vec) bs.push_back(1);
  d.m = d.ta ? as[as.size() - 1] : as[as.size() - 2];
  d.k = d.ta ? as[as.size() - 2] : as[as.size() - 1];
  d.nn = d.tb ? bs[bs.size() - 2] : bs[bs.size() - 1];
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  d.out_batch.assign(std::max(a_batch.size(), b_batch.size()), 1);
  for (const Shape* s : {&a_batch, &b_batch})
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t& o = d.out_batch[d.out_batch.size() - s->size() + i];
      if (o == 1) o = (*s)[i];  // broadcasting: a 1 takes the other's size, 0 included
    }
  d.batches = checked_numel(d.out_batch);
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  auto in_group = [&](graph::NodeId id) { return members.count(id) != 0; };
  for (int i = 0; i < 2; ++i) d.view[i] = gemm_operand_view(g, in_group, d, i, &d.no_view[i]);
  if (!d.view[0]) {
    std::string why;
    d.window = gemm_window_view(g, in_group, d, &why);
    if (!why.empty()) d.no_view[0] = why;
  }
  return d;
}

namespace {

// The store map of a product of `prod` shape whose epilogue layout ops compose to `m`, a
// view of the product's (contiguous) elements over the output's shape; nullopt unless every
// product element lands on its own output element. `cols`: the product's columns as the
// epilogue counts them (a column pair's: half).
std::optional<StoreMap> store_map(const graph::Layout& m, const GemmDims& d, int64_t cols) {
  // The output's factors in row-major order, each with its stride in the output buffer and in
  // the product's flat index.
  struct F {
    int64_t size, prod_stride, out_stride;
  };
  std::vector<F> fs;
  for (const auto& dim : m.dims)
    for (const graph::StridedDim& f : dim)
      if (f.size > 1) fs.push_back({f.size, f.stride, 0});
  int64_t run = 1;
  for (size_t k = fs.size(); k-- > 0;) {
    fs[k].out_stride = run;
    run *= fs[k].size;
  }
  const int64_t nn = d.b_vec ? 1 : cols, mm = d.a_vec ? 1 : d.m;
  if (m.offset != 0 || run != d.batches * mm * nn) return std::nullopt;
  // Split factors at the boundaries of j (nn) and i (m · nn) in the product's flat index.
  for (int64_t bound : {nn, mm * nn}) {
    std::vector<F> out;
    for (const F& f : fs) {
      if (f.prod_stride < bound && f.prod_stride * f.size > bound) {
        if (bound % f.prod_stride != 0 || f.size % (bound / f.prod_stride) != 0)
          return std::nullopt;
        const int64_t low = bound / f.prod_stride;
        out.push_back({f.size / low, bound, f.out_stride * low});
        out.push_back({low, f.prod_stride, f.out_stride});
      } else {
        out.push_back(f);
      }
    }
    fs = out;
  }
  StoreMap s;
  int64_t covered = 1;
  for (const F& f : fs) {
    StoreTerm t;
    t.size = f.size;
    t.out_stride = f.out_stride;
    covered *= f.size;
    if (f.prod_stride < nn) {
      t.var = 'j';
      t.div = f.prod_stride;
    } else if (f.prod_stride < mm * nn) {
      if (f.prod_stride % nn != 0) return std::nullopt;
      t.var = 'i';
      t.div = f.prod_stride / nn;
    } else {
      if (f.prod_stride % (mm * nn) != 0) return std::nullopt;
      t.var = 'b';
      t.div = f.prod_stride / (mm * nn);
    }
    // The terms run outer to inner. A digit of the variable just below the previous term's,
    // at the output stride just below its, makes one term with it (an output reshaped
    // [4096, 3072] -> [32, 128, 3072] is stored at i * 3072 + j, not (i / 128) * 393216 +
    // (i % 128) * 3072 + j).
    if (!s.terms.empty()) {
      StoreTerm& hi = s.terms.back();
      if (hi.var == t.var && hi.div == t.div * t.size && hi.out_stride == t.out_stride * t.size) {
        hi.size *= t.size;
        hi.div = t.div;
        hi.out_stride = t.out_stride;
        continue;
      }
    }
    s.terms.push_back(t);
  }
  for (StoreTerm& t : s.terms)
    t.top = t.div * t.size >= (t.var == 'j' ? nn : t.var == 'i' ? mm : d.batches);
  s.fits_32_bits = covered < (int64_t{1} << 31);
  return s;
}

}  // namespace

std::string gemm_store_offset(const GemmEpilogue& epi, const graph::Graph& g) {
  if (!epi.store) return cuda_linearize(epi.out_coords, g.value(epi.out).shape);
  const bool u = epi.store->fits_32_bits;
  std::string off;
  for (const StoreTerm& t : epi.store->terms) {
    std::string x = u ? fmt::format("(unsigned)({})", t.var) : std::string(1, t.var);
    if (t.div != 1) x = fmt::format("({} / {}{})", x, t.div, u ? "u" : "LL");
    // Stores are guarded by i < m and j < n (emit_gemm_stores) and b stays below the batch
    // count, so a variable's outermost digit needs no modulo: dropping it saves 3-4
    // instructions a store in every epilogue (j % 3072: a multiply-high, a shift and a
    // multiply-subtract), which run beside the other warpgroup's wgmma's.
    if (!t.top) x = fmt::format("({} % {}{})", x, t.size, u ? "u" : "LL");
    if (t.out_stride != 1) x = fmt::format("{} * {}{}", x, t.out_stride, u ? "u" : "LL");
    off += (off.empty() ? "" : " + ") + x;
  }
  if (off.empty()) return "0LL";
  return u ? fmt::format("(long long)({})", off) : off;
}

namespace {

// The column pair cp after the product (through layout ops keeping its columns and their
// order, so that the last coordinate is still the product's column j) as epi's: the epilogue
// goes on from the even Slice's value, "j" now the pair's index.
bool take_column_pair(const graph::Graph& g, const GemmDims& d, const graph::ColumnPair& cp,
                      GemmEpilogue& epi, std::string* why_not) {
  const graph::Node& n = *d.node;
  if (epi.out_coords.empty() || d.nn % 2 != 0) {
    *why_not = "the column pair's columns are not the product's";
    return false;
  }
  if (n.op_type() == "Gemm" && n.has_input(2) && d.beta != 0) {
    *why_not = "a column pair after a Gemm with C";
    return false;
  }
  epi.out_coords.back() = "j";
  epi.pair[0] = g.node(cp.even).outputs[0];
  epi.pair[1] = g.node(cp.odd).outputs[0];
  epi.cols = d.nn / 2;
  epi.out = epi.pair[0];
  return true;
}

// Why SwapPairs node n of the group cannot read its partner from the lane's other sum of the
// pair, or empty: its input must be computed from the product by the group's element-wise and
// layout ops, through a view that keeps the product's adjacent pairs, after a plain product.
std::string swap_pairs_problem(const graph::Graph& g, const std::set<graph::NodeId>& members,
                               const GemmDims& d, const graph::Node& n) {
  const graph::Node& p = *d.node;
  if (d.a_vec || d.b_vec || d.alpha != 1 ||
      (p.op_type() == "Gemm" && p.has_input(2) && d.beta != 0))
    return "SwapPairs after a product with alpha, C or a vector operand";
  std::vector<const graph::Node*> layouts;  // nearest the SwapPairs first
  for (graph::ValueId v = n.inputs[0]; v != p.outputs[0];) {
    const graph::NodeId q = g.value(v).producer;
    if (q == graph::kNoNode || !members.count(q))
      return "SwapPairs of other than a value computed from the product";
    const graph::Node& qn = g.node(q);
    if (qn.op->layout) {
      layouts.push_back(&qn);
      v = qn.inputs[0];
      continue;
    }
    if (!graph::is_elementwise(qn))
      return "SwapPairs of other than a value computed from the product";
    // An element-wise op over the product's elements: on through its computed input.
    v = graph::kNoValue;
    for (graph::ValueId u : qn.inputs)
      if (u != graph::kNoValue && g.value(u).producer != graph::kNoNode &&
          members.count(g.value(u).producer))
        v = u;
    if (v == graph::kNoValue) return "SwapPairs of other than a value computed from the product";
  }
  std::optional<graph::Layout> view = graph::Layout::contiguous(g.value(p.outputs[0]).shape);
  for (auto it = layouts.rbegin(); it != layouts.rend() && view; ++it)
    view = (*it)->op->layout(g, **it, *view);
  if (!view || !graph::keeps_pairs(*view, d.nn))
    return "SwapPairs of a view that splits the product's column pairs";
  return "";
}

}  // namespace

std::optional<GemmEpilogue> gemm_epilogue(const graph::Graph& g, const fusion::Group& group,
                                          const GemmDims& d, std::string* why_not) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  GemmEpilogue epi;
  epi.out = d.node->outputs[0];
  epi.cols = d.nn;
  epi.out_coords = cuda_unravel("b", d.out_batch);
  if (!d.a_vec) epi.out_coords.push_back("i");
  if (!d.b_vec) epi.out_coords.push_back("j");
  const auto shared_users = g.shared_users();
  const graph::Users& users = *shared_users;
  const Shape prod_shape = g.value(epi.out).shape;
  std::optional<graph::Layout> view = graph::Layout::contiguous(prod_shape);
  bool cols_kept = !d.a_vec && !d.b_vec;  // only layout ops keeping the columns so far
  for (size_t guard = 0; guard < group.nodes.size(); ++guard) {
    if (std::find(group.outputs.begin(), group.outputs.end(), epi.out) != group.outputs.end())
      break;
    if (cols_kept && !epi.paired()) {
      const std::optional<graph::ColumnPair> cp = graph::column_pair_of(g, epi.out, users[epi.out]);
      if (cp && members.count(cp->even) && members.count(cp->odd)) {
        if (!take_column_pair(g, d, *cp, epi, why_not)) return std::nullopt;
        view = graph::Layout::contiguous(g.value(epi.out).shape);
        continue;
      }
    }
    graph::NodeId c = graph::kNoNode;
    for (graph::NodeId u : users[epi.out])
      if (members.count(u)) c = u;
    if (c == graph::kNoNode) {
      *why_not = fmt::format("%{} of the GEMM group is not used", g.value(epi.out).name);
      return std::nullopt;
    }
    const graph::Node& cn = g.node(c);
    cols_kept = cols_kept && graph::keeps_columns(g, cn);
    if (lowering(cn).forward && cn.inputs[0] == epi.out) {
      epi.out_coords = lowering(cn).forward(cn, epi.out_coords, g.value(epi.out).shape,
                                            g.value(cn.outputs[0]).shape);
      if (view) view = cn.op->layout ? cn.op->layout(g, cn, *view) : std::nullopt;
    } else if (graph::is_elementwise(cn) && !epi.paired()) {
      epi.value = cn.outputs[0];
      epi.value_coords = epi.out_coords;
    } else {
      epi.value = graph::kNoValue;
    }
    epi.out = cn.outputs[0];
  }
  if (group.outputs.size() != 1 || group.outputs[0] != epi.out) {
    *why_not = "the GEMM group's epilogue has more than one output";
    return std::nullopt;
  }
  if (view && !d.a_vec && !d.b_vec) epi.store = store_map(*view, d, epi.cols);
  for (graph::NodeId id : group.nodes) {
    const graph::Node& n = g.node(id);
    if (!graph::is_swap_pairs(n)) continue;
    std::string problem = swap_pairs_problem(g, members, d, n);
    if (problem.empty() && epi.paired()) problem = "SwapPairs beside a column pair";
    if (!problem.empty()) {
      *why_not = problem;
      return std::nullopt;
    }
    epi.swaps.push_back(n.outputs[0]);
  }
  return epi;
}

Emitter gemm_emitter(const graph::Graph& g, const fusion::Group& group, const GemmDims& d) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  Emitter e(g, [members](graph::NodeId id) { return members.count(id) != 0; });
  // The product's value at the current element is the epilogue's starting point.
  const graph::ValueId prod = d.node->outputs[0];
  e.set_intercept(
      [prod](graph::ValueId v, const std::vector<std::string>&) -> std::optional<std::string> {
        if (v == prod) return std::string("acc");
        return std::nullopt;
      });
  return e;
}

namespace {

// `s` with the identifier `name` (not part of a longer one) replaced by `by`.
std::string replace_identifier(const std::string& s, const std::string& name,
                               const std::string& by) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (size_t p = 0; p < s.size();) {
    if (s.compare(p, name.size(), name) == 0 && (p == 0 || !ident(s[p - 1])) &&
        (p + name.size() == s.size() || !ident(s[p + name.size()]))) {
      out += by;
      p += name.size();
    } else {
      out += s[p++];
    }
  }
  return out;
}

// emit_gemm_value with the product element's column `j` (an expression) and its
// accumulator named `acc`.
std::string emit_gemm_value_at(Emitter& e, const graph::Graph& g, const GemmDims& d,
                               const GemmEpilogue& epi, const std::string& sum,
                               const std::string& j, const std::string& acc_name,
                               const std::string& partner) {
  const graph::Node& n = *d.node;
  const ComputeType acc = compute_type(g.value(n.outputs[0]).dtype);
  std::string value = d.alpha == 1 ? sum : fmt::format("{} * {}", cuda_literal(acc, d.alpha), sum);
  if (n.op_type() == "Gemm" && n.has_input(2) && d.beta != 0) {
    const graph::Value& c = g.value(n.inputs[2]);
    std::vector<std::string> cc = broadcast_coords({"i", j}, {d.m, d.nn}, c.shape);
    std::string cval = e.value_at(n.inputs[2], cc);
    value +=
        d.beta == 1 ? " + " + cval : fmt::format(" + {} * {}", cuda_literal(acc, d.beta), cval);
  }
  e.line(fmt::format("const {} {} = {};", acc, acc_name, value));
  if (epi.out == n.outputs[0]) return acc_name;
  // The last value computed, at its own coordinates: the layout ops after it only move it.
  const graph::ValueId at = epi.value != graph::kNoValue ? epi.value : epi.out;
  std::vector<std::string> coords =
      epi.value != graph::kNoValue ? epi.value_coords : epi.out_coords;
  if (j != "j")
    for (std::string& c : coords) c = replace_identifier(c, "j", j);
  if (epi.swaps.empty()) return e.value_at(at, coords);
  if (partner.empty()) throw CudaUnsupported{"SwapPairs in an epilogue that stores one element"};
  // SwapPairs reads its input at the element's partner in the pair: the same expression with
  // the product's value there, the lane's other sum of the two.
  const Emitter::Intercept outer = e.intercept();
  const graph::ValueId prod = n.outputs[0];
  bool at_partner = false;
  e.set_intercept(
      [&](graph::ValueId v, const std::vector<std::string>& c) -> std::optional<std::string> {
        if (at_partner && v == prod) return "(" + partner + ")";
        if (!at_partner && std::find(epi.swaps.begin(), epi.swaps.end(), v) != epi.swaps.end()) {
          std::vector<std::string> pc = c;
          pc.back() = fmt::format("(({}) ^ 1LL)", pc.back());
          at_partner = true;
          std::string r = e.value_at(g.node(g.value(v).producer).inputs[0], pc);
          at_partner = false;
          return r;
        }
        return outer ? outer(v, c) : std::nullopt;
      });
  std::string r = e.value_at(at, coords);
  e.set_intercept(outer);
  return r;
}

}  // namespace

std::string emit_gemm_value(Emitter& e, const graph::Graph& g, const GemmDims& d,
                            const GemmEpilogue& epi, const std::string& sum,
                            const std::string& partner) {
  return emit_gemm_value_at(e, g, d, epi, sum, "j", "acc", partner);
}

void emit_gemm_store(Emitter& e, const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                     const std::string& sum, const std::string& partner) {
  std::string result = emit_gemm_value(e, g, d, epi, sum, partner);
  const graph::Value& ov = g.value(epi.out);
  e.line(fmt::format("braze_store({}, {}, ({}){});", e.output_param(epi.out),
                     gemm_store_offset(epi, g), cuda_compute_type(ov.dtype), result));
}

std::string gemm_batch_offset(const Shape& out_batch, const Shape& shape) {
  Shape batch(shape.begin(), shape.end() - 2);
  std::vector<std::string> coords = operand_coords(out_batch, batch, {});
  std::string off;
  int64_t stride = shape[shape.size() - 1] * shape[shape.size() - 2];
  for (size_t d = batch.size(); d-- > 0;) {
    if (coords[d] != "0LL")
      off += fmt::format("{}{} * {}LL", off.empty() ? "" : " + ", coords[d], stride);
    stride *= batch[d];
  }
  return off.empty() ? "0LL" : off;
}

bool gemm_vector_store_ok(const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                          int width) {
  if (epi.store) {
    // Adjacent in the output: j's innermost digit has output stride 1 and whole vectors of
    // it; every other term moves by whole, aligned vectors.
    bool inner = false;
    for (const StoreTerm& t : epi.store->terms) {
      if (t.var == 'j' && t.div == 1) {
        if (t.out_stride != 1 || t.size % width != 0) return false;
        inner = true;
      } else if (t.out_stride % width != 0) {
        return false;
      }
    }
    return inner && epi.cols % width == 0;
  }
  const graph::Value& ov = g.value(epi.out);
  if (epi.out_coords.empty() || ov.shape.empty()) return false;  // a scalar (1-D · 1-D) product
  return epi.out_coords.back() == "j" && ov.shape.back() == epi.cols && epi.cols % width == 0;
}

namespace {

// Where the `width` output elements (b, i, jp + q) are not adjacent but their lanes interleave
// f runs that are (the store map's innermost digit of j, of size f, moves by a whole vector;
// its next digit moves by one element: a GEMM storing rotate_half's interleaved columns back in
// order writes lanes 0, 2 … and 1, 3 … each as one vector): f, else 0.
int gemm_split_store_factor(const GemmEpilogue& epi, int width) {
  if (!epi.store || epi.paired() || epi.cols % width != 0) return 0;
  const StoreTerm* low = nullptr;
  for (const StoreTerm& t : epi.store->terms)
    if (t.var == 'j' && t.div == 1) low = &t;
  if (!low || low->size < 2 || width % low->size != 0 || width / low->size < 2) return 0;
  const int64_t f = low->size, per = width / f;
  bool runs = false;
  for (const StoreTerm& t : epi.store->terms) {
    if (t.var == 'j' && t.div == f && t.out_stride == 1) {
      if (t.size % per != 0) return 0;
      runs = true;
    } else if (t.out_stride % per != 0) {
      return 0;
    }
  }
  return runs ? static_cast<int>(f) : 0;
}

// The output value at (b, i, j) in scope from a column pair's two sums (expressions), read
// where the epilogue reads the pair's Slices.
std::string emit_pair_value(Emitter& e, const GemmEpilogue& epi, const std::string& even,
                            const std::string& odd, const std::vector<std::string>& coords) {
  const Emitter::Intercept outer = e.intercept();
  const graph::ValueId ev = epi.pair[0], od = epi.pair[1];
  e.set_intercept(
      [&outer, ev, od, even, odd](graph::ValueId v,
                                  const std::vector<std::string>& c) -> std::optional<std::string> {
        if (v == ev) return even;
        if (v == od) return odd;
        return outer ? outer(v, c) : std::nullopt;
      });
  std::string r = e.value_at(epi.out, coords);
  e.set_intercept(outer);
  return r;
}

// emit_gemm_stores with a column pair: product columns jp … jp + width - 1 make outputs
// jp / 2 … jp / 2 + width / 2 - 1, each from its two adjacent sums.
void emit_gemm_pair_stores(Emitter& e, const graph::Graph& g, const GemmDims& d,
                           const GemmEpilogue& epi, int width, const std::string& sum_q,
                           bool in_range) {
  const graph::Value& ov = g.value(epi.out);
  const std::string ct = cuda_compute_type(ov.dtype), st = cuda_storage_type(ov.dtype);
  const int outs = width / 2;
  e.open("{");
  e.line(fmt::format("{} acc_q[{}];", cuda_compute_type(g.value(d.node->outputs[0]).dtype), width));
  e.line("#pragma unroll");
  e.line(fmt::format("for (int q = 0; q < {}; ++q) acc_q[q] = {};", width, sum_q));
  e.line("const long long jo = jp / 2;");
  const ComputeType acc = compute_type(g.value(d.node->outputs[0]).dtype);
  auto sum = [&](int q) {
    return d.alpha == 1 ? fmt::format("acc_q[{}]", q)
                        : fmt::format("({} * acc_q[{}])", cuda_literal(acc, d.alpha), q);
  };
  if (outs > 1 && gemm_vector_store_ok(g, d, epi, outs)) {
    e.open(in_range ? std::string("{")
                    : fmt::format("if (i < {}LL && jo < {}LL) {{", d.m, epi.cols));
    e.line("const long long j = jo;");
    e.push_scope();
    e.set_lanes("j", outs);
    std::string packed;
    for (int q = 0; q < outs; ++q) {
      std::vector<std::string> coords = epi.out_coords;
      for (std::string& c : coords) c = replace_identifier(c, "j", Emitter::lane_expr("j", q));
      const std::string r = emit_pair_value(e, epi, sum(2 * q), sum(2 * q + 1), coords);
      packed += fmt::format("{}braze_pack(braze_tag<{}>(), ({}){})", q ? ", " : "", st, ct, r);
    }
    e.set_lanes("", 1);
    e.pop_scope();
    e.line(fmt::format("braze_vstore_typed<{}>({}, {}, braze_vec<{}, {}>{{{{{}}}}});", outs,
                       e.output_param(epi.out), gemm_store_offset(epi, g), st, outs, packed));
    e.close();
  } else {
    for (int q = 0; q < outs; ++q) {
      e.open("{");
      e.line(fmt::format("const long long j = jo + {};", q));
      if (!in_range) e.open(fmt::format("if (i < {}LL && j < {}LL) {{", d.m, epi.cols));
      e.push_scope();
      const std::string r = emit_pair_value(e, epi, sum(2 * q), sum(2 * q + 1), epi.out_coords);
      e.line(fmt::format("braze_store({}, {}, ({}){});", e.output_param(epi.out),
                         gemm_store_offset(epi, g), ct, r));
      e.pop_scope();
      if (!in_range) e.close();
      e.close();
    }
  }
  e.close();
}

}  // namespace

void emit_gemm_stores(Emitter& e, const graph::Graph& g, const GemmDims& d, const GemmEpilogue& epi,
                      int width, const std::string& sum_q, bool in_range) {
  if (epi.paired()) {
    emit_gemm_pair_stores(e, g, d, epi, width, sum_q, in_range);
    return;
  }
  const graph::Value& ov = g.value(epi.out);
  const int split =
      gemm_vector_store_ok(g, d, epi, width) ? 1 : gemm_split_store_factor(epi, width);
  if (split == 0) {
    e.line("#pragma unroll");
    e.open(fmt::format("for (int q = 0; q < {}; ++q) {{", width));
    e.line("const long long j = jp + q;");
    if (!in_range) e.open(fmt::format("if (i < {}LL && j < {}LL) {{", d.m, d.nn));
    e.push_scope();
    // (jp is even: element q's partner in its pair is q ^ 1.)
    emit_gemm_store(e, g, d, epi, sum_q,
                    epi.swaps.empty() ? "" : replace_identifier(sum_q, "q", "(q ^ 1)"));
    e.pop_scope();
    if (!in_range) e.close();
    e.close();
    return;
  }
  // The output's last dim is j, a multiple of `width` long: the elements are all in range or
  // none, adjacent (or `split` interleaved runs of adjacent ones), and aligned to the vector.
  // The lanes are written out one after another,
  // lane q at column (j + q), so that an input read at the output's column (a residual, a
  // bias) is one vector load shared by the lanes (Emitter::set_lanes), not `width` loads.
  const std::string ct = cuda_compute_type(ov.dtype), st = cuda_storage_type(ov.dtype);
  e.open(in_range ? std::string("{") : fmt::format("if (i < {}LL && jp < {}LL) {{", d.m, d.nn));
  e.line(fmt::format("{} acc_q[{}];", cuda_compute_type(g.value(d.node->outputs[0]).dtype), width));
  e.line("#pragma unroll");
  e.line(fmt::format("for (int q = 0; q < {}; ++q) acc_q[q] = {};", width, sum_q));
  e.line("const long long j = jp;");
  e.push_scope();
  e.set_lanes("j", width);
  const Emitter::Intercept outer = e.intercept();
  const graph::ValueId prod = d.node->outputs[0];
  std::vector<std::string> lanes;
  for (int q = 0; q < width; ++q) {
    const std::string acc = fmt::format("acc{}", q);
    e.set_intercept(
        [&outer, prod, acc](graph::ValueId v,
                            const std::vector<std::string>& c) -> std::optional<std::string> {
          if (v == prod) return acc;
          return outer ? outer(v, c) : std::nullopt;
        });
    const std::string r =
        emit_gemm_value_at(e, g, d, epi, fmt::format("acc_q[{}]", q), Emitter::lane_expr("j", q),
                           acc, fmt::format("acc_q[{}]", q ^ 1));
    lanes.push_back(fmt::format("braze_pack(braze_tag<{}>(), ({}){})", st, ct, r));
  }
  e.set_intercept(outer);
  e.set_lanes("", 1);
  e.pop_scope();
  // Lanes r, r + split, … are one vector at column jp + r (all of them when split is 1).
  const int per = width / split;
  for (int r = 0; r < split; ++r) {
    std::string packed;
    for (int q = r; q < width; q += split) packed += (q > r ? ", " : "") + lanes[q];
    if (split > 1) e.open(fmt::format("{{ const long long j = jp + {};", r));
    e.line(fmt::format("braze_vstore_typed<{}>({}, {}, braze_vec<{}, {}>{{{{{}}}}});", per,
                       e.output_param(epi.out), gemm_store_offset(epi, g), st, per, packed));
    if (split > 1) e.close();
  }
  e.close();
}

std::vector<Emitter::Preload> emit_gemm_preloads(Emitter& e, const graph::Graph& g,
                                                 const GemmDims& d, const GemmEpilogue& epi,
                                                 int width, const Emitter::PreloadStmt& stmt) {
  if (epi.paired() || !gemm_vector_store_ok(g, d, epi, width)) return {};
  // emit_gemm_stores' vector path, lane by lane at the same coordinates, without the store:
  // the product reads as 0 and only the row-wise inputs' loads are live.
  e.open("{");
  e.line("const long long j = jp;");
  e.push_scope();
  e.set_lanes("j", width);
  e.set_preload("i", stmt);
  const Emitter::Intercept outer = e.intercept();
  const graph::ValueId prod = d.node->outputs[0];
  e.set_intercept([&outer, prod](graph::ValueId v,
                                 const std::vector<std::string>& c) -> std::optional<std::string> {
    if (v == prod) return std::string("0.f");
    return outer ? outer(v, c) : std::nullopt;
  });
  for (int q = 0; q < width; ++q)
    emit_gemm_value_at(e, g, d, epi, "0.f", Emitter::lane_expr("j", q), fmt::format("pre_acc{}", q),
                       "0.f");
  std::vector<Emitter::Preload> pre = e.preloads();
  e.set_intercept(outer);
  e.set_preload("");
  e.set_lanes("", 1);
  e.pop_scope();
  e.close();
  return pre;
}

void emit_gemm_tile_origin(Emitter& e, int64_t tiles_m, int64_t tiles_n, int bm, int bn,
                           const std::string& tile, int raster_rows) {
  e.line(fmt::format("const int tile = {};", tile));
  e.line(fmt::format("const int raster = tile / {}, first_row = raster * {};",
                     raster_rows * tiles_n, raster_rows));
  e.line(fmt::format("const int raster_rows = {0} - first_row < {1} ? {0} - first_row : {1};",
                     tiles_m, raster_rows));
  e.line(fmt::format("const int in_raster = tile % {};", raster_rows * tiles_n));
  e.line(
      fmt::format("const int i0 = (first_row + in_raster % raster_rows) * {}, "
                  "j0 = (in_raster / raster_rows) * {};",
                  bm, bn));
}

std::string gemm_too_large(const GemmDims& d, int bm, int bn, int bk, int split) {
  constexpr int64_t kIntMax = 2147483647;
  const int64_t tiles = ((d.m + bm - 1) / bm) * ((d.nn + bn - 1) / bn) * split;
  if (tiles > kIntMax || d.m > kIntMax - bm || d.nn > kIntMax - bn || d.k > kIntMax - bk ||
      d.batches > kIntMax)
    return "matrix too large for the tiled GEMM grid";
  return "";
}

bool gemm_epilogue_reads_rows(const graph::Graph& g, const fusion::Group& group,
                              const GemmDims& d) {
  std::string ignored;
  std::optional<GemmEpilogue> epi = gemm_epilogue(g, group, d, &ignored);
  if (!epi) return false;
  Emitter e = gemm_emitter(g, group, d);
  std::vector<Emitter::Preload> pre;
  try {
    pre = emit_gemm_preloads(e, g, d, *epi, 4, [](graph::ValueId, int, int, const std::string&) {
      return std::string();
    });
  } catch (const CudaUnsupported&) {
    return false;
  }
  return !pre.empty() && std::all_of(pre.begin(), pre.end(), gemm_preload_copies_ahead);
}

bool gemm_preload_copies_ahead(const Emitter::Preload& p) {
  return (p.dtype == DType::Float16 || p.dtype == DType::BFloat16) && p.bytes == 8;
}

std::vector<Tunables> gemm_candidates(const graph::Graph& g, const fusion::Group& group,
                                      const Target& target) {
  std::string ignored;
  std::optional<GemmDims> d = gemm_dims(g, group, &ignored);
  if (!d) return {};
  std::vector<Tunables> c;
  if (gemm_tc_unsupported(g, group, *d, target).empty()) c = gemm_tc_candidates(g, *d, target);
  // On sm_90a the wgmma schedule leads (it beat mma.sync, split-K included, on every shape
  // timed: bench/RESULTS.md).
  if (gemm_wgmma_unsupported(g, group, *d, target).empty()) {
    std::vector<Tunables> w =
        gemm_wgmma_candidates(*d, target, gemm_epilogue_reads_rows(g, group, *d));
    c.insert(c.begin(), w.begin(), w.end());
  }
  for (Tunables& t : gemm_simt_candidates(g, *d, target)) c.push_back(std::move(t));
  return c;
}

std::optional<Kernel> gemm_kernel(const graph::Graph& g, const fusion::Group& group,
                                  const Target& target, std::string* why_not,
                                  const Tunables* tune) {
  std::optional<GemmDims> dims = gemm_dims(g, group, why_not);
  if (!dims) return std::nullopt;
  std::optional<GemmEpilogue> epi = gemm_epilogue(g, group, *dims, why_not);
  if (!epi) return std::nullopt;
  const Tunables chosen = tune ? *tune : gemm_candidates(g, group, target).front();
  if (chosen.count("wg") && chosen.at("wg") != 0)
    return gemm_wgmma_kernel(g, group, *dims, *epi, target, chosen, why_not);
  if (chosen.count("tc") && chosen.at("tc") != 0)
    return gemm_tc_kernel(g, group, *dims, *epi, target, chosen, why_not);
  return gemm_simt_kernel(g, group, *dims, *epi, target, chosen, why_not);
}

}  // namespace braze::codegen
