// The reduction schedule's kernel: one or more reductions over the same rows, with the
// element-wise prologue and epilogue the partitioner grouped around them. Each reduction runs
// its op's row program (codegen/cuda_hooks.h, from codegen/lower/): passes over the row, each
// combined in registers and reduced across the block. A reduction's results are then bound,
// for the rest of the row, to the values its node produces — so a later reduction's input or
// an epilogue op reads them as locals. Per-element outputs take a last sweep over the row;
// per-row outputs are written by thread 0. One block per row, grid-striding over rows.
//
//   row r of X (reduced axes)          passes                outputs
//   x0 x1 x2 … x(L-1)   ──map──►  s0 = max(x)        ─┐
//                        ──map──►  s1 = sum(exp(x-s0)) ├─► y_i = exp(x_i - s0) / s1
//
// The search space and its heuristics are in reduction.cpp.
#include <braze/error.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/cuda_hooks.h"
#include "codegen/emitter.h"
#include "codegen/lowering.h"
#include "codegen/row_tile.h"
#include "graph/registry.h"

namespace braze::codegen {

namespace {

using graph::non_ones;

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

std::string identity_of(Combine combine, ComputeType type) {
  bool flt = is_floating(type);
  switch (combine) {
    case Combine::Sum:
      return cuda_literal(type, 0);
    case Combine::Prod:
      return cuda_literal(type, 1);
    case Combine::Max:
      return flt ? cuda_literal(type, -INFINITY) : cuda_literal(type, -1e300);
    case Combine::Min:
      return flt ? cuda_literal(type, INFINITY) : cuda_literal(type, 1e300);
    default:
      throw InternalError("identity_of: an arg reduction keeps an index, not a value");
  }
}

std::string combiner(Combine combine, ComputeType type) {
  switch (combine) {
    case Combine::Sum:
      return fmt::format("[]({0} a, {0} b) {{ return a + b; }}", type);
    case Combine::Prod:
      return fmt::format("[]({0} a, {0} b) {{ return a * b; }}", type);
    case Combine::Max:
      return fmt::format("[]({0} a, {0} b) {{ return braze_max(a, b); }}", type);
    case Combine::Min:
      return fmt::format("[]({0} a, {0} b) {{ return braze_min(a, b); }}", type);
    default:
      throw InternalError("combiner: an arg reduction compares (braze_arg_better)");
  }
}

bool uses_field(const CudaRowProgram& p, const std::string& name) {
  std::string f = "{" + name + "}";
  for (const auto& pass : p.passes)
    if (pass.map.find(f) != std::string::npos) return true;
  for (const auto& o : p.outputs)
    if (o.expr.find(f) != std::string::npos) return true;
  return false;
}

// One reduction node of the group and its row program.
struct Red {
  const graph::Node* node;
  CudaRowProgram prog;
  std::vector<Shape> shapes;
  std::vector<std::string> s;  // locals holding its pass results
};

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

// Builds one group's kernel; each member function emits one part of it, in order.
class ReductionBuilder {
 public:
  ReductionBuilder(const graph::Graph& g, const fusion::Group& group, const Target& target)
      : g_(g),
        group_(group),
        target_(target),
        members_(group.nodes.begin(), group.nodes.end()),
        e_(g, [this](graph::NodeId id) { return members_.count(id) != 0; }) {}

  std::optional<Kernel> build(std::string* why_not, const Tunables* tune) {
    if (!collect_reductions(why_not)) return std::nullopt;
    lay_out_rows();
    e_.set_intercept([this](graph::ValueId v, const std::vector<std::string>& coords) {
      return bound_value(v, coords);
    });
    choose_schedule(tune);
    open_row_loop();
    stage_rows();
    hold_chunks();
    for (size_t ri = 0; ri < reds_.size(); ++ri) {
      Red& r = reds_[ri];
      // Streaming a row (not cached), softmax's max and sum passes become one online pass.
      if (!cache_ && !smem_ && r.prog.online_softmax) online_softmax(ri);
      for (size_t p = r.s.size(); p < r.prog.passes.size(); ++p) reduce_pass(ri, p);
      for (size_t k = 0; k < r.node->outputs.size() && k < r.prog.outputs.size(); ++k)
        if (r.node->outputs[k] != graph::kNoValue && !r.prog.outputs[k].expr.empty())
          bound_[r.node->outputs[k]] = {&r, k};
    }
    if (!sort_outputs(why_not)) return std::nullopt;
    if (!per_row_.empty()) store_rows();
    if (!per_element_.empty()) store_elements();
    if (!elementwise_) e_.close();
    return finish();
  }

