#include "codegen/emitter.h"

#include <braze/error.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "codegen/lowering.h"
#include "codegen/cuda_hooks.h"
#include "graph/registry.h"

namespace braze::codegen {

using graph::kNoValue;
using graph::NodeId;
using graph::ValueId;

std::vector<std::string> broadcast_coords(const std::vector<std::string>& coords, const Shape& out,
                                          const Shape& in) {
  std::vector<std::string> c(in.size());
  size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) c[d] = in[d] == 1 ? "0LL" : coords[off + d];
  return c;
}

namespace {

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether identifier `var` occurs in expression `expr` (as itself, not inside a longer name).
bool mentions(const std::string& expr, const std::string& var) {
  for (size_t at = expr.find(var); at != std::string::npos; at = expr.find(var, at + 1)) {
    const size_t end = at + var.size();
    if ((at == 0 || !identifier_char(expr[at - 1])) &&
        (end == expr.size() || !identifier_char(expr[end])))
      return true;
  }
  return false;
}

}  // namespace

Emitter::Emitter(const graph::Graph& g, std::function<bool(NodeId)> in_group)
    : g_(g), in_group_(std::move(in_group)) {}

std::string Emitter::fresh(const std::string& prefix) {
  return fmt::format("{}{}", prefix, counter_++);
}

void Emitter::line(const std::string& s) {
  body_.append(static_cast<size_t>(indent_) * 2, ' ');
  body_ += s;
  body_ += '\n';
}

void Emitter::open(const std::string& header) {
  line(header);
  ++indent_;
}

void Emitter::close(const std::string& after) {
  --indent_;
  line("}" + after);
}

std::string Emitter::let(const std::string& type, const std::string& expr) {
  std::string name = fresh("v");
  line(fmt::format("const {} {} = {};", type, name, expr));
  return name;
}

void Emitter::push_scope() { memo_.emplace_back(); }
void Emitter::pop_scope() { memo_.pop_back(); }
void Emitter::clear_memo() { memo_.assign(1, {}); }

std::vector<std::string> Emitter::unravel(const std::string& flat, const Shape& shape) {
  std::vector<std::string> exprs = cuda_unravel(flat, shape);
  std::vector<std::string> c(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (exprs[d] == "0LL") {
      c[d] = "0LL";
      continue;
    }
    c[d] = fresh("c");
    line(fmt::format("const long long {} = {};", c[d], exprs[d]));
  }
  return c;
}

std::vector<std::string> Emitter::unravel32(const std::string& flat, const Shape& shape) {
  std::string u = fresh("u");
  line(fmt::format("const unsigned {} = (unsigned){};", u, flat));
  std::vector<std::string> c(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) {
      c[d] = "0LL";
    } else {
      std::string q = stride == 1 ? u : fmt::format("({} / {}u)", u, stride);
      c[d] = fresh("c");
      line(fmt::format("const long long {} = (long long){};", c[d],
                       d == 0 ? q : fmt::format("({} % {}u)", q, shape[d])));
    }
    stride *= shape[d];
  }
  return c;
}

std::string Emitter::input_param(ValueId v) {
  auto it = param_names_.find(v);
  if (it != param_names_.end()) return it->second;
  std::string name = fmt::format("in{}", params_.size());
  params_.push_back({v, false});
  param_names_[v] = name;
  return name;
}

std::string Emitter::output_param(ValueId v) {
  auto it = param_names_.find(v);
  if (it != param_names_.end()) {
    BRAZE_CHECK(std::any_of(params_.begin(), params_.end(),
                            [&](const Param& p) { return p.value == v && p.is_output; }),
                "value used as a kernel input and output: " + g_.value(v).name);
    return it->second;
  }
  std::string name = fmt::format("out{}", params_.size());
  params_.push_back({v, true});
  param_names_[v] = name;
  return name;
}

int Emitter::add_check(const std::string& message) {
  errors_.push_back(message);
  return static_cast<int>(errors_.size());
}

std::string Emitter::signature() const {
  std::string s;
  for (const Param& p : params_) {
    const graph::Value& v = g_.value(p.value);
    if (!s.empty()) s += ", ";
    s += fmt::format("{}{}* __restrict__ {}", p.is_output ? "" : "const ",
                     cuda_storage_type(v.dtype), param_names_.at(p.value));
  }
  if (!errors_.empty()) s += std::string(s.empty() ? "" : ", ") + "int* __restrict__ braze_err";
  return s;
}

