// The reduction schedule: one or more reductions over the same rows, with the element-wise
// prologue and epilogue the partitioner grouped around them. Each reduction runs its op's
// row program (codegen/cuda_hooks.h, from codegen/lower/): passes over the row, each combined in
// registers and reduced across the block. A reduction's results are then bound, for the rest of the
// row, to the values its node produces — so a later reduction's input or an epilogue op reads them
// as locals. Per-element outputs take a last sweep over the row; per-row outputs are written by
// thread 0. One block per row, grid-striding over rows.
//
//   row r of X (reduced axes)          passes                outputs
//   x0 x1 x2 … x(L-1)   ──map──►  s0 = max(x)        ─┐
//                        ──map──►  s1 = sum(exp(x-s0)) ├─► y_i = exp(x_i - s0) / s1
#include <braze/error.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "codegen/lowering.h"
#include "codegen/codegen.h"
#include "codegen/emitter.h"
#include "codegen/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

std::vector<Tunables> reduction_candidates(const graph::Graph& g, const fusion::Group& group) {
  for (graph::NodeId id : group.nodes) {
    const graph::Node& n = g.node(id);
    if (!lowering(n).row) continue;
    CudaRowInputs ins = cuda_row_inputs(g, n);
    std::optional<CudaRowProgram> p = lowering(n).row(n, ins);
    if (!p || p->passes.empty()) return {};
    Shape x = p->x_view.empty() ? ins.shapes[0] : p->x_view;
    int64_t len = 1;
    for (int64_t a : p->axes) len *= x.at(static_cast<size_t>(a));
    // Vectors only along a single innermost reduced axis, whole vectors per row, of at most
    // 16 bytes of the widest element the group reads or writes along its rows (a float16
    // row cast to float32 inside the group still loads 8 halves at a time).
    int64_t staged = 0;
    size_t widest = 0;
    if (p->x_view.empty()) {
      for (graph::ValueId v : staged_inputs(g, group, ins.shapes[0])) {
        staged += len * dtype_size(g.value(v).dtype);
        widest = std::max(widest, dtype_size(g.value(v).dtype));
      }
      for (graph::ValueId o : group.outputs)
        if (g.value(o).shape == ins.shapes[0])
          widest = std::max(widest, dtype_size(g.value(o).dtype));
    }
    if (widest == 0) widest = dtype_size(ins.dtypes[0]);
    int vec = static_cast<int>(std::min<size_t>(16 / widest, 8));
    bool innermost = p->axes.size() == 1 && p->axes[0] == static_cast<int64_t>(x.size()) - 1;
    while (vec > 1 && (!innermost || len % vec != 0)) vec /= 2;
    int64_t rows = len > 0 ? checked_numel(x) / len : 0;
    return reduction_candidates_for(len, vec, staged, rows);
  }
  return {};
}

// The group inputs a row staged in shared memory holds: those read element by element
// along the rows (input 0's shape), not constants.
std::vector<graph::ValueId> staged_inputs(const graph::Graph& g, const fusion::Group& group,
                                          const Shape& xshape) {
  std::vector<graph::ValueId> out;
  for (graph::ValueId v : group.inputs) {
    const graph::Value& val = g.value(v);
    if (!val.constant && val.has_shape && val.shape == xshape && dtype_size(val.dtype) > 0)
      out.push_back(v);
  }
  return out;
}

namespace {

// Replaces {name} fields of a row-program template.
std::string substitute(const std::string& templ, const std::map<std::string, std::string>& fields,
                       const graph::Node& n) {
  std::string out;
  for (size_t i = 0; i < templ.size(); ++i) {
    if (templ[i] != '{') {
      out += templ[i];
      continue;
    }
    size_t j = templ.find('}', i);
    BRAZE_CHECK(j != std::string::npos, n.describe() + ": unclosed field in row program");
    std::string name = templ.substr(i + 1, j - i - 1);
    auto it = fields.find(name);
    BRAZE_CHECK(it != fields.end(),
                n.describe() + ": row program uses unknown field {" + name + "}");
    out += it->second;
    i = j;
  }
  return out;
}

std::string identity_of(const std::string& combine, const std::string& type) {
  bool flt = type == "float" || type == "double";
  if (combine == "sum") return cuda_literal(type, 0);
  if (combine == "prod") return cuda_literal(type, 1);
  if (combine == "max") return flt ? cuda_literal(type, -INFINITY) : cuda_literal(type, -1e300);
  if (combine == "min") return flt ? cuda_literal(type, INFINITY) : cuda_literal(type, 1e300);
  throw InternalError("unknown row combine " + combine);
}

std::string combiner(const std::string& combine, const std::string& type) {
  if (combine == "sum") return fmt::format("[]({0} a, {0} b) {{ return a + b; }}", type);
  if (combine == "prod") return fmt::format("[]({0} a, {0} b) {{ return a * b; }}", type);
  if (combine == "max") return fmt::format("[]({0} a, {0} b) {{ return braze_max(a, b); }}", type);
  if (combine == "min") return fmt::format("[]({0} a, {0} b) {{ return braze_min(a, b); }}", type);
  throw InternalError("unknown row combine " + combine);
}

bool uses_field(const CudaRowProgram& p, const std::string& name) {
  std::string f = "{" + name + "}";
  for (const auto& pass : p.passes)
    if (pass.map.find(f) != std::string::npos) return true;
  for (const auto& o : p.outputs)
    if (o.expr.find(f) != std::string::npos) return true;
  return false;
}

}  // namespace