 private:
  // The group's reductions and their row programs, all over the same rows.
  bool collect_reductions(std::string* why_not) {
    for (graph::NodeId id : group_.nodes) {
      const graph::Node& n = g_.node(id);
      if (!lowering(n).row) {
        if (!lowering(n).expr && !lowering(n).index) {
          *why_not = n.describe() + " has no GPU code";
          return false;
        }
        continue;
      }
      CudaRowInputs ins = cuda_row_inputs(g_, n);
      std::optional<CudaRowProgram> prog = lowering(n).row(n, ins);
      if (!prog) {
        *why_not = n.describe() + " has no GPU row program for these attributes and dtypes";
        return false;
      }
      reds_.push_back({&n, std::move(*prog), ins.shapes, {}});
    }
    if (reds_.empty()) {
      *why_not = "a reduction group without a reduction";
      return false;
    }
    const graph::Node& n0 = *reds_[0].node;
    const CudaRowProgram& p0 = reds_[0].prog;
    xv_ = &g_.value(n0.inputs[0]);
    xshape_ = p0.x_view.empty() ? xv_->shape : p0.x_view;
    BRAZE_CHECK(checked_numel(xshape_) == checked_numel(xv_->shape),
                n0.describe() + ": row program view of X differs in size");
    for (const Red& r : reds_) {
      bool same = r.prog.axes == p0.axes && g_.value(r.node->inputs[0]).shape == xv_->shape &&
                  r.prog.x_view == p0.x_view;
      if (!same || (reds_.size() > 1 && !r.prog.x_view.empty())) {
        *why_not = r.node->describe() + " reduces other rows than " + n0.describe();
        return false;
      }
    }
    return true;
  }

  // X's dims split into kept (rows) and reduced (a row's elements).
  void lay_out_rows() {
    const CudaRowProgram& p0 = reds_[0].prog;
    reduced_.assign(xshape_.size(), false);
    for (int64_t a : p0.axes) reduced_.at(static_cast<size_t>(a)) = true;
    for (size_t d = 0; d < xshape_.size(); ++d)
      (reduced_[d] ? red_shape_ : kept_shape_).push_back(xshape_[d]);
    rows_ = checked_numel(kept_shape_);
    len_ = checked_numel(red_shape_);
    // A single program without passes is element-wise (inference BatchNormalization): every
    // thread takes elements, as the pointwise schedule does.
    elementwise_ = reds_.size() == 1 && p0.passes.empty();
    if (elementwise_) {
      kept_shape_.clear();
      red_shape_ = xshape_;
      std::fill(reduced_.begin(), reduced_.end(), true);
      len_ = checked_numel(xshape_);
      rows_ = 1;
    }
  }

  std::vector<std::string> full_coords(const std::vector<std::string>& kept,
                                       const std::vector<std::string>& red) const {
    std::vector<std::string> c;
    size_t ki = 0, ri = 0;
    for (size_t d = 0; d < xshape_.size(); ++d) c.push_back(reduced_[d] ? red[ri++] : kept[ki++]);
    return c;
  }

  // Fields of reduction `r` at the element at `coords` (its input's coordinates).
  std::map<std::string, std::string> element_fields(const Red& r,
                                                    const std::vector<std::string>& coords) {
    std::map<std::string, std::string> f;
    for (size_t k = 0; k < r.s.size(); ++k) f[fmt::format("s{}", k)] = r.s[k];
    std::vector<std::string> red;
    for (size_t d = 0; d < coords.size(); ++d)
      if (reduced_[d]) red.push_back(coords[d]);
    f["r"] = cuda_linearize(red, red_shape_);
    f["x"] = e_.value_at_view(r.node->inputs[0], xshape_, coords);
    for (size_t i = 1; i < r.node->inputs.size(); ++i) {
      if (r.node->inputs[i] == graph::kNoValue) continue;
      Shape view = i - 1 < r.prog.views.size() && !r.prog.views[i - 1].empty() ? r.prog.views[i - 1]
                                                                               : r.shapes[i];
      std::string name = "in" + std::to_string(i);
      if (uses_field(r.prog, name))
        f[name] =
            e_.value_at_view(r.node->inputs[i], view, broadcast_coords(coords, xshape_, view));
    }
    return f;
  }