namespace {

// CudaIndexCtx over the emitter, for one node's output at one coordinate, or at `lanes`
// coordinates that differ along `lane_dim` (Lowering::lanes; lane j's is
// Emitter::lane_expr(coords[lane_dim], j)).
class IndexCtx final : public CudaIndexCtx {
 public:
  IndexCtx(Emitter& e, const graph::Node& n, size_t out_index,
           const std::vector<std::string>& coords, size_t lane_dim = 0, int lanes = 1)
      : e_(e), n_(n), out_(out_index), coords_(coords), lane_dim_(lane_dim), lanes_(lanes) {}
  const graph::Node& node() const override { return n_; }
  size_t output_index() const override { return out_; }
  const Shape& out_shape() const override { return e_.graph().value(n_.outputs[out_]).shape; }
  const std::string& coord(size_t d) const override { return coords_.at(d); }
  const Shape& in_shape(size_t i) const override { return e_.graph().value(n_.inputs.at(i)).shape; }
  DType in_dtype(size_t i) const override { return e_.graph().value(n_.inputs.at(i)).dtype; }
  const Tensor* in_value(size_t i) const override {
    return n_.has_input(i) ? e_.graph().value(n_.inputs[i]).constant.get() : nullptr;
  }
  bool has_input(size_t i) const override { return n_.has_input(i); }
  std::string load(size_t i, const std::vector<std::string>& coords) override {
    BRAZE_CHECK(coords.size() == in_shape(i).size(),
                n_.describe() + ": index map gave the wrong rank");
    return e_.value_at(n_.inputs.at(i), coords);
  }
  std::string let(const std::string& type, const std::string& expr) override {
    return e_.let(type, expr);
  }
  std::string select(const std::string& cond, const std::string& type,
                     const std::function<std::string()>& then,
                     const std::function<std::string()>& otherwise) override {
    return select_n(
               cond, type, 1, [&] { return Values{then()}; }, [&] { return Values{otherwise()}; })
        .at(0);
  }
  Values select_n(const std::string& cond, const std::string& type, size_t n,
                  const std::function<Values()>& then,
                  const std::function<Values()>& otherwise) override {
    Values r;
    for (size_t j = 0; j < n; ++j) {
      r.push_back(e_.fresh("s"));
      e_.line(fmt::format("{} {};", type, r.back()));
    }
    auto branch = [&](const std::string& header, const std::function<Values()>& f) {
      e_.open(header);
      e_.push_scope();
      const Values v = f();
      BRAZE_CHECK(v.size() == n, n_.describe() + ": select_n's branch gave " +
                                     std::to_string(v.size()) + " values");
      for (size_t j = 0; j < n; ++j) e_.line(fmt::format("{} = {};", r[j], v[j]));
      e_.pop_scope();
      e_.close();
    };
    branch(fmt::format("if ({}) {{", cond), then);
    branch("else {", otherwise);
    return r;
  }
  std::string accumulate(
      const std::string& type, const std::string& init, int64_t count,
      const std::function<std::string(const std::string&, const std::string&)>& step) override {
    return accumulate_n(type, {init}, count,
                        [&](const Values& accs, const std::string& k) {
                          return Values{step(accs.at(0), k)};
                        })
        .at(0);
  }
  Values accumulate_n(
      const std::string& type, const Values& inits, int64_t count,
      const std::function<Values(const Values&, const std::string&)>& step) override {
    Values accs;
    for (const std::string& init : inits) {
      accs.push_back(e_.fresh("acc"));
      e_.line(fmt::format("{} {} = {};", type, accs.back(), init));
    }
    const std::string k = e_.fresh("k");
    e_.open(fmt::format("for (long long {0} = 0; {0} < {1}LL; ++{0}) {{", k, count));
    e_.push_scope();
    const Values next = step(accs, k);
    BRAZE_CHECK(next.size() == accs.size(), n_.describe() + ": accumulate_n's step gave " +
                                                std::to_string(next.size()) + " values");
    for (size_t j = 0; j < accs.size(); ++j) e_.line(fmt::format("{} = {};", accs[j], next[j]));
    e_.pop_scope();
    e_.close();
    return accs;
  }
  void check(const std::string& cond, const std::string& message,
             const std::string& fixup) override {
    int code = e_.add_check(fmt::format("{}: {}", n_.describe(), message));
    e_.line(fmt::format("if (!({})) {{ braze_fail(braze_err, {}); {} }}", cond, code, fixup));
  }
  int lanes() const override { return lanes_; }
  size_t lane_dim() const override { return lane_dim_; }
  std::string lane_coord(int j) const override {
    return Emitter::lane_expr(coords_.at(lane_dim_), j);
  }