// The search space for rows of `len` elements read `vec` at a time, `staged_bytes` of group
// inputs a row: threads per row (a warp taking one or several rows a block, or a block of
// up to 1024); rows held in registers (cache 1, at most 32 elements a thread), staged in
// shared memory (cache 2, when a block's rows fit in 96 KB, so two blocks share an SM) or
// streamed (cache 0); vector width. Heuristic default first: the fewest threads that cache
// at most 16 elements each, else a 512-thread block staging the row, else 1024 threads
// caching up to 32, else streaming. (On W3, rows of 32000 halves, staging beat registers:
// 1024 threads holding 32 each need 63 registers, so one block an SM, and its load, reduce
// and store phases do not overlap; three staged blocks an SM do. Two row buffers a block,
// the next row's copies in flight during this row's passes, measured slower still: 149 us.)
std::vector<Tunables> reduction_candidates_for(int64_t len, int vec, int64_t staged_bytes,
                                               int64_t rows) {
  auto per = [&](int tpr, int v) { return (len / v + tpr - 1) / tpr * v; };  // elements a thread
  std::vector<Tunables> c;
  auto add = [&](int tpr, int rpb, int cache, int v) {
    Tunables t{{"tpr", tpr}, {"rpb", rpb}, {"cache", cache}, {"vec", v}};
    if (std::find(c.begin(), c.end(), t) == c.end()) c.push_back(t);
  };
  constexpr int64_t kStageLimit = 96 * 1024;
  const bool stageable = staged_bytes > 0 && staged_bytes <= kStageLimit;
  // Fewer rows than SMs, and long ones: clusters of `split` blocks share a row (sm_90).
  const int64_t sms = Target{}.num_sms;
  if (rows > 0 && rows < sms && len / vec >= 4096) {
    auto add_split = [&](int split, int tpr, int cache) {
      Tunables t{{"tpr", tpr}, {"rpb", 1}, {"cache", cache}, {"vec", vec}, {"split", split}};
      if (std::find(c.begin(), c.end(), t) == c.end()) c.push_back(t);
    };
    auto mode = [&](int split, int tpr) {
      return per(tpr * split, vec) <= 32                               ? 1
             : staged_bytes > 0 && staged_bytes / split <= kStageLimit ? 2
                                                                       : 0;
    };
    int want = 2;
    while (want < 8 && want * rows < sms) want *= 2;
    add_split(want, 512, mode(want, 512));
    for (int split : {2, 4, 8})
      for (int tpr : {512, 1024}) {
        add_split(split, tpr, mode(split, tpr));
        add_split(split, tpr, 0);
      }
  }
  int best = 32;
  while (best < 1024 && per(best, vec) > 16) best *= 2;
  if (per(best, vec) <= 16)
    add(best, best == 32 ? 4 : 1, 1, vec);
  else if (stageable)
    add(512, 1, 2, vec);  // W3 on an H200: 136 us, in registers (1024 x 32) 208 us
  else if (per(1024, vec) <= 32)
    add(1024, 1, 1, vec);
  else
    add(512, 1, 0, vec);
  if (stageable) {
    for (int tpr : {128, 256, 512, 1024}) add(tpr, 1, 2, vec);
    if (staged_bytes * 4 <= kStageLimit) add(32, 4, 2, vec);
    add(128, 1, 2, 1);
  }
  for (int v : {vec, 1})
    for (int tpr = 32; tpr <= 1024; tpr *= 2)
      for (int cache : {1, 0}) {
        if (cache && per(tpr, v) > 32) continue;
        if (tpr == 32)
          for (int rpb : {1, 4, 8}) add(32, rpb, cache, v);
        else
          add(tpr, 1, cache, v);
      }
  return c;
}

namespace {

Shape non_ones(const Shape& s) {
  Shape r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}

// One reduction node of the group and its row program.
struct Red {
  const graph::Node* node;
  CudaRowProgram prog;
  std::vector<Shape> shapes;
  std::vector<std::string> s;  // locals holding its pass results
};

}  // namespace