  // Pass maps' values per element, where a schedule holds them (registers): key
  // "reduction|pass|coords".
  static std::string pass_key(size_t ri, size_t p, const std::vector<std::string>& coords) {
    std::string k = fmt::format("{}|{}", ri, p);
    for (const std::string& c : coords) k += "|" + c;
    return k;
  }

  // {p0}, {p1} … of reduction `ri` at `coords`: the held value, else the map recomputed.
  void add_pass_fields(size_t ri, const std::vector<std::string>& coords,
                       std::map<std::string, std::string>& f) {
    const Red& r = reds_[ri];
    for (size_t p = 0; p < r.prog.passes.size() && p < r.s.size(); ++p) {
      std::string name = fmt::format("p{}", p);
      if (!uses_field(r.prog, name)) continue;
      auto it = pass_values_.find(pass_key(ri, p, coords));
      if (it != pass_values_.end()) {
        f[name] = it->second;
        continue;
      }
      std::map<std::string, std::string> fp = f;
      fp["n"] = cuda_literal(r.prog.passes[p].type, static_cast<double>(len_));
      f[name] = "(" + substitute(r.prog.passes[p].map, fp, *r.node) + ")";
    }
  }

  // Reductions' results, bound once their passes have run: per-row outputs to an
  // expression of the pass results, per-element outputs to their expression at the asked
  // coordinates.
  std::optional<std::string> bound_value(graph::ValueId v, const std::vector<std::string>& coords) {
    auto it = bound_.find(v);
    if (it == bound_.end()) return std::nullopt;
    const Red& r = *it->second.first;
    const auto& o = r.prog.outputs[it->second.second];
    const ComputeType ct = compute_type(g_.value(v).dtype);
    std::map<std::string, std::string> f;
    if (o.per_element) {
      std::vector<std::string> xc =
          coords.size() == xshape_.size()
              ? coords
              : cuda_unravel(cuda_linearize(coords, g_.value(v).shape), xshape_);
      f = element_fields(r, xc);
      add_pass_fields(static_cast<size_t>(&r - reds_.data()), xc, f);
    } else {
      bool uses_inputs =
          o.expr.find("{in") != std::string::npos || o.expr.find("{x}") != std::string::npos;
      if (uses_inputs)
        f = element_fields(r,
                           full_coords(kept_, std::vector<std::string>(red_shape_.size(), "0LL")));
      for (size_t k = 0; k < r.s.size(); ++k) f[fmt::format("s{}", k)] = r.s[k];
    }
    f["n"] =
        cuda_literal(ct == ComputeType::Bool ? ComputeType::Int : ct, static_cast<double>(len_));
    return e_.let(cuda_name(ct), fmt::format("({})({})", ct, substitute(o.expr, f, *r.node)));
  }

  // Schedule: `tpr` threads per row (a warp, or a block of up to 1024), `rpb` rows per
  // block (warps each taking a row), and with `cache` each thread holds its elements of the
  // row in registers — E = ceil(L / tpr) of them, loaded once however many passes follow.
  void choose_schedule(const Tunables* tune) {
    std::vector<Tunables> cands = tune ? std::vector<Tunables>{} : reduction_candidates(g_, group_);
    tile_ = tune ? row_tile_of(*tune) : cands.empty() ? RowTile{} : row_tile_of(cands.front());
    tpr_ = tile_.tpr;
    rpb_ = tile_.rpb;
    cache_ = tile_.hold == RowTile::Hold::Registers && !elementwise_;
    // Split rows: a cluster of `split` blocks shares each row (sm_90 thread-block clusters),
    // combining the blocks' partial results through distributed shared memory. Thread q of
    // block k is the row's thread k·tpr + q of T = split·tpr; elements are dealt to the T
    // threads exactly as to one block's. Not for arg reductions (their index would need a
    // second exchange) nor the CPU emulator.
    bool has_arg = false;
    for (const Red& r : reds_)
      for (const auto& pass : r.prog.passes) has_arg |= is_arg(pass.combine);
    split_ = tile_.split;
    if (split_ < 1 || elementwise_ || rpb_ != 1 || has_arg || target_.sm < 90 || target_.emulated)
      split_ = 1;
    T_ = int64_t{tpr_} * split_;
    // Staged: the row's group inputs are copied into shared memory once (asynchronously on
    // sm_80+), and every pass and the output sweep read them there.
    if (tile_.hold == RowTile::Hold::Shared && !elementwise_ && reds_[0].prog.x_view.empty())
      staged_ = staged_inputs(g_, group_, xv_->shape);
    smem_ = !staged_.empty();
    // Vector lanes along the row: only for one reduced axis that is innermost, whole vectors.
    vec_ = tile_.vec;
    if (elementwise_ || red_shape_.size() != 1 || !reduced_.back() || len_ % vec_ != 0) vec_ = 1;
    chunks_ = len_ / vec_;
    per_thread_ = (chunks_ + T_ - 1) / T_;
    threads_ = elementwise_ ? 256u : static_cast<unsigned>(tpr_ * rpb_);
  }