 private:
  Emitter& e_;
  const graph::Node& n_;
  size_t out_;
  const std::vector<std::string>& coords_;
  size_t lane_dim_;
  int lanes_;
};

}  // namespace

namespace {
std::string memo_key(ValueId v, const std::vector<std::string>& coords) {
  std::string key = std::to_string(v);
  for (const std::string& c : coords) key += "|" + c;
  return key;
}
}  // namespace

void Emitter::memoize(ValueId v, const std::vector<std::string>& coords, const std::string& expr) {
  memo_.back()[memo_key(v, coords)] = expr;
}

std::string Emitter::value_at(ValueId v, const std::vector<std::string>& coords) {
  std::string key = memo_key(v, coords);
  for (auto it = memo_.rbegin(); it != memo_.rend(); ++it)
    if (auto f = it->find(key); f != it->end()) return f->second;
  std::string r = compute(v, coords);
  memo_.back()[key] = r;
  return r;
}

std::string Emitter::value_at_view(ValueId v, const Shape& view,
                                   const std::vector<std::string>& coords) {
  const graph::Value& val = g_.value(v);
  if (view == val.shape) return value_at(v, coords);
  std::string flat = cuda_linearize(coords, view);
  bool inside = val.producer != graph::kNoNode && in_group_(val.producer);
  if (!inside && !(val.constant && val.constant->numel() == 1)) {
    std::string key = std::to_string(v) + "@" + flat;
    for (auto it = memo_.rbegin(); it != memo_.rend(); ++it)
      if (auto f = it->find(key); f != it->end()) return f->second;
    std::string r =
        let(cuda_compute_type(val.dtype), fmt::format("braze_load({}, {})", input_param(v), flat));
    memo_.back()[key] = r;
    return r;
  }
  return value_at(v, cuda_unravel(let("long long", flat), val.shape));
}

std::string Emitter::compute(ValueId v, const std::vector<std::string>& coords) {
  if (intercept_)
    if (std::optional<std::string> bound = intercept_(v, coords)) return *bound;
  const graph::Value& val = g_.value(v);
  BRAZE_CHECK(val.has_shape && coords.size() == val.shape.size(),
              "value_at: rank mismatch for %" + val.name);
  if (val.producer == graph::kNoNode || !in_group_(val.producer)) return load_outside(v, coords);
  const graph::Node& n = g_.node(val.producer);
  size_t out_index = 0;
  while (n.outputs[out_index] != v) ++out_index;
  if (lowering(n).expr) {
    BRAZE_CHECK(out_index == 0, n.describe() + ": element-wise op with several outputs");
    return elementwise_at(n, v, coords);
  }
  if (std::optional<std::string> lane0 = lanes_at(n, out_index, coords)) return *lane0;
  if (lowering(n).index) {
    IndexCtx ctx(*this, n, out_index, coords);
    std::string e = lowering(n).index(ctx);
    return let(cuda_name(compute_type(val.dtype)), e);
  }
  throw InternalError(n.describe() +
                      " has no CUDA expression or index map but was put in a pointwise kernel");
}