std::optional<Kernel> reduction_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const Target& target, std::string* why_not,
                                       const Tunables* tune) {
  std::set<graph::NodeId> members(group.nodes.begin(), group.nodes.end());
  std::vector<Red> reds;
  for (graph::NodeId id : group.nodes) {
    const graph::Node& n = g.node(id);
    if (!lowering(n).row) {
      if (!lowering(n).expr && !lowering(n).index) {
        *why_not = n.describe() + " has no GPU code";
        return std::nullopt;
      }
      continue;
    }
    CudaRowInputs ins = cuda_row_inputs(g, n);
    std::optional<CudaRowProgram> prog = lowering(n).row(n, ins);
    if (!prog) {
      *why_not = n.describe() + " has no GPU row program for these attributes and dtypes";
      return std::nullopt;
    }
    reds.push_back({&n, std::move(*prog), ins.shapes, {}});
  }
  if (reds.empty()) {
    *why_not = "a reduction group without a reduction";
    return std::nullopt;
  }
  const graph::Node& n0 = *reds[0].node;
  const CudaRowProgram& p0 = reds[0].prog;
  const graph::Value& xv = g.value(n0.inputs[0]);
  const Shape xshape = p0.x_view.empty() ? xv.shape : p0.x_view;
  BRAZE_CHECK(checked_numel(xshape) == checked_numel(xv.shape),
              n0.describe() + ": row program view of X differs in size");
  for (const Red& r : reds) {
    bool same = r.prog.axes == p0.axes && g.value(r.node->inputs[0]).shape == xv.shape &&
                r.prog.x_view == p0.x_view;
    if (!same || (reds.size() > 1 && !r.prog.x_view.empty())) {
      *why_not = r.node->describe() + " reduces other rows than " + n0.describe();
      return std::nullopt;
    }
  }
  Shape kept_shape, red_shape;
  std::vector<bool> reduced(xshape.size(), false);
  for (int64_t a : p0.axes) reduced.at(static_cast<size_t>(a)) = true;
  for (size_t d = 0; d < xshape.size(); ++d)
    (reduced[d] ? red_shape : kept_shape).push_back(xshape[d]);
  int64_t rows = checked_numel(kept_shape), len = checked_numel(red_shape);
  // A single program without passes is element-wise (inference BatchNormalization): every
  // thread takes elements, as the pointwise schedule does.
  const bool elementwise = reds.size() == 1 && p0.passes.empty();
  if (elementwise) {
    kept_shape.clear();
    red_shape = xshape;
    std::fill(reduced.begin(), reduced.end(), true);
    len = checked_numel(xshape);
    rows = 1;
  }

  Emitter e(g, [&](graph::NodeId id) { return members.count(id) != 0; });
  auto full_coords = [&](const std::vector<std::string>& kept,
                         const std::vector<std::string>& red) {
    std::vector<std::string> c;
    size_t ki = 0, ri = 0;
    for (size_t d = 0; d < xshape.size(); ++d) c.push_back(reduced[d] ? red[ri++] : kept[ki++]);
    return c;
  };
  // Fields of reduction `r` at the element at `coords` (its input's coordinates).
  auto element_fields = [&](const Red& r, const std::vector<std::string>& coords) {
    std::map<std::string, std::string> f;
    for (size_t k = 0; k < r.s.size(); ++k) f[fmt::format("s{}", k)] = r.s[k];
    std::vector<std::string> red;
    for (size_t d = 0; d < coords.size(); ++d)
      if (reduced[d]) red.push_back(coords[d]);
    f["r"] = cuda_linearize(red, red_shape);
    f["x"] = e.value_at_view(r.node->inputs[0], xshape, coords);
    for (size_t i = 1; i < r.node->inputs.size(); ++i) {
      if (r.node->inputs[i] == graph::kNoValue) continue;
      Shape view = i - 1 < r.prog.views.size() && !r.prog.views[i - 1].empty() ? r.prog.views[i - 1]
                                                                               : r.shapes[i];
      std::string name = "in" + std::to_string(i);
      if (uses_field(r.prog, name))
        f[name] = e.value_at_view(r.node->inputs[i], view, broadcast_coords(coords, xshape, view));
    }
    return f;
  };

  // Pass maps' values per element, where a schedule holds them (registers): key
  // "reduction|pass|coords".
  std::map<std::string, std::string> pass_values;
  auto pass_key = [](size_t ri, size_t p, const std::vector<std::string>& coords) {
    std::string k = fmt::format("{}|{}", ri, p);
    for (const std::string& c : coords) k += "|" + c;
    return k;
  };
  // {p0}, {p1} … of reduction `ri` at `coords`: the held value, else the map recomputed.
  auto add_pass_fields = [&](size_t ri, const std::vector<std::string>& coords,
                             std::map<std::string, std::string>& f) {
    const Red& r = reds[ri];
    for (size_t p = 0; p < r.prog.passes.size() && p < r.s.size(); ++p) {
      std::string name = fmt::format("p{}", p);
      if (!uses_field(r.prog, name)) continue;
      auto it = pass_values.find(pass_key(ri, p, coords));
      if (it != pass_values.end()) {
        f[name] = it->second;
        continue;
      }
      std::map<std::string, std::string> fp = f;
      fp["n"] = cuda_literal(r.prog.passes[p].type, static_cast<double>(len));
      f[name] = "(" + substitute(r.prog.passes[p].map, fp, *r.node) + ")";
    }
  };

  // Reductions' results, bound once their passes have run: per-row outputs to an
  // expression of the pass results, per-element outputs to their expression at the asked
  // coordinates.
  std::vector<std::string> kept;
  std::map<graph::ValueId, std::pair<const Red*, size_t>> bound;  // value -> (reduction, output)
  e.set_intercept([&](graph::ValueId v,
                      const std::vector<std::string>& coords) -> std::optional<std::string> {
    auto it = bound.find(v);
    if (it == bound.end()) return std::nullopt;
    const Red& r = *it->second.first;
    const auto& o = r.prog.outputs[it->second.second];
    std::string ct = cuda_compute_type(g.value(v).dtype);
    std::map<std::string, std::string> f;
    if (o.per_element) {
      std::vector<std::string> xc =
          coords.size() == xshape.size()
              ? coords
              : cuda_unravel(cuda_linearize(coords, g.value(v).shape), xshape);
      f = element_fields(r, xc);
      add_pass_fields(static_cast<size_t>(&r - reds.data()), xc, f);
    } else {
      bool uses_inputs =
          o.expr.find("{in") != std::string::npos || o.expr.find("{x}") != std::string::npos;
      if (uses_inputs)
        f = element_fields(r, full_coords(kept, std::vector<std::string>(red_shape.size(), "0LL")));
      for (size_t k = 0; k < r.s.size(); ++k) f[fmt::format("s{}", k)] = r.s[k];
    }
    f["n"] = cuda_literal(ct == "bool" ? "long long" : ct, static_cast<double>(len));
    return e.let(ct, fmt::format("({})({})", ct, substitute(o.expr, f, *r.node)));
  });

  // Schedule: `tpr` threads per row (a warp, or a block of up to 1024), `rpb` rows per
  // block (warps each taking a row), and with `cache` each thread holds its elements of the
  // row in registers — E = ceil(L / tpr) of them, loaded once however many passes follow.
  std::vector<Tunables> cands = tune ? std::vector<Tunables>{} : reduction_candidates(g, group);
  Tunables t = tune            ? *tune
               : cands.empty() ? Tunables{{"tpr", 32}, {"rpb", 1}, {"cache", 0}, {"vec", 1}}
                               : cands.front();
  const int tpr = t.at("tpr"), rpb = t.at("rpb");
  const bool cache = t.at("cache") == 1 && !elementwise;
  // Split rows: a cluster of `split` blocks shares each row (sm_90 thread-block clusters),
  // combining the blocks' partial results through distributed shared memory. Thread q of
  // block k is the row's thread k·tpr + q of T = split·tpr; elements are dealt to the T
  // threads exactly as to one block's. Not for arg reductions (their index would need a
  // second exchange) nor the CPU emulator.
  bool has_arg = false;
  for (const Red& r : reds)
    for (const auto& pass : r.prog.passes) has_arg |= pass.combine.rfind("arg", 0) == 0;
  int split = t.count("split") ? t.at("split") : 1;
  if (split < 1 || elementwise || rpb != 1 || has_arg || target.sm < 90 || target.emulated)
    split = 1;
  const int64_t T = int64_t{tpr} * split;
  // Staged: the row's group inputs are copied into shared memory once (asynchronously on
  // sm_80+), and every pass and the output sweep read them there.
  std::vector<graph::ValueId> staged;
  if (t.at("cache") == 2 && !elementwise && p0.x_view.empty())
    staged = staged_inputs(g, group, xv.shape);
  const bool smem = !staged.empty();
  // Vector lanes along the row: only for one reduced axis that is innermost, whole vectors.
  int vec = t.count("vec") ? t.at("vec") : 1;
  if (elementwise || red_shape.size() != 1 || !reduced.back() || len % vec != 0) vec = 1;
  const int64_t chunks = len / vec;
  const int64_t per_thread = (chunks + T - 1) / T;
  const unsigned threads = elementwise ? 256u : static_cast<unsigned>(tpr * rpb);
  std::string acc_decls;
  if (!elementwise) {
    e.line(fmt::format("const int lane = threadIdx.x % {};", tpr));
    if (split > 1) {
      e.line(
          fmt::format("const int glane = lane + (int)(blockIdx.x % {}u) * {};  // the row's thread",
                      split, tpr));
      e.open(
          fmt::format("for (long long row = (long long)(blockIdx.x / {0}u); row < {1}LL; row += "
                      "(long long)(gridDim.x / {0}u)) {{",
                      split, rows));
    } else {
      e.line("const int glane = lane;");
      e.open(fmt::format(
          "for (long long row = (long long)blockIdx.x * {0} + threadIdx.x / {1}; row < {2}LL; "
          "row += (long long)gridDim.x * {0}) {{",
          rpb, tpr, rows));
    }
  }
  kept = e.unravel("row", kept_shape);
  // Shared-memory staging: each thread copies the chunks it later reads (same start and
  // stride as the stream loops), then waits for its own copies.
  std::vector<std::string> staged_ptr;
  unsigned smem_bytes = 0;
  // A thread's chunk at iteration `it` of a row loop sits at (it·tpr + lane)·vec of its
  // block's region (the row's element b itself when the block has the whole row).
  const int64_t smem_row = split == 1 ? len : per_thread * tpr * vec;
  const std::string sidx =
      split == 1 ? "b" : fmt::format("(it * {}LL + lane * {}LL)", int64_t{tpr} * vec, vec);
  if (smem) {
    std::string decls;
    for (graph::ValueId v : staged) {
      const graph::Value& val = g.value(v);
      std::string st = cuda_storage_type(val.dtype),
                  name = fmt::format("braze_sx{}", staged_ptr.size());
      decls += fmt::format(
          "  {0}* const {1} = reinterpret_cast<{0}*>(braze_smem + {2}) + (threadIdx.x / {3}) * "
          "{4}LL;\n",
          st, name, smem_bytes, tpr, smem_row);
      staged_ptr.push_back(name);
      smem_bytes += static_cast<unsigned>((rpb * smem_row * dtype_size(val.dtype) + 15) / 16 * 16);
    }
    acc_decls += fmt::format("  BRAZE_DYNAMIC_SMEM(braze_smem, {});\n", smem_bytes) + decls;
    e.open(fmt::format(
        "for (long long b = (long long)glane * {0}, it = 0; b < {1}LL; b += {2}LL, ++it) {{", vec,
        len, T * vec));
    e.push_scope();
    std::string gidx = cuda_linearize(full_coords(kept, e.unravel("b", red_shape)), xshape);
    for (size_t i = 0; i < staged.size(); ++i) {
      const graph::Value& val = g.value(staged[i]);
      const size_t bytes = static_cast<size_t>(vec) * dtype_size(val.dtype);
      std::string src = fmt::format("{} + {}", e.input_param(staged[i]), gidx);
      if (target.sm >= 80 && (bytes == 4 || bytes == 8 || bytes == 16))
        e.line(fmt::format("braze_cp_async<{}>({} + {}, {});", bytes, staged_ptr[i], sidx, src));
      else if (vec > 1)
        e.line(fmt::format(
            "*reinterpret_cast<braze_vec<{0}, {1}>*>({2} + {3}) = braze_vload<{1}>({4}, 0);",
            cuda_storage_type(val.dtype), vec, staged_ptr[i], sidx, src));
      else
        e.line(fmt::format("{}[{}] = *({});", staged_ptr[i], sidx, src));
    }
    e.pop_scope();
    e.close();
    if (target.sm >= 80) e.line("braze_cp_async_wait_all();");
  }
  // An element of the row a thread handles: its row index r, whether it counts, its
  // coordinates. Elements come in chunks of `vec` consecutive ones, whose loads of an input
  // read along the row become one vector load (the emitter's lanes over `lane_var`).
  struct Elem {
    std::string r, valid;
    std::vector<std::string> coords;
  };
  struct Chunk {
    std::vector<Elem> elems;
    std::string lane_var;  // the clamped start, when vec > 1
  };
  auto make_chunk = [&](const std::string& base, const std::string& valid,
                        const std::string& clamped) {
    Chunk c;
    if (vec == 1) {
      c.elems.push_back({base, valid, full_coords(kept, e.unravel(clamped, red_shape))});
      return c;
    }
    c.lane_var = clamped;
    for (int j = 0; j < vec; ++j)
      c.elems.push_back({Emitter::lane_expr(base, j), valid,
                         full_coords(kept, {Emitter::lane_expr(clamped, j)})});
    return c;
  };
  // Cached mode: chunk k of this thread starts at (lane + k·tpr)·vec, clamped into the row
  // so its loads are in bounds; the values it loads stay in registers across passes.
  std::vector<Chunk> cached;
  if (cache) {
    for (int64_t kk = 0; kk < per_thread; ++kk) {
      std::string base =
          e.let("long long", fmt::format("((long long)glane + {}LL) * {}LL", kk * T, vec));
      bool always = (kk + 1) * T <= chunks;
      std::string valid = always ? "true" : e.let("bool", fmt::format("{} < {}LL", base, len));
      std::string clamped =
          always ? base
                 : e.let("long long", fmt::format("{0} ? {1} : {2}LL", valid, base, len - vec));
      cached.push_back(make_chunk(base, valid, clamped));
    }
  }
  // Runs `body` over this thread's chunks: the cached ones, or a loop over the row.
  auto for_chunks = [&](const std::function<void(const Chunk&)>& body) {
    if (cache) {
      for (const Chunk& c : cached) {
        if (vec > 1) e.set_lanes(c.lane_var, vec);
        body(c);
      }
      e.set_lanes("", 1);
      return;
    }
    e.open(fmt::format(
        "for (long long b = (long long)glane * {0}, it = 0; b < {1}LL; b += {2}LL, ++it) {{", vec,
        len, T * vec));
    e.push_scope();
    Chunk c = make_chunk("b", "true", "b");
    for (size_t i = 0; i < staged.size(); ++i) {  // the staged inputs come from shared memory
      const graph::Value& val = g.value(staged[i]);
      if (vec == 1) {
        e.memoize(staged[i], c.elems[0].coords,
                  e.let(cuda_compute_type(val.dtype),
                        fmt::format("braze_val({}[{}])", staged_ptr[i], sidx)));
        continue;
      }
      std::string w = e.fresh("sv");
      e.line(fmt::format("const braze_vec<{}, {}> {} = braze_vload<{}>({}, {});",
                         cuda_storage_type(val.dtype), vec, w, vec, staged_ptr[i], sidx));
      for (int j = 0; j < vec; ++j)
        e.memoize(staged[i], c.elems[static_cast<size_t>(j)].coords,
                  fmt::format("braze_val({}.v[{}])", w, j));
    }
    if (vec > 1) e.set_lanes("b", vec);
    body(c);
    e.set_lanes("", 1);
    e.pop_scope();
    e.close();
  };
  auto row_reduce = [&](const std::string& s, const std::string& type, const std::string& acc,
                        const std::string& comb, const std::string& ident, const std::string& tag) {
    std::string r;
    if (tpr == 32) {
      r = fmt::format("{} {} = braze_warp_reduce({}, {});", type, s, acc, comb);
    } else {
      acc_decls += fmt::format("  __shared__ {} braze_shm{}[32];\n", type, tag);
      r = fmt::format("{} {} = braze_block_reduce({}, {}, {}, braze_shm{});", type, s, acc, comb,
                      ident, tag);
    }
    if (split > 1) {
      acc_decls += fmt::format("  __shared__ {} braze_cslot{};\n", type, tag);
      r += fmt::format(" {0} = braze_cluster_reduce({0}, {1}, &braze_cslot{2}, {3});", s, comb, tag,
                       split);
    }
    return r;
  };
  for (size_t ri = 0; ri < reds.size(); ++ri) {
    Red& r = reds[ri];
    // Streaming a row (not cached), softmax's max and sum passes become one online pass.
    if (!cache && !smem && r.prog.online_softmax) {
      std::string tag = fmt::format("{}_o", ri);
      const std::string t0 = r.prog.passes[0].type;
      std::string m = "m" + tag, sm = "sm" + tag;
      e.line(fmt::format("{0} {1} = {2}; {0} {3} = {4};", t0, m, cuda_literal(t0, -INFINITY), sm,
                         cuda_literal(t0, 0)));
      try {
        for_chunks([&](const Chunk& c) {
          for (const Elem& el : c.elems) {
            std::map<std::string, std::string> f = element_fields(r, el.coords);
            f["r"] = el.r;
            f["n"] = cuda_literal(t0, static_cast<double>(len));
            std::string x = e.let(t0, substitute(r.prog.passes[0].map, f, *r.node));
            e.line(fmt::format("braze_online_update({}, {}, {});", m, sm, x));
          }
        });
      } catch (const CudaUnsupported& u) {
        *why_not = u.why;
        return std::nullopt;
      }
      if (tpr == 32) {
        e.line(fmt::format("braze_warp_online({}, {});", m, sm));
      } else {
        acc_decls += fmt::format(
            "  __shared__ {0} braze_shm{1}m[32];\n  __shared__ {0} braze_shm{1}s[32];\n", t0, tag);
        e.line(fmt::format("braze_block_online({}, {}, braze_shm{}m, braze_shm{}s);", m, sm, tag,
                           tag));
      }
      if (split > 1) {
        acc_decls += fmt::format("  __shared__ {} braze_cslot{}[2];\n", t0, tag);
        e.line(fmt::format("braze_cluster_online({}, {}, braze_cslot{}, {});", m, sm, tag, split));
      }
      r.s = {m, sm};
    }
    for (size_t p = r.s.size(); p < r.prog.passes.size(); ++p) {
      const auto& pass = r.prog.passes[p];
      bool arg = pass.combine.rfind("arg", 0) == 0;
      bool is_max = pass.combine.find("max") != std::string::npos,
           last = pass.combine.find("last") != std::string::npos;
      std::string tag = fmt::format("{}_{}", ri, p);
      std::string xt = cuda_compute_type(g.value(r.node->inputs[0]).dtype);
      std::string val_type = arg ? xt : pass.type;
      std::string acc = "a" + tag, acci = "ai" + tag;
      if (arg) {
        e.line(fmt::format("{} {} = {};", val_type, acc, cuda_literal(val_type, 0)));
        e.line(fmt::format("long long {} = -1;", acci));
      } else {
        e.line(fmt::format("{} {} = {};", pass.type, acc, identity_of(pass.combine, pass.type)));
      }
      // One element's contribution: its mapped value folded into the accumulator.
      auto contribute = [&](const std::vector<std::string>& coords, const std::string& rr,
                            const std::string& valid) {
        std::map<std::string, std::string> f = element_fields(r, coords);
        f["r"] = rr;
        f["n"] = cuda_literal(arg ? "double" : pass.type, static_cast<double>(len));
        std::string m = e.let(val_type, substitute(pass.map, f, *r.node));
        if (cache) pass_values[pass_key(ri, p, coords)] = m;
        std::string guard = valid == "true" ? "" : valid + " && ";
        if (arg)
          e.line(
              fmt::format("if ({}braze_arg_better({}, {}, {}, {}, {}, {})) {{ {} = {}; {} = {}; }}",
                          guard, m, rr, acc, acci, is_max, last, acc, m, acci, rr));
        else if (valid == "true")
          e.line(fmt::format("{} = ({}){}({}, {});", acc, pass.type,
                             combiner(pass.combine, pass.type), acc, m));
        else
          e.line(fmt::format("if ({}) {} = ({}){}({}, {});", valid, acc, pass.type,
                             combiner(pass.combine, pass.type), acc, m));
      };
      try {
        for_chunks([&](const Chunk& c) {
          for (const Elem& el : c.elems) contribute(el.coords, el.r, el.valid);
        });
      } catch (const CudaUnsupported& u) {
        *why_not = u.why;
        return std::nullopt;
      }
      std::string s = "s" + tag;
      if (arg) {
        if (tpr == 32) {
          e.line(fmt::format("const long long {} = braze_warp_argreduce({}, {}, {}, {});", s, acc,
                             acci, is_max, last));
        } else {
          acc_decls += fmt::format(
              "  __shared__ {} braze_shm{}[32];\n  __shared__ long long braze_shmi{}[32];\n",
              val_type, tag, tag);
          e.line(
              fmt::format("const long long {} = braze_block_argreduce({}, {}, {}, {}, braze_shm{}, "
                          "braze_shmi{});",
                          s, acc, acci, is_max, last, tag, tag));
        }
      } else {
        e.line(row_reduce(s, pass.type, acc, combiner(pass.combine, pass.type),
                          identity_of(pass.combine, pass.type), tag));
      }
      r.s.push_back(s);
    }
    for (size_t k = 0; k < r.node->outputs.size() && k < r.prog.outputs.size(); ++k)
      if (r.node->outputs[k] != graph::kNoValue && !r.prog.outputs[k].expr.empty())
        bound[r.node->outputs[k]] = {&r, k};
  }

  // The group's outputs: per row (lane 0) or per element (a last sweep).
  std::vector<graph::ValueId> per_row, per_element;
  for (graph::ValueId o : group.outputs) {
    const graph::Value& v = g.value(o);
    auto b = bound.find(o);
    bool row_out = b != bound.end() ? !b->second.first->prog.outputs[b->second.second].per_element
                                    : (v.shape != xv.shape && checked_numel(v.shape) == rows &&
                                       non_ones(v.shape) == non_ones(kept_shape));
    if (b != bound.end() && !row_out) {
      per_element.push_back(o);
    } else if (row_out && !elementwise) {
      per_row.push_back(o);
    } else if (v.shape == xv.shape) {
      per_element.push_back(o);
    } else {
      *why_not = fmt::format("%{} is neither per element nor per row of the reduction", v.name);
      return std::nullopt;
    }
  }
  try {
    if (!per_row.empty()) {
      e.open("if (glane == 0) {");
      e.push_scope();
      for (graph::ValueId o : per_row) {
        const graph::Value& v = g.value(o);
        // Coordinates of this row in o's shape: the kept coordinates in order, 0 at size-1 dims.
        std::vector<std::string> c;
        size_t k = 0;
        for (int64_t d : v.shape) {
          while (k < kept_shape.size() && kept_shape[k] == 1) ++k;
          c.push_back(d == 1 ? "0LL" : kept[k++]);
        }
        e.line(fmt::format("braze_store({}, row, ({}){});", e.output_param(o),
                           cuda_compute_type(v.dtype), e.value_at(o, c)));
      }
      e.pop_scope();
      e.close();
    }
    auto store_elements = [&](const std::vector<std::string>& coords) {
      std::string lin = e.let("long long", cuda_linearize(coords, xshape));
      for (graph::ValueId o : per_element) {
        const graph::Value& v = g.value(o);
        std::string val =
            v.shape == xshape ? e.value_at(o, coords) : e.value_at_view(o, xshape, coords);
        e.line(fmt::format("braze_store({}, {}, ({}){});", e.output_param(o), lin,
                           cuda_compute_type(v.dtype), val));
      }
    };
    // A chunk's values of each output, stored as one vector (outputs here are laid out as X).
    auto store_chunk = [&](const Chunk& c) {
      if (c.elems.size() == 1) {
        store_elements(c.elems[0].coords);
        return;
      }
      std::string lin = e.let("long long", cuda_linearize(c.elems[0].coords, xshape));
      for (graph::ValueId o : per_element) {
        const graph::Value& v = g.value(o);
        std::string ct = cuda_compute_type(v.dtype), st = cuda_storage_type(v.dtype);
        std::string pk = e.fresh("pk");
        e.line(fmt::format("braze_vec<{}, {}> {};", st, vec, pk));
        for (size_t j = 0; j < c.elems.size(); ++j) {
          const auto& co = c.elems[j].coords;
          std::string val = v.shape == xshape ? e.value_at(o, co) : e.value_at_view(o, xshape, co);
          e.line(
              fmt::format("{}.v[{}] = braze_pack(braze_tag<{}>{{}}, ({}){});", pk, j, st, ct, val));
        }
        e.line(fmt::format("braze_vstore<{}>({}, {}, {});", vec, e.output_param(o), lin, pk));
      }
    };
    if (!per_element.empty()) {
      if (elementwise) {
        e.open(fmt::format(
            "for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < {}LL; "
            "r += (long long)gridDim.x * blockDim.x) {{",
            len));
        e.push_scope();
        store_elements(full_coords(kept, e.unravel("r", red_shape)));
        e.pop_scope();
        e.close();
      } else {
        for_chunks([&](const Chunk& c) {
          const std::string& valid = c.elems[0].valid;
          if (valid != "true") e.open(fmt::format("if ({}) {{", valid));
          store_chunk(c);
          if (valid != "true") e.close();
        });
      }
    }
  } catch (const CudaUnsupported& u) {
    *why_not = u.why;
    return std::nullopt;
  }
  if (!elementwise) e.close();

  Kernel k = kernel_record(e, fusion::GroupKind::Reduction, group, t);
  k.block = {threads, 1, 1};
  k.shared_bytes = smem_bytes;
  int64_t blocks = elementwise ? (len + threads - 1) / threads : (rows + rpb - 1) / rpb;
  // Rows stride over a grid that fills the device (2048 threads an SM); with split rows,
  // whole clusters.
  int64_t most = std::max<int64_t>(int64_t{target.num_sms} * (2048 / threads) * 4 / split, 1);
  k.grid = {static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, most) * split), 1, 1};
  k.empty_launch = rows == 0 || (len == 0 && elementwise);
  std::string cluster = split > 1 ? fmt::format(" __cluster_dims__({}, 1, 1)", split) : "";
  // A staged row's block asks for the occupancy its shared memory allows (up to 2048
  // threads an SM), so registers do not cap it lower: blocks overlap their copy phases.
  std::string bounds = std::to_string(threads);
  if (smem) {
    int64_t fit = std::min<int64_t>(2048 / threads, (227 * 1024) / (int64_t{smem_bytes} + 1024));
    if (fit > 1) bounds += ", " + std::to_string(fit);
  }
  std::string code = fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({}){} KERNEL_NAME({}) {{\n{}{}}}\n", bounds,
      cluster, e.signature(), acc_decls, e.body());
  finish_kernel(g, k, code, kReduceHelpers);
  return k;
}

}  // namespace braze::codegen