  void open_row_loop() {
    if (!elementwise_) {
      e_.line(fmt::format("const int lane = threadIdx.x % {};", tpr_));
      if (split_ > 1) {
        e_.line(fmt::format(
            "const int glane = lane + (int)(blockIdx.x % {}u) * {};  // the row's thread", split_,
            tpr_));
        e_.open(
            fmt::format("for (long long row = (long long)(blockIdx.x / {0}u); row < {1}LL; row += "
                        "(long long)(gridDim.x / {0}u)) {{",
                        split_, rows_));
      } else {
        e_.line("const int glane = lane;");
        e_.open(fmt::format(
            "for (long long row = (long long)blockIdx.x * {0} + threadIdx.x / {1}; row < {2}LL; "
            "row += (long long)gridDim.x * {0}) {{",
            rpb_, tpr_, rows_));
      }
    }
    kept_ = e_.unravel("row", kept_shape_);
  }

  // Shared-memory staging: each thread copies the chunks it later reads (same start and
  // stride as the stream loops), then waits for its own copies.
  void stage_rows() {
    // A thread's chunk at iteration `it` of a row loop sits at (it·tpr + lane)·vec of its
    // block's region (the row's element b itself when the block has the whole row).
    smem_row_ = split_ == 1 ? len_ : per_thread_ * tpr_ * vec_;
    sidx_ =
        split_ == 1 ? "b" : fmt::format("(it * {}LL + lane * {}LL)", int64_t{tpr_} * vec_, vec_);
    if (!smem_) return;
    std::string decls;
    for (graph::ValueId v : staged_) {
      const graph::Value& val = g_.value(v);
      std::string st = cuda_storage_type(val.dtype),
                  name = fmt::format("braze_sx{}", staged_ptr_.size());
      decls += fmt::format(
          "  {0}* const {1} = reinterpret_cast<{0}*>(braze_smem + {2}) + (threadIdx.x / {3}) * "
          "{4}LL;\n",
          st, name, smem_bytes_, tpr_, smem_row_);
      staged_ptr_.push_back(name);
      smem_bytes_ +=
          static_cast<unsigned>((rpb_ * smem_row_ * dtype_size(val.dtype) + 15) / 16 * 16);
    }
    acc_decls_ += fmt::format("  BRAZE_DYNAMIC_SMEM(braze_smem, {});\n", smem_bytes_) + decls;
    e_.open(fmt::format(
        "for (long long b = (long long)glane * {0}, it = 0; b < {1}LL; b += {2}LL, ++it) {{", vec_,
        len_, T_ * vec_));
    e_.push_scope();
    std::string gidx = cuda_linearize(full_coords(kept_, e_.unravel("b", red_shape_)), xshape_);
    for (size_t i = 0; i < staged_.size(); ++i) {
      const graph::Value& val = g_.value(staged_[i]);
      const size_t bytes = static_cast<size_t>(vec_) * dtype_size(val.dtype);
      std::string src = fmt::format("{} + {}", e_.input_param(staged_[i]), gidx);
      if (target_.sm >= 80 && (bytes == 4 || bytes == 8 || bytes == 16))
        e_.line(fmt::format("braze_cp_async<{}>({} + {}, {});", bytes, staged_ptr_[i], sidx_, src));
      else if (vec_ > 1)
        e_.line(fmt::format(
            "*reinterpret_cast<braze_vec<{0}, {1}>*>({2} + {3}) = braze_vload<{1}>({4}, 0);",
            cuda_storage_type(val.dtype), vec_, staged_ptr_[i], sidx_, src));
      else
        e_.line(fmt::format("{}[{}] = *({});", staged_ptr_[i], sidx_, src));
    }
    e_.pop_scope();
    e_.close();
    if (target_.sm >= 80) e_.line("braze_cp_async_wait_all();");
  }