std::optional<std::string> Emitter::lanes_at(const graph::Node& n, size_t out_index,
                                             const std::vector<std::string>& coords) {
  if (vec_ < 2 || !lowering(n).lanes) return std::nullopt;
  // Lane 0 along one dimension (whose extent the lanes divide, so that lane_var_, a multiple
  // of vec_ below it, leaves every lane inside), no other coordinate moving with the lanes.
  const Shape& shape = g_.value(n.outputs[out_index]).shape;
  size_t d = coords.size();
  for (size_t i = 0; i < coords.size(); ++i) {
    if (coords[i] == lane_var_ && d == coords.size() && shape[i] % vec_ == 0)
      d = i;
    else if (mentions(coords[i], lane_var_))
      return std::nullopt;
  }
  if (d == coords.size()) return std::nullopt;
  IndexCtx ctx(*this, n, out_index, coords, d, vec_);
  const std::vector<std::string> exprs = lowering(n).lanes(ctx);
  if (exprs.empty()) return std::nullopt;
  BRAZE_CHECK(exprs.size() == static_cast<size_t>(vec_),
              n.describe() + ": a lane-parallel index map gave the wrong number of lanes");
  const std::string type = cuda_name(compute_type(g_.value(n.outputs[out_index]).dtype));
  std::string mine;
  for (int k = 0; k < vec_; ++k) {
    std::vector<std::string> ck = coords;
    ck[d] = lane_expr(lane_var_, k);
    const std::string local = let(type, exprs[static_cast<size_t>(k)]);
    if (k == 0)
      mine = local;
    else
      memo_.back()[memo_key(n.outputs[out_index], ck)] = local;
  }
  lane_nodes_.insert(g_.value(n.outputs[out_index]).producer);
  return mine;
}

std::optional<int64_t> Emitter::lane_op(const std::string& c, int k, char op) const {
  const std::string head = "((" + lane_expr(lane_var_, k) + ") " + op + " ";
  if (c.size() <= head.size() + 3 || c.compare(0, head.size(), head) != 0 ||
      c.compare(c.size() - 3, 3, "LL)") != 0)
    return std::nullopt;
  const std::string digits = c.substr(head.size(), c.size() - 3 - head.size());
  if (digits.empty() || digits.size() > 15 ||
      !std::all_of(digits.begin(), digits.end(), [](char d) { return d >= '0' && d <= '9'; }))
    return std::nullopt;
  const int64_t m = std::stoll(digits);
  return m > 0 ? std::optional<int64_t>(m) : std::nullopt;
}

std::string Emitter::load_outside(ValueId v, const std::vector<std::string>& coords) {
  const graph::Value& val = g_.value(v);
  const ComputeType type = compute_type(val.dtype);
  // Scalar constants become literals (exactly representable ones only).
  if (val.constant && val.constant->numel() == 1) {
    const Tensor& t = *val.constant;
    if (is_float(t.dtype()) || t.dtype() == DType::Bool ||
        std::fabs(static_cast<double>(t.get_i64(0))) < 9e15)
      return cuda_literal(type,
                          is_float(t.dtype()) ? t.get_f64(0) : static_cast<double>(t.get_i64(0)));
  }
  std::string p = input_param(v);
  if (!preload_var_.empty()) return preload(v, coords, p);
  if (vec_ > 1 && !coords.empty()) {
    // The lane variable is a multiple of vec_: (lane k) / M, M a multiple of vec_, is the
    // same for every lane (one load at lane 0's coordinates, memoised).
    std::vector<std::string> same = coords;
    for (std::string& c : same)
      for (int k = 1; k < vec_; ++k)
        if (std::optional<int64_t> m = lane_op(c, k, '/'); m && *m % vec_ == 0)
          c = fmt::format("(({}) / {}LL)", lane_var_, *m);
    if (same != coords) return value_at(v, same);
  }
  if (vec_ > 1 && !coords.empty() && val.shape.back() % vec_ == 0) {
    int lane = -1;
    std::string inner0 = lane_var_;  // the innermost coordinate at lane 0
    for (int k = 0; k < vec_; ++k) {
      if (coords.back() == lane_expr(lane_var_, k)) lane = k;
      // (lane k) % M, M a multiple of vec_: lane k of (lane 0) % M.
      if (std::optional<int64_t> m = lane_op(coords.back(), k, '%'); m && *m % vec_ == 0) {
        lane = k;
        inner0 = fmt::format("(({}) % {}LL)", lane_var_, *m);
      }
    }
    bool others_free = std::none_of(coords.begin(), coords.end() - 1, [&](const std::string& c) {
      return c.find(lane_var_) != std::string::npos;
    });
    if (lane >= 0 && others_free) {
      // One vector load for all lanes; each lane's value is memoised under its coordinates.
      std::vector<std::string> lane0 = coords;
      lane0.back() = inner0;
      std::string vec = fresh("w");
      line(fmt::format("const braze_vec<{}, {}> {} = braze_vload<{}>({}, {});",
                       cuda_storage_type(val.dtype), vec_, vec, vec_, p,
                       cuda_linearize(lane0, val.shape)));
      // Lanes stay in the loaded vector (packed, for half types) and convert where used,
      // so a row held in registers costs half the registers in float16.
      std::string mine;
      for (int k = 0; k < vec_; ++k) {
        std::vector<std::string> ck = coords;
        ck.back() = inner0 == lane_var_ ? lane_expr(lane_var_, k)
                                        : fmt::format("(({}) % {}LL)", lane_expr(lane_var_, k),
                                                      *lane_op(inner0, 0, '%'));
        std::string lk = fmt::format("braze_val({}.v[{}])", vec, k);
        if (k == lane) mine = lk;
        memo_.back()[memo_key(v, ck)] = lk;
      }
      return mine;
    }
  }
  return let(cuda_name(type),
             fmt::format("braze_load({}, {})", p, cuda_linearize(coords, val.shape)));
}

