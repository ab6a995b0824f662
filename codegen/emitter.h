// The expression emitter at the core of every schedule: it writes the CUDA statements that
// compute a value at a coordinate, inlining the group's element-wise ops (the registry's
// CudaExprFn) and injective ops (CudaIndexFn) and loading only the group's inputs. A value
// asked for twice at the same coordinate is computed once (a local per value and
// coordinate, scoped to the branch it was computed in).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "graph/ir.h"

namespace braze::codegen {

class Emitter {
 public:
  // in_group(n): node n is computed inside this kernel; other values are loaded.
  Emitter(const graph::Graph& g, std::function<bool(graph::NodeId)> in_group);

  // An expression (a local or a literal) of value v at `coords` (one `long long`
  // expression per dim of v), in v's compute type.
  std::string value_at(graph::ValueId v, const std::vector<std::string>& coords);

  // Schedules bind some values to expressions they compute themselves (a reduction's
  // result for the current row, a GEMM's accumulator): the interceptor is asked first and
  // its answer, when it gives one, is v's value at `coords`.
  using Intercept = std::function<std::optional<std::string>(
      graph::ValueId v, const std::vector<std::string>& coords)>;
  void set_intercept(Intercept f) { intercept_ = std::move(f); }
  const Intercept& intercept() const { return intercept_; }

  // Binds v at `coords` to `expr` for the current scope, as if value_at had computed it
  // (a schedule that loaded the value itself: a row staged in shared memory).
  void memoize(graph::ValueId v, const std::vector<std::string>& coords, const std::string& expr);

  // Value v at `coords` of `view`, a shape with v's element count it is reinterpreted as.
  std::string value_at_view(graph::ValueId v, const Shape& view,
                            const std::vector<std::string>& coords);

  // Vector lanes: a schedule that computes `vec` consecutive elements of its output per
  // thread names the lane-0 innermost output coordinate `var`; lane k's is "(var + k)".
  // A load of a group input whose innermost coordinate is a lane and whose other
  // coordinates do not involve it becomes one vector load shared by the lanes.
  void set_lanes(const std::string& var, int vec) {
    lane_var_ = var;
    vec_ = vec;
  }
  static std::string lane_expr(const std::string& var, int k) {
    return k == 0 ? var : "(" + var + " + " + std::to_string(k) + "LL)";
  }

  // Preload mode (`row_var` not empty), for schedules that issue an epilogue's loads early
  // (the wgmma schedule copies them into shared memory as a tile begins): a vector load of a
  // group input whose coordinates mention `row_var` (a residual's; not a bias's) is emitted
  // as the schedule's statement `stmt(…)` instead, and recorded with each lane's coordinates
  // (preloads()); every load reads as 0, and the computation around the loads is dead code.
  // A later pass at the same coordinates memoises the lanes from where the schedule put them
  // (Emitter::memoize) instead of loading.
  struct Preload {
    graph::ValueId value;
    std::string storage;  // the vector's element type
    DType dtype;
    int vec;
    int bytes;  // the vector's
    std::vector<std::vector<std::string>> lane_coords;
  };
  // `stmt(v, vec, bytes, address)`: the statement that preloads v's vector of `vec` elements,
  // `bytes` in all, at `address` (a pointer expression).
  using PreloadStmt = std::function<std::string(graph::ValueId, int, int, const std::string&)>;
  void set_preload(const std::string& row_var, PreloadStmt stmt = {}) {
    preload_var_ = row_var;
    preload_stmt_ = std::move(stmt);
    preloads_.clear();
  }
  const std::vector<Preload>& preloads() const { return preloads_; }
  // The body's length now, and back to it (lines that turned out not to be needed).
  size_t mark() const { return body_.size(); }
  void rewind(size_t mark) { body_.resize(mark); }

  std::string fresh(const std::string& prefix);
  std::string let(const std::string& type, const std::string& expr);
  void line(const std::string& s);
  void open(const std::string& header);       // a line ending in "{", indenting what follows
  void close(const std::string& after = "");  // "}" and `after` (";" ending a lambda)
  void push_scope();
  void pop_scope();
  void clear_memo();

  // Local names c0, c1 … of the coordinates of flat index `flat` in `shape`.
  std::vector<std::string> unravel(const std::string& flat, const Shape& shape);
  // The same with 32-bit unsigned division, for index spaces under 2^31 elements.
  std::vector<std::string> unravel32(const std::string& flat, const Shape& shape);

  // Kernel parameters: pointer names, registered on first use.
  std::string input_param(graph::ValueId v);
  std::string output_param(graph::ValueId v);
  const std::vector<Param>& params() const { return params_; }
  // A run-time check; returns the code braze_fail records.
  int add_check(const std::string& message);
  const std::vector<std::string>& errors() const { return errors_; }

  // The parameter list of the kernel signature ("const float* __restrict__ in0, …").
  std::string signature() const;
  std::string body() const { return body_; }
  // The nodes computed in their lane-parallel form (Lowering::lanes) somewhere in the body.
  const std::set<graph::NodeId>& lane_nodes() const { return lane_nodes_; }
  const graph::Graph& graph() const { return g_; }

 private:
  std::string compute(graph::ValueId v, const std::vector<std::string>& coords);
  // A value from outside the kernel: a literal, a load (vectorised across lanes where it can
  // be), or a read of the preloaded row.
  std::string load_outside(graph::ValueId v, const std::vector<std::string>& coords);
  // M where coordinate c is "((lane k) op M)" (op '/' or '%'), else nullopt.
  std::optional<int64_t> lane_op(const std::string& c, int k, char op) const;
  // Element-wise node n's output v at coords, from its operands there.
  std::string elementwise_at(const graph::Node& n, graph::ValueId v,
                             const std::vector<std::string>& coords);
  std::string preload(graph::ValueId v, const std::vector<std::string>& coords,
                      const std::string& param);
  // Node n's output out_index at lane 0 of the vector lanes, computed with every lane's in
  // one go (its Lowering::lanes) and the others memoised, where its coordinates are lanes
  // along one dimension and its lowering gives that form; nullopt where not.
  std::optional<std::string> lanes_at(const graph::Node& n, size_t out_index,
                                      const std::vector<std::string>& coords);

  const graph::Graph& g_;
  std::function<bool(graph::NodeId)> in_group_;
  Intercept intercept_;
  std::string lane_var_;
  int vec_ = 1;
  std::string preload_var_;
  PreloadStmt preload_stmt_;
  std::vector<Preload> preloads_;
  std::string body_;
  int indent_ = 1;
  int counter_ = 0;
  std::vector<std::map<std::string, std::string>> memo_{1};
  std::vector<Param> params_;
  std::map<graph::ValueId, std::string> param_names_;
  std::vector<std::string> errors_;
  std::set<graph::NodeId> lane_nodes_;
};

// Maps coordinates in `out` to those of an operand of shape `in` under numpy broadcasting
// (right-aligned; size-1 dims read index 0).
std::vector<std::string> broadcast_coords(const std::vector<std::string>& coords, const Shape& out,
                                          const Shape& in);

// A kernel record for `group` of `kind` with what the emitter gathered (parameters in
// signature order, run-time check messages) and the schedule's `tunables`; the schedule
// fills in launch shape and source.
Kernel kernel_record(const Emitter& e, fusion::GroupKind kind, const fusion::Group& group,
                     const Tunables& tunables);

}  // namespace braze::codegen