  Chunk make_chunk(const std::string& base, const std::string& valid, const std::string& clamped) {
    Chunk c;
    if (vec_ == 1) {
      c.elems.push_back({base, valid, full_coords(kept_, e_.unravel(clamped, red_shape_))});
      return c;
    }
    c.lane_var = clamped;
    for (int j = 0; j < vec_; ++j)
      c.elems.push_back({Emitter::lane_expr(base, j), valid,
                         full_coords(kept_, {Emitter::lane_expr(clamped, j)})});
    return c;
  }

  // Cached mode: chunk k of this thread starts at (lane + k·tpr)·vec, clamped into the row
  // so its loads are in bounds; the values it loads stay in registers across passes.
  void hold_chunks() {
    if (!cache_) return;
    for (int64_t kk = 0; kk < per_thread_; ++kk) {
      std::string base =
          e_.let("long long", fmt::format("((long long)glane + {}LL) * {}LL", kk * T_, vec_));
      bool always = (kk + 1) * T_ <= chunks_;
      std::string valid = always ? "true" : e_.let("bool", fmt::format("{} < {}LL", base, len_));
      std::string clamped =
          always ? base
                 : e_.let("long long", fmt::format("{0} ? {1} : {2}LL", valid, base, len_ - vec_));
      cached_.push_back(make_chunk(base, valid, clamped));
    }
  }

  // Runs `body` over this thread's chunks: the cached ones, or a loop over the row.
  void for_chunks(const std::function<void(const Chunk&)>& body) {
    if (cache_) {
      for (const Chunk& c : cached_) {
        if (vec_ > 1) e_.set_lanes(c.lane_var, vec_);
        body(c);
      }
      e_.set_lanes("", 1);
      return;
    }
    e_.open(fmt::format(
        "for (long long b = (long long)glane * {0}, it = 0; b < {1}LL; b += {2}LL, ++it) {{", vec_,
        len_, T_ * vec_));
    e_.push_scope();
    Chunk c = make_chunk("b", "true", "b");
    for (size_t i = 0; i < staged_.size(); ++i) {  // the staged inputs come from shared memory
      const graph::Value& val = g_.value(staged_[i]);
      if (vec_ == 1) {
        e_.memoize(staged_[i], c.elems[0].coords,
                   e_.let(cuda_compute_type(val.dtype),
                          fmt::format("braze_val({}[{}])", staged_ptr_[i], sidx_)));
        continue;
      }
      std::string w = e_.fresh("sv");
      e_.line(fmt::format("const braze_vec<{}, {}> {} = braze_vload<{}>({}, {});",
                          cuda_storage_type(val.dtype), vec_, w, vec_, staged_ptr_[i], sidx_));
      for (int j = 0; j < vec_; ++j)
        e_.memoize(staged_[i], c.elems[static_cast<size_t>(j)].coords,
                   fmt::format("braze_val({}.v[{}])", w, j));
    }
    if (vec_ > 1) e_.set_lanes("b", vec_);
    body(c);
    e_.set_lanes("", 1);
    e_.pop_scope();
    e_.close();
  }

  // The statement reducing each thread's `acc` across the row into a new local `s`.
  std::string row_reduce(const std::string& s, ComputeType type, const std::string& acc,
                         const std::string& comb, const std::string& ident,
                         const std::string& tag) {
    std::string r;
    if (tpr_ == 32) {
      r = fmt::format("{} {} = braze_warp_reduce({}, {});", type, s, acc, comb);
    } else {
      acc_decls_ += fmt::format("  __shared__ {} braze_shm{}[32];\n", type, tag);
      r = fmt::format("{} {} = braze_block_reduce({}, {}, {}, braze_shm{});", type, s, acc, comb,
                      ident, tag);
    }
    if (split_ > 1) {
      acc_decls_ += fmt::format("  __shared__ {} braze_cslot{};\n", type, tag);
      r += fmt::format(" {0} = braze_cluster_reduce({0}, {1}, &braze_cslot{2}, {3});", s, comb, tag,
                       split_);
    }
    return r;
  }