std::string Emitter::elementwise_at(const graph::Node& n, ValueId v,
                                    const std::vector<std::string>& coords) {
  const graph::Value& val = g_.value(v);
  CudaExprCtx ctx{n, ComputeType::Float, {}, {}, val.dtype};
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] == kNoValue) {
      ctx.args.push_back("");
      ctx.arg_dtypes.push_back(DType::Float32);
      continue;
    }
    const graph::Value& in = g_.value(n.inputs[i]);
    std::string arg = value_at(n.inputs[i], broadcast_coords(coords, val.shape, in.shape));
    // A 16-bit value computed in this kernel is a float: such ops see it rounded to its type
    // (OpDef::rounds_half_inputs); one loaded from memory already is.
    if (n.op->rounds_half_inputs && is_half(in.dtype) && in.producer != graph::kNoNode &&
        in_group_(in.producer))
      arg = let("float", fmt::format("braze_val(braze_pack(braze_tag<{}>{{}}, {}))",
                                     cuda_storage_type(in.dtype), arg));
    ctx.args.push_back(arg);
    ctx.arg_dtypes.push_back(in.dtype);
  }
  ctx.type = compute_type(ctx.arg_dtypes.at(0));
  return let(cuda_name(compute_type(val.dtype)), lowering(n).expr(ctx));
}

std::string Emitter::preload(ValueId v, const std::vector<std::string>& coords,
                             const std::string& p) {
  const graph::Value& val = g_.value(v);
  const std::string zero = cuda_literal(compute_type(val.dtype), 0);
  if (vec_ < 2 || coords.empty() || val.shape.back() % vec_ != 0 || !preload_stmt_) return zero;
  int lane = -1;
  for (int k = 0; k < vec_; ++k)
    if (coords.back() == lane_expr(lane_var_, k)) lane = k;
  const bool others_free =
      std::none_of(coords.begin(), coords.end() - 1,
                   [&](const std::string& c) { return c.find(lane_var_) != std::string::npos; });
  const bool moves = std::any_of(coords.begin(), coords.end(),
                                 [&](const std::string& c) { return mentions(c, preload_var_); });
  if (lane < 0 || !others_free || !moves) return zero;
  // As compute()'s vector load: lane 0's coordinates, every lane's recorded (and memoised here
  // as 0, so that the other lanes do not load again).
  std::vector<std::string> lane0 = coords;
  lane0.back() = lane_var_;
  Preload pre{v,
              cuda_storage_type(val.dtype),
              val.dtype,
              vec_,
              vec_ * static_cast<int>(dtype_size(val.dtype)),
              {}};
  for (int k = 0; k < vec_; ++k) {
    std::vector<std::string> ck = coords;
    ck.back() = lane_expr(lane_var_, k);
    memo_.back()[memo_key(v, ck)] = zero;
    pre.lane_coords.push_back(std::move(ck));
  }
  line(preload_stmt_(v, vec_, pre.bytes,
                     fmt::format("({} + {})", p, cuda_linearize(lane0, val.shape))));
  preloads_.push_back(std::move(pre));
  return zero;
}

Kernel kernel_record(const Emitter& e, fusion::GroupKind kind, const fusion::Group& group,
                     const Tunables& tunables) {
  Kernel k;
  k.kind = kind;
  k.nodes = group.nodes;
  k.params = e.params();
  k.error_messages = e.errors();
  k.has_error_flag = !k.error_messages.empty();
  k.tunables = tunables;
  return k;
}

}  // namespace braze::codegen