  // Softmax's max and sum passes as one: a running max and a rescaled sum.
  void online_softmax(size_t ri) {
    Red& r = reds_[ri];
    std::string tag = fmt::format("{}_o", ri);
    const ComputeType t0 = r.prog.passes[0].type;
    std::string m = "m" + tag, sm = "sm" + tag;
    e_.line(fmt::format("{0} {1} = {2}; {0} {3} = {4};", t0, m, cuda_literal(t0, -INFINITY), sm,
                        cuda_literal(t0, 0)));
    for_chunks([&](const Chunk& c) {
      for (const Elem& el : c.elems) {
        std::map<std::string, std::string> f = element_fields(r, el.coords);
        f["r"] = el.r;
        f["n"] = cuda_literal(t0, static_cast<double>(len_));
        std::string x = e_.let(cuda_name(t0), substitute(r.prog.passes[0].map, f, *r.node));
        e_.line(fmt::format("braze_online_update({}, {}, {});", m, sm, x));
      }
    });
    if (tpr_ == 32) {
      e_.line(fmt::format("braze_warp_online({}, {});", m, sm));
    } else {
      acc_decls_ += fmt::format(
          "  __shared__ {0} braze_shm{1}m[32];\n  __shared__ {0} braze_shm{1}s[32];\n", t0, tag);
      e_.line(
          fmt::format("braze_block_online({}, {}, braze_shm{}m, braze_shm{}s);", m, sm, tag, tag));
    }
    if (split_ > 1) {
      acc_decls_ += fmt::format("  __shared__ {} braze_cslot{}[2];\n", t0, tag);
      e_.line(fmt::format("braze_cluster_online({}, {}, braze_cslot{}, {});", m, sm, tag, split_));
    }
    r.s = {m, sm};
  }

  // What one pass folds: an accumulator (and the index of an arg reduction's best element).
  struct PassAcc {
    bool arg, is_max, last;
    ComputeType val_type;
    std::string tag, acc, acci;
  };

  // One element's contribution: its mapped value folded into the accumulator.
  void fold_element(size_t ri, size_t p, const PassAcc& a, const Elem& el) {
    const Red& r = reds_[ri];
    const auto& pass = r.prog.passes[p];
    std::map<std::string, std::string> f = element_fields(r, el.coords);
    f["r"] = el.r;
    f["n"] = cuda_literal(a.arg ? ComputeType::Double : pass.type, static_cast<double>(len_));
    std::string m = e_.let(cuda_name(a.val_type), substitute(pass.map, f, *r.node));
    if (cache_) pass_values_[pass_key(ri, p, el.coords)] = m;
    std::string guard = el.valid == "true" ? "" : el.valid + " && ";
    if (a.arg)
      e_.line(fmt::format("if ({}braze_arg_better({}, {}, {}, {}, {}, {})) {{ {} = {}; {} = {}; }}",
                          guard, m, el.r, a.acc, a.acci, a.is_max, a.last, a.acc, m, a.acci, el.r));
    else if (el.valid == "true")
      e_.line(fmt::format("{} = ({}){}({}, {});", a.acc, pass.type,
                          combiner(pass.combine, pass.type), a.acc, m));
    else
      e_.line(fmt::format("if ({}) {} = ({}){}({}, {});", el.valid, a.acc, pass.type,
                          combiner(pass.combine, pass.type), a.acc, m));
  }

  // Pass `p` of reduction `ri`: each thread folds its elements, then the row is reduced.
  void reduce_pass(size_t ri, size_t p) {
    Red& r = reds_[ri];
    const auto& pass = r.prog.passes[p];
    PassAcc a;
    a.arg = is_arg(pass.combine);
    a.is_max = picks_max(pass.combine);
    a.last = picks_last(pass.combine);
    a.tag = fmt::format("{}_{}", ri, p);
    a.val_type = a.arg ? compute_type(g_.value(r.node->inputs[0]).dtype) : pass.type;
    a.acc = "a" + a.tag;
    a.acci = "ai" + a.tag;
    if (a.arg) {
      e_.line(fmt::format("{} {} = {};", a.val_type, a.acc, cuda_literal(a.val_type, 0)));
      e_.line(fmt::format("long long {} = -1;", a.acci));
    } else {
      e_.line(fmt::format("{} {} = {};", pass.type, a.acc, identity_of(pass.combine, pass.type)));
    }
    for_chunks([&](const Chunk& c) {
      for (const Elem& el : c.elems) fold_element(ri, p, a, el);
    });
    std::string s = "s" + a.tag;
    if (!a.arg) {
      e_.line(row_reduce(s, pass.type, a.acc, combiner(pass.combine, pass.type),
                         identity_of(pass.combine, pass.type), a.tag));
    } else if (tpr_ == 32) {
      e_.line(fmt::format("const long long {} = braze_warp_argreduce({}, {}, {}, {});", s, a.acc,
                          a.acci, a.is_max, a.last));
    } else {
      acc_decls_ += fmt::format(
          "  __shared__ {} braze_shm{}[32];\n  __shared__ long long braze_shmi{}[32];\n",
          a.val_type, a.tag, a.tag);
      e_.line(
          fmt::format("const long long {} = braze_block_argreduce({}, {}, {}, {}, braze_shm{}, "
                      "braze_shmi{});",
                      s, a.acc, a.acci, a.is_max, a.last, a.tag, a.tag));
    }
    r.s.push_back(s);
  }

  // The group's outputs: per row (lane 0) or per element (a last sweep).
  bool sort_outputs(std::string* why_not) {
    for (graph::ValueId o : group_.outputs) {
      const graph::Value& v = g_.value(o);
      auto b = bound_.find(o);
      bool row_out = b != bound_.end()
                         ? !b->second.first->prog.outputs[b->second.second].per_element
                         : (v.shape != xv_->shape && checked_numel(v.shape) == rows_ &&
                            non_ones(v.shape) == non_ones(kept_shape_));
      if (b != bound_.end() && !row_out) {
        per_element_.push_back(o);
      } else if (row_out && !elementwise_) {
        per_row_.push_back(o);
      } else if (v.shape == xv_->shape) {
        per_element_.push_back(o);
      } else {
        *why_not = fmt::format("%{} is neither per element nor per row of the reduction", v.name);
        return false;
      }
    }
    return true;
  }

  void store_rows() {
    e_.open("if (glane == 0) {");
    e_.push_scope();
    for (graph::ValueId o : per_row_) {
      const graph::Value& v = g_.value(o);
      // Coordinates of this row in o's shape: the kept coordinates in order, 0 at size-1 dims.
      std::vector<std::string> c;
      size_t k = 0;
      for (int64_t d : v.shape) {
        while (k < kept_shape_.size() && kept_shape_[k] == 1) ++k;
        c.push_back(d == 1 ? "0LL" : kept_[k++]);
      }
      e_.line(fmt::format("braze_store({}, row, ({}){});", e_.output_param(o),
                          cuda_compute_type(v.dtype), e_.value_at(o, c)));
    }
    e_.pop_scope();
    e_.close();
  }

  void store_element(const std::vector<std::string>& coords) {
    std::string lin = e_.let("long long", cuda_linearize(coords, xshape_));
    for (graph::ValueId o : per_element_) {
      const graph::Value& v = g_.value(o);
      std::string val =
          v.shape == xshape_ ? e_.value_at(o, coords) : e_.value_at_view(o, xshape_, coords);
      e_.line(fmt::format("braze_store({}, {}, ({}){});", e_.output_param(o), lin,
                          cuda_compute_type(v.dtype), val));
    }
  }

  // A chunk's values of each output, stored as one vector (outputs here are laid out as X).
  void store_chunk(const Chunk& c) {
    if (c.elems.size() == 1) {
      store_element(c.elems[0].coords);
      return;
    }
    std::string lin = e_.let("long long", cuda_linearize(c.elems[0].coords, xshape_));
    for (graph::ValueId o : per_element_) {
      const graph::Value& v = g_.value(o);
      std::string ct = cuda_compute_type(v.dtype), st = cuda_storage_type(v.dtype);
      std::string pk = e_.fresh("pk");
      e_.line(fmt::format("braze_vec<{}, {}> {};", st, vec_, pk));
      for (size_t j = 0; j < c.elems.size(); ++j) {
        const auto& co = c.elems[j].coords;
        std::string val =
            v.shape == xshape_ ? e_.value_at(o, co) : e_.value_at_view(o, xshape_, co);
        e_.line(
            fmt::format("{}.v[{}] = braze_pack(braze_tag<{}>{{}}, ({}){});", pk, j, st, ct, val));
      }
      e_.line(fmt::format("braze_vstore<{}>({}, {}, {});", vec_, e_.output_param(o), lin, pk));
    }
  }

  // The per-element outputs: a sweep over every element, or over the row's chunks.
  void store_elements() {
    if (elementwise_) {
      e_.open(fmt::format(
          "for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < {}LL; "
          "r += (long long)gridDim.x * blockDim.x) {{",
          len_));
      e_.push_scope();
      store_element(full_coords(kept_, e_.unravel("r", red_shape_)));
      e_.pop_scope();
      e_.close();
      return;
    }
    for_chunks([&](const Chunk& c) {
      const std::string& valid = c.elems[0].valid;
      if (valid != "true") e_.open(fmt::format("if ({}) {{", valid));
      store_chunk(c);
      if (valid != "true") e_.close();
    });
  }

  Kernel finish() {
    Kernel k = kernel_record(e_, fusion::GroupKind::Reduction, group_, tunables_of(tile_));
    k.block = {threads_, 1, 1};
    k.shared_bytes = smem_bytes_;
    int64_t blocks = elementwise_ ? (len_ + threads_ - 1) / threads_ : (rows_ + rpb_ - 1) / rpb_;
    // Rows stride over a grid that fills the device (2048 threads an SM); with split rows,
    // whole clusters.
    int64_t most = std::max<int64_t>(int64_t{target_.num_sms} * (2048 / threads_) * 4 / split_, 1);
    k.grid = {static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, most) * split_), 1, 1};
    k.empty_launch = rows_ == 0 || (len_ == 0 && elementwise_);
    std::string cluster = split_ > 1 ? fmt::format(" __cluster_dims__({}, 1, 1)", split_) : "";
    // A staged row's block asks for the occupancy its shared memory allows (up to 2048
    // threads an SM), so registers do not cap it lower: blocks overlap their copy phases.
    std::string bounds = std::to_string(threads_);
    if (smem_) {
      int64_t fit =
          std::min<int64_t>(2048 / threads_, (227 * 1024) / (int64_t{smem_bytes_} + 1024));
      if (fit > 1) bounds += ", " + std::to_string(fit);
    }
    std::string code = fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({}){} KERNEL_NAME({}) {{\n{}{}}}\n", bounds,
        cluster, e_.signature(), acc_decls_, e_.body());
    finish_kernel(g_, k, code, kReduceHelpers);
    return k;
  }

  const graph::Graph& g_;
  const fusion::Group& group_;
  const Target& target_;
  std::set<graph::NodeId> members_;
  Emitter e_;
  std::vector<Red> reds_;
  // Rows: X (input 0 of the first reduction, or its view) split into kept and reduced dims.
  const graph::Value* xv_ = nullptr;
  Shape xshape_, kept_shape_, red_shape_;
  std::vector<bool> reduced_;
  int64_t rows_ = 0, len_ = 0;
  bool elementwise_ = false;
  std::vector<std::string> kept_;  // this row's kept coordinates
  // Schedule.
  RowTile tile_;  // as asked; the fields below as this group allows it
  int tpr_ = 32, rpb_ = 1, split_ = 1, vec_ = 1;
  bool cache_ = false, smem_ = false;
  int64_t T_ = 32, chunks_ = 0, per_thread_ = 0;
  unsigned threads_ = 32;
  std::vector<graph::ValueId> staged_;
  std::vector<std::string> staged_ptr_;
  unsigned smem_bytes_ = 0;
  int64_t smem_row_ = 0;
  std::string sidx_;
  std::vector<Chunk> cached_;
  std::string acc_decls_;  // declarations at the top of the kernel (shared memory)
  // Values computed so far.
  std::map<std::string, std::string> pass_values_;
  std::map<graph::ValueId, std::pair<const Red*, size_t>> bound_;  // value -> (reduction, output)
  std::vector<graph::ValueId> per_row_, per_element_;
};

}  // namespace

std::optional<Kernel> reduction_kernel(const graph::Graph& g, const fusion::Group& group,
                                       const Target& target, std::string* why_not,
                                       const Tunables* tune) {
  try {
    return ReductionBuilder(g, group, target).build(why_not, tune);
  } catch (const CudaUnsupported& u) {
    *why_not = u.why;
    return std::nullopt;
  }
}

}  // namespace braze::codegen
