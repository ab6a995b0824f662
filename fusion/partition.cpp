// The fusion partitioner.
//
// Analysis first, rewrite second: this file only decides which nodes share a kernel. It
// grows groups around anchors, in phases, each merge checked for legality:
//
//  0. Attention groups (when the schedules' capabilities are known): softmax(Q Kᵀ …) V as
//     the exporters write it (fusion/attention.h), with the layout ops in front of Q, K and V
//     and after the output, one flash-attention kernel, so the scores never leave it. A match
//     the schedule refuses (float32, a head dim it does not take) stays as the products and
//     the softmax of the phases below, and inspect says why.
//
//  1. GEMM groups. A MatMul/Gemm absorbs cheap operand producers — layout ops (Transpose,
//     Reshape, Expand, Slice …, read as strided views) and Casts — as far as the schedule
//     that will run it takes them (Capabilities: a tensor-core GEMM reads layout chains in
//     place and refuses computed operands, which stay in their producers' kernels), and an
//     epilogue: the chain of single-consumer element-wise ops (bias, activation, residual,
//     scale, cast) and layout ops (Reshape, Transpose) after it, so the output is written
//     once, in the layout its consumer wants.
//
//        A ──Transpose──┐
//                       MatMul ─ Add(bias) ─ Reshape ─ Transpose ─▶ [B,H,S,D]
//        B ─────────────┘
//
//  2. Reduction groups. A reduction or normalisation (anything with a row program) defines
//     a row space: its input's shape X and reduced axes. It absorbs producers and consumers
//     whose values live in that space — per element (shape X) or per row (X with the
//     reduced axes gone or 1) — including further reductions over the same rows, so
//     softmax, layer norm and RMS norm written out op by op become one kernel:
//
//        x ─┬─ ReduceMax ─┐
//           └──────────── Sub ─ Exp ─┬─ ReduceSum ─┐
//                                    └──────────── Div ─▶ y        (one kernel, 2 passes)
//
//  3. Pointwise groups. Remaining element-wise and injective ops merge with their
//     pointwise producers, so intermediate values stay in registers (a value other kernels
//     also read is written once, by this kernel); injective ops become index arithmetic in
//     the loads.
//
// The hard case is a diamond through another group:
//
//        p ──────────────── c          merging p into c's group would make the group
//        └── MatMul ── q ───┘          feed MatMul and consume its result: a cycle.
//
// Every merge is kept only if the group graph stays acyclic — no path between the two groups
// through a third (a search that stays near them: path_through_others) — and refused merges
// keep their reason for `braze inspect`.
#include "fusion/partition.h"

#include <braze/error.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "fusion/attention.h"
#include "graph/column_pairs.h"
#include "graph/registry.h"

namespace braze::fusion {

using graph::kNoNode;
using graph::kNoValue;
using graph::Node;
using graph::NodeId;
using graph::non_ones;
using graph::ValueId;

namespace {

bool is_gemm(const Node& n) { return n.op->kind == graph::FusionKind::OutEWiseFusable; }

struct RowSpace {
  Shape x;
  std::vector<int64_t> axes;
  Shape kept;
  int64_t rows = 0;
  bool operator==(const RowSpace& o) const { return x == o.x && axes == o.axes; }
};

class Partitioner {
 public:
  Partitioner(const graph::Graph& g, const Lowerings& lower, const PartitionOptions& o,
              const Capabilities* caps)
      : g_(g), lower_(lower), opts_(o), caps_(caps), users_(g.users()) {
    order_ = g.topo_order();
    group_of_.assign(g.num_nodes(), -1);
    pos_.assign(g.num_nodes(), 0);
    for (size_t i = 0; i < order_.size(); ++i) {
      const NodeId id = order_[i];
      pos_[id] = i;
      group_of_[id] = static_cast<int>(groups_.size());
      Grp grp;
      grp.kind = kind_of(g.node(id));
      grp.nodes = {id};
      grp.first = grp.last = i;
      groups_.push_back(grp);
    }
    mark_.assign(groups_.size(), 0);
  }

  bool is_elementwise(const Node& n) const { return lower_.pointwise(n); }
  bool is_layout(const Node& n) const { return lower_.forward_map(n); }
  // Cheap per-element ops: element-wise, or injective index maps (no loops inside).
  bool is_light(const Node& n) const {
    return is_elementwise(n) || (lower_.index_map(n) && n.op->kind <= graph::FusionKind::Injective);
  }

  Plan run() {
    if (caps_)
      for (NodeId id : order_)
        if (g_.node(id).op_type() == "Softmax") grow_attention(id);
    for (NodeId id : order_)
      if (is_gemm(g_.node(id)) && groups_[group_of_[id]].kind != GroupKind::Attention)
        grow_gemm(id);
    for (NodeId id : order_)
      if (lower_.rows(g_.node(id)) && single(id)) grow_reduction(id);
    // Pointwise merges enable one another (a value's consumers join one group over several
    // steps), so repeat until nothing changes.
    for (size_t before = SIZE_MAX, live = alive_groups(); live != before;
         before = live, live = alive_groups())
      for (NodeId id : order_)
        if (is_light(g_.node(id)) && groups_[group_of_[id]].kind == GroupKind::Pointwise)
          grow_pointwise(id);
    for (NodeId id : order_)
      if (is_loop_op(g_.node(id))) pull_layouts_into_loop_op(id);
    return finish();
  }

 private:
  struct Grp {
    GroupKind kind;
    std::set<NodeId> nodes;
    bool alive = true;
    std::optional<RowSpace> rows;
    bool anchored = false;       // a GEMM or reduction group: pointwise groups do not absorb it
    size_t first = 0, last = 0;  // the least and greatest topological position of its nodes
  };

  size_t alive_groups() const {
    return static_cast<size_t>(
        std::count_if(groups_.begin(), groups_.end(), [](const Grp& g) { return g.alive; }));
  }

  bool single(NodeId id) const {
    return groups_[group_of_[id]].nodes.size() == 1 && !groups_[group_of_[id]].anchored;
  }
  bool free_pointwise(NodeId id) const {
    const Grp& gr = groups_[group_of_[id]];
    return gr.kind == GroupKind::Pointwise && !gr.anchored && gr.nodes.size() == 1;
  }

  void refuse(NodeId producer, NodeId consumer, std::string why) {
    for (const RefusedMerge& r : refused_)
      if (r.producer == producer && r.consumer == consumer && r.reason == why) return;
    refused_.push_back({producer, consumer, std::move(why)});
  }

  // True when a path of the group graph leads from group `from` to group `to` through at least
  // one other group. Depth-first from `from`'s other successors; a group whose first node comes
  // after `to`'s last cannot reach `to` (every edge goes forward in the topological order), so
  // the search stays near the two groups.
  bool path_through_others(int from, int to) const {
    ++stamp_;
    std::vector<int> stack = {from};
    mark_[from] = stamp_;
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      for (NodeId id : groups_[x].nodes)
        for (ValueId v : g_.node(id).outputs) {
          if (v == kNoValue) continue;
          for (NodeId u : users_[v]) {
            const int y = group_of_[u];
            if (y == x || mark_[y] == stamp_ || (x == from && y == to)) continue;
            if (y == to) return true;
            mark_[y] = stamp_;
            if (groups_[y].first < groups_[to].last) stack.push_back(y);
          }
        }
    }
    return false;
  }

  // True when merging group b into group a keeps the group graph acyclic: the graph is acyclic
  // now, so a cycle after the merge is a path between a and b through another group.
  bool acyclic_after_merge(int a, int b) const {
    return !path_through_others(a, b) && !path_through_others(b, a);
  }

  // Merges group b into a if legal; records the refusal otherwise.
  bool merge(int a, int b, NodeId producer, NodeId consumer, size_t max_nodes) {
    if (a == b) return true;
    if (groups_[a].nodes.size() + groups_[b].nodes.size() > max_nodes) {
      refuse(
          producer, consumer,
          fmt::format("the group would exceed {} nodes, more than its schedule holds in registers",
                      max_nodes));
      return false;
    }
    if (!acyclic_after_merge(a, b)) {
      refuse(producer, consumer,
             "merging would create a cycle between kernels (a path leaves the group and returns)");
      return false;
    }
    for (NodeId id : groups_[b].nodes) group_of_[id] = a;
    groups_[a].nodes.insert(groups_[b].nodes.begin(), groups_[b].nodes.end());
    groups_[a].first = std::min(groups_[a].first, groups_[b].first);
    groups_[a].last = std::max(groups_[a].last, groups_[b].last);
    groups_[b].nodes.clear();
    groups_[b].alive = false;
    return true;
  }

  bool is_output(ValueId v) const { return g_.is_graph_output(v); }

  // ---- phase 1: GEMM -------------------------------------------------------------------
  // True when layout op `c` begins a chain of single-consumer layout ops that ends in an
  // operand of another product, which reads the whole chain in place as a strided view on a
  // tensor-core schedule (the same test its prologue makes): a GEMM before `c` then writes
  // rows at full speed instead of storing the consumer's layout from its fragments (BERT's
  // K projection writing Kᵀ, [B,S,H,D] -> [B,H,D,S], took 3x the time of the same product
  // writing rows).
  bool viewed_by_next_product(NodeId c) const {
    if (!caps_) return false;
    std::vector<NodeId> chain;
    for (NodeId n = c; chain.size() < opts_.max_gemm_prologue;) {
      const Node& nn = g_.node(n);
      if (!free_pointwise(n) || !nn.op->layout || nn.outputs.size() != 1) return false;
      chain.push_back(n);
      ValueId v = nn.outputs[0];
      if (users_[v].size() != 1 || is_output(v)) return false;
      NodeId u = users_[v][0];
      const Node& un = g_.node(u);
      if (!is_gemm(un)) {
        n = u;
        continue;
      }
      if (groups_[group_of_[u]].nodes.size() != 1) return false;  // grown already
      for (int i = 0; i < 2 && i < static_cast<int>(un.inputs.size()); ++i) {
        if (un.inputs[i] != v) continue;
        std::vector<NodeId> nodes = chain;
        nodes.push_back(u);
        return caps_->gemm_reads_view(g_, nodes, u, i);
      }
      return false;  // Gemm's C, say: an epilogue input
    }
    return false;
  }

  // A loop op computed per output element (Conv, pooling: not light, an index map that reads
  // its inputs at each tap).
  bool is_loop_op(const Node& n) const { return !is_light(n) && lower_.index_map(n); }

  // True when layout op `c` is read by a loop op alone, which then reads it in place
  // (pull_layouts_into_loop_op), or by a reduction alone, which absorbs it as a producer of
  // its row space: a channels-last value goes channels-first into a pooling, depthwise
  // convolution or mean kernel through the index arithmetic of its loads, and the GEMM before
  // `c` writes rows instead of storing the transposed layout from its fragments.
  bool read_by_loop_op_or_reduction(NodeId c) const {
    const Node& cn = g_.node(c);
    if (!cn.op->layout || cn.outputs.size() != 1) return false;
    const ValueId v = cn.outputs[0];
    if (users_[v].size() != 1 || is_output(v)) return false;
    const NodeId u = users_[v][0];
    return (is_loop_op(g_.node(u)) || lower_.rows(g_.node(u))) && !groups_[group_of_[u]].anchored;
  }

  // Whether layout op n reads a loop op with a lane-parallel form (through element-wise ops of
  // one computed input: its activation), each value on the way read by nothing else: the loop op's
  // kernel then writes n's layout (a channels-last plan's depthwise convolution or pooling,
  // computing channels at a time, writes them channels-last) where a GEMM's prologue would read the
  // loop op's output through n (strided loads).
  bool writes_layout_of(const Node& n) const {
    ValueId in = n.inputs.empty() ? kNoValue : n.inputs[0];
    for (size_t depth = 0; depth < opts_.max_gemm_prologue; ++depth) {
      if (in == kNoValue || users_[in].size() != 1 || is_output(in)) return false;
      const NodeId p = g_.value(in).producer;
      if (p == kNoNode) return false;
      const Node& pn = g_.node(p);
      if (is_loop_op(pn)) return lower_.lanes(pn);
      if (!is_elementwise(pn)) return false;
      // Through an activation (its one computed input), not a join of two values.
      in = kNoValue;
      for (ValueId u : pn.inputs)
        if (u != kNoValue && !g_.value(u).constant) {
          if (in != kNoValue) return false;
          in = u;
        }
    }
    return false;
  }

  void grow_gemm(NodeId mm) {
    int ga = group_of_[mm];
    groups_[ga].anchored = true;
    // B first: whether the schedule reads A's chain can depend on B's layout (tf32's wgmma
    // reads k-contiguous B only, and a k-major weight is a Transpose in front of B).
    for (size_t i : {size_t{1}, size_t{0}})
      if (i < g_.node(mm).inputs.size()) grow_gemm_operand(ga, mm, i);
    const GemmEpilogue e = plan_gemm_epilogue(ga, mm);
    for (NodeId c : in_order(e.best))
      if (!merge(ga, group_of_[c], mm, c, opts_.max_gemm_epilogue + 8)) break;
    for (NodeId c : in_order(e.tried))
      if (!e.best.count(c)) refuse(mm, c, "the GEMM epilogue would write more than one result");
  }

  // An index map that is no strided layout (Im2Col's windows) in front of operand i of mm
  // (group ga), which the schedule that will run the product reads in place on tensor cores
  // (an implicit-GEMM convolution on sm_90a).
  // Where not, *why says what keeps the tensor-core schedule off it (empty when none would run
  // the product, or it is no index map).
  bool read_in_place(int ga, NodeId mm, size_t i, NodeId p, std::string* why) const {
    why->clear();
    if (!caps_ || !g_.node(p).op->index_map) return false;
    std::vector<NodeId> nodes(groups_[ga].nodes.begin(), groups_[ga].nodes.end());
    nodes.push_back(p);
    if (caps_->gemm_reads_view(g_, nodes, mm, static_cast<int>(i))) return true;
    *why = caps_->gemm_operand(g_, nodes, mm, static_cast<int>(i));
    return false;
  }

  // Operand prologue: layout ops and casts with no other consumer, as long as the schedule
  // that will run the product reads the operand through them at full speed (caps_: a
  // tensor-core schedule reads layout chains as strided views, the wgmma one a convolution's
  // windows, and a Cast not at all).
  void grow_gemm_operand(int ga, NodeId mm, size_t i) {
    ValueId v = g_.node(mm).inputs[i];
    for (size_t depth = 0; depth < opts_.max_gemm_prologue && v != kNoValue; ++depth) {
      NodeId p = g_.value(v).producer;
      if (p == kNoNode || !free_pointwise(p)) break;
      const Node& pn = g_.node(p);
      if (pn.op->layout && writes_layout_of(pn)) {
        refuse(p, mm,
               "the loop op before it computes a vector of channels at a time and writes this "
               "layout itself");
        break;
      }
      if (!pn.op->layout && pn.op_type() != "Cast") {
        std::string why;
        if (!read_in_place(ga, mm, i, p, &why)) {
          if (!why.empty()) refuse(p, mm, why);
          break;
        }
      }
      if (users_[v].size() != 1 || is_output(v)) {
        refuse(
            p, mm,
            fmt::format("%{} has other consumers, so it is written out anyway", g_.value(v).name));
        break;
      }
      if (caps_) {
        std::vector<NodeId> nodes(groups_[ga].nodes.begin(), groups_[ga].nodes.end());
        nodes.push_back(p);
        std::string why = caps_->gemm_operand(g_, nodes, mm, static_cast<int>(i));
        if (!why.empty()) {
          refuse(p, mm, why);
          break;
        }
      }
      if (!merge(ga, group_of_[p], p, mm, opts_.max_gemm_epilogue)) break;
      v = pn.inputs[0];
    }
  }

  // How many of `vals` are read outside `nodes` or are graph outputs.
  size_t escapes(const std::set<ValueId>& vals, const std::set<NodeId>& nodes) const {
    size_t n = 0;
    for (ValueId v : vals)
      if (is_output(v) || std::any_of(users_[v].begin(), users_[v].end(),
                                      [&](NodeId u) { return !nodes.count(u); }))
        ++n;
    return n;
  }

  // The epilogue as it grows: the nodes taken, the values they make (`region`, over the
  // shape `space`), and the largest set of them after which one value leaves the group.
  struct GemmEpilogue {
    std::set<NodeId> tried, best;
    std::set<ValueId> region;
    Shape space;
    // Only layout ops keeping the product's columns and element order since it (a column
    // pair may follow: graph::keeps_columns), and whether the pair has been taken.
    bool rows_kept = true, paired = false;
    // The region's space as a view of the product's elements (through the layout ops taken),
    // while the product's columns are whole: a SwapPairs of a region value reads its partner
    // from each lane's other accumulator of the pair where the view keeps the pairs.
    std::optional<graph::Layout> view;
  };

  // Whether SwapPairs node c can join e: of a region value whose view keeps the product's
  // pairs, after a plain product (no Gemm alpha or C: the partner's sum is the raw accumulator).
  bool swap_pairs_takes(const GemmEpilogue& e, NodeId mm, const Node& c) const {
    const Node& p = g_.node(mm);
    if (p.op_type() == "Gemm" &&
        (p.attr_float("alpha") != 1 || (p.has_input(2) && p.attr_float("beta") != 0)))
      return false;
    return e.region.count(c.inputs[0]) && e.view && g_.value(c.outputs[0]).shape == e.space &&
           graph::keeps_pairs(*e.view, g_.value(p.outputs[0]).shape.back());
  }

  // A column pair (graph/column_pairs.h) read from the product's columns: its two Slices join
  // e, the region becomes their outputs. The GEMM schedules read the pair from each lane's two
  // adjacent accumulators (codegen/gemm.cpp), so only after Reshapes that keep the columns.
  bool take_column_pair(GemmEpilogue& e, NodeId mm) {
    if (e.paired || !e.rows_kept || e.region.size() != 1) return false;
    const ValueId v = *e.region.begin();
    const std::optional<graph::ColumnPair> cp = graph::column_pair_of(g_, v, users_[v]);
    if (!cp || g_.value(v).shape.back() != g_.value(g_.node(mm).outputs[0]).shape.back())
      return false;
    const Node& p = g_.node(mm);  // a Gemm's C is added at the product's columns: not paired
    if (p.op_type() == "Gemm" && p.has_input(2) && p.attr_float("beta") != 0) return false;
    for (NodeId s : {cp->even, cp->odd})
      if (groups_[group_of_[s]].nodes.size() != 1) return false;
    e.tried.insert({cp->even, cp->odd});
    e.region = {g_.node(cp->even).outputs[0], g_.node(cp->odd).outputs[0]};
    e.space = g_.value(g_.node(cp->even).outputs[0]).shape;
    e.paired = true;
    e.view.reset();
    return true;
  }

  // Whether consumer c of region value v can join epilogue e of product mm (group ga):
  // an element-wise op over the product's shape whose other inputs come from outside the
  // group, or a layout op that closes the element-wise part (v all that leaves it).
  bool epilogue_takes(int ga, NodeId mm, const GemmEpilogue& e, ValueId v, NodeId c) {
    const Node& cn = g_.node(c);
    const graph::Value& out = g_.value(cn.outputs[0]);
    if (graph::is_swap_pairs(cn)) return swap_pairs_takes(e, mm, cn);
    if (is_elementwise(cn))
      return out.shape == e.space &&
             std::all_of(cn.inputs.begin(), cn.inputs.end(), [&](ValueId u) {
               if (u == kNoValue || e.region.count(u)) return true;
               NodeId p = g_.value(u).producer;
               return p == kNoNode || group_of_[p] != ga;  // external, not the prologue
             });
    std::set<NodeId> after = e.tried;
    after.insert(mm);
    after.insert(c);
    const bool ok = is_layout(cn) && cn.inputs[0] == v && escapes(e.region, after) <= 1 &&
                    std::none_of(e.region.begin(), e.region.end(),
                                 [&](ValueId r) { return r != v && escapes({r}, after); });
    if (ok && viewed_by_next_product(c)) {
      refuse(mm, c, "the product after it reads the layout in place, so this GEMM writes rows");
      return false;
    }
    if (ok && read_by_loop_op_or_reduction(c)) {
      refuse(mm, c,
             "the loop op or reduction after it reads the layout in place, so this GEMM writes "
             "rows");
      return false;
    }
    return ok;
  }

  // Side producers of epilogue op c: element-wise and layout ops computing another of its
  // inputs from values outside the group, read by c alone (a residual that is itself a sum or
  // a cast, a rotary embedding's signed sine table): computed in the epilogue at each element
  // rather than written whole by a kernel of their own. Up to six deep.
  void take_side_producers(int ga, GemmEpilogue& e, NodeId c, size_t depth) {
    if (depth >= 6) return;
    for (ValueId u : g_.node(c).inputs) {
      if (u == kNoValue || e.region.count(u) || is_output(u) || users_[u].size() != 1) continue;
      const NodeId p = g_.value(u).producer;
      if (p == kNoNode || e.tried.count(p) || !free_pointwise(p) ||
          !(is_elementwise(g_.node(p)) || is_layout(g_.node(p))) || g_.node(p).outputs.size() != 1)
        continue;
      const Node& pn = g_.node(p);
      const bool outside = std::all_of(pn.inputs.begin(), pn.inputs.end(), [&](ValueId w) {
        if (w == kNoValue) return true;
        const NodeId q = g_.value(w).producer;
        return !e.region.count(w) && (q == kNoNode || group_of_[q] != ga);
      });
      if (!outside) continue;
      e.tried.insert(p);
      take_side_producers(ga, e, p, depth + 1);
    }
  }

  // Epilogue: element-wise ops over the product's shape (a DAG: GELU written out reads its
  // input twice), then layout ops, as long as one value leaves the group. Simulated on a node
  // set, which grow_gemm then merges node by node.
  GemmEpilogue plan_gemm_epilogue(int ga, NodeId mm) {
    GemmEpilogue e;
    e.region = {g_.node(mm).outputs[0]};
    e.space = g_.value(g_.node(mm).outputs[0]).shape;
    const Node& p = g_.node(mm);
    if (e.space.size() >= 2 && g_.value(p.inputs[0]).shape.size() >= 2 &&
        g_.value(p.inputs[1]).shape.size() >= 2)
      e.view = graph::Layout::contiguous(e.space);
    for (size_t steps = 0; steps < opts_.max_gemm_epilogue; ++steps) {
      if (take_column_pair(e, mm)) continue;
      NodeId pick = kNoNode;
      for (ValueId v : e.region) {
        if (g_.value(v).shape != e.space) continue;
        for (NodeId c : users_[v]) {
          if (e.tried.count(c) || !free_pointwise(c) || g_.node(c).outputs.size() != 1) continue;
          if (epilogue_takes(ga, mm, e, v, c) && (pick == kNoNode || c < pick)) pick = c;
        }
      }
      if (pick == kNoNode) break;
      e.tried.insert(pick);
      const Node& pn = g_.node(pick);
      if (is_elementwise(pn)) take_side_producers(ga, e, pick, 0);
      if (!is_elementwise(pn) && !graph::is_swap_pairs(pn)) {
        if (e.view) e.view = pn.op->layout ? pn.op->layout(g_, pn, *e.view) : std::nullopt;
        e.region = {pn.outputs[0]};
        e.space = g_.value(pn.outputs[0]).shape;
        e.rows_kept = e.rows_kept && graph::keeps_columns(g_, pn);
      } else {
        e.region.insert(pn.outputs[0]);
        e.rows_kept = false;
      }
      std::set<NodeId> all = e.tried;
      all.insert(mm);
      if (escapes(e.region, all) == 1) e.best = e.tried;
    }
    return e;
  }

  std::vector<NodeId> in_order(const std::set<NodeId>& nodes) const {
    std::vector<NodeId> r(nodes.begin(), nodes.end());
    std::sort(r.begin(), r.end(), [&](NodeId x, NodeId y) { return pos_[x] < pos_[y]; });
    return r;
  }

  // ---- phase 0: attention -------------------------------------------------------------
  // softmax(Q Kᵀ …) V as one group (fusion/attention.h) when the schedule takes it: the
  // match, the layout ops in front of Q, K and V (read as strided views), and the layout ops
  // after the output that the next product does not read in place (its epilogue stores the
  // consumer's layout). All or nothing: a merge that would make a cycle undoes the group.
  void grow_attention(NodeId softmax) {
    std::string why;
    std::optional<AttentionMatch> m = match_attention(g_, softmax, users_, lower_, &why);
    if (!m) {
      // Say why where it looked like one (inspect lists it with the refused merges).
      const ValueId x = g_.node(softmax).inputs[0];
      if (g_.value(x).producer != kNoNode && near_attention(g_, softmax, users_))
        refuse(g_.value(x).producer, softmax, "not one attention kernel: " + why);
      return;
    }
    std::vector<NodeId> nodes = m->nodes();
    for (NodeId id : nodes)
      if (!single(id)) return;
    const std::vector<NodeId> core = nodes;
    // Q, K and V through the layout ops in front of them (K is often written [.., S, D] by
    // the projection and read as Kᵀ through a Transpose: only the whole chain is a view).
    const std::pair<NodeId, size_t> operands[] = {{m->qk, 0}, {m->qk, 1}, {m->pv, 1}};
    for (auto [mm, i] : operands) {
      ValueId v = g_.node(mm).inputs[i];
      for (size_t depth = 0; depth < opts_.max_gemm_prologue; ++depth) {
        NodeId p = g_.value(v).producer;
        if (p == kNoNode || !free_pointwise(p) || !g_.node(p).op->layout ||
            g_.node(p).outputs.size() != 1 || users_[v].size() != 1 || is_output(v))
          break;
        nodes.push_back(p);
        v = g_.node(p).inputs[0];
      }
    }
    why = caps_->attention(g_, nodes);
    if (!why.empty()) {
      refuse(m->softmax, m->pv, "no attention kernel: " + why);
      return;
    }
    for (ValueId v = g_.node(m->pv).outputs[0];;) {
      if (users_[v].size() != 1 || is_output(v)) break;
      NodeId c = users_[v][0];
      const Node& cn = g_.node(c);
      if (!free_pointwise(c) || !is_layout(cn) || cn.inputs[0] != v || cn.outputs.size() != 1 ||
          viewed_by_next_product(c))
        break;
      nodes.push_back(c);
      if (!caps_->attention(g_, nodes).empty()) {
        nodes.pop_back();
        break;
      }
      v = cn.outputs[0];
    }
    // Merged in an order that keeps every intermediate group graph acyclic: the core from
    // the scores on, each prologue op into the group that reads it, the epilogue after.
    // The merges only move these groups' nodes into ga: keeping them undoes the merges.
    const int ga = group_of_[core[0]];
    std::map<int, Grp> saved = {{ga, groups_[ga]}};
    for (NodeId id : nodes) saved.emplace(group_of_[id], groups_[group_of_[id]]);
    bool ok = true;
    for (size_t k = 1; k < nodes.size() && ok; ++k)
      ok = merge(ga, group_of_[nodes[k]], nodes[k], core[0], 4 * opts_.max_gemm_epilogue);
    if (!ok) {
      for (auto& [i, grp] : saved) {
        for (NodeId id : grp.nodes) group_of_[id] = i;
        groups_[i] = std::move(grp);
      }
      refuse(m->softmax, m->pv,
             "merging the attention into one kernel would create a cycle between kernels");
      return;
    }
    groups_[ga].kind = GroupKind::Attention;
    groups_[ga].anchored = true;
  }

  // ---- phase 2: reductions -------------------------------------------------------------
  std::optional<RowSpace> row_space(NodeId id) const {
    const Node& n = g_.node(id);
    if (!g_.value(n.inputs[0]).has_shape) return std::nullopt;
    std::optional<std::vector<int64_t>> axes = lower_.row_axes(g_, n);
    if (!axes) return std::nullopt;
    RowSpace r;
    r.x = g_.value(n.inputs[0]).shape;
    r.axes = std::move(*axes);
    for (size_t d = 0; d < r.x.size(); ++d)
      if (std::find(r.axes.begin(), r.axes.end(), static_cast<int64_t>(d)) == r.axes.end())
        r.kept.push_back(r.x[d]);
    r.rows = checked_numel(r.kept);
    return r;
  }

  // A value fits the row space per element (shape X) or per row.
  bool fits(const RowSpace& r, ValueId v) const {
    const graph::Value& val = g_.value(v);
    if (!val.has_shape) return false;
    if (val.shape == r.x) return true;
    return checked_numel(val.shape) == r.rows && non_ones(val.shape) == non_ones(r.kept);
  }

  bool in_group(int grp, ValueId v) const {
    NodeId p = v == kNoValue ? kNoNode : g_.value(v).producer;
    return p != kNoNode && group_of_[p] == grp;
  }

  void grow_reduction(NodeId anchor) {
    std::optional<RowSpace> rs = row_space(anchor);
    int ga = group_of_[anchor];
    groups_[ga].anchored = true;
    if (!rs) return;
    groups_[ga].rows = rs;
    size_t reductions = 1;
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<NodeId> members(groups_[ga].nodes.begin(), groups_[ga].nodes.end());
      for (NodeId m : members) {
        // Prologue: producers of member inputs whose every use is in the group.
        for (ValueId v : g_.node(m).inputs) {
          if (v == kNoValue || in_group(ga, v)) continue;
          NodeId p = g_.value(v).producer;
          if (p == kNoNode || !free_pointwise(p) || !is_light(g_.node(p)) ||
              g_.node(p).outputs.size() != 1)
            continue;
          if (!fits(*rs, v)) continue;
          bool all_inside =
              !is_output(v) && std::all_of(users_[v].begin(), users_[v].end(),
                                           [&](NodeId u) { return group_of_[u] == ga; });
          if (!all_inside) {
            refuse(p, m, fmt::format("%{} is also used outside the reduction", g_.value(v).name));
            continue;
          }
          if (merge(ga, group_of_[p], p, m, opts_.max_reduction_nodes)) changed = true;
        }
        // Epilogue: consumers of member outputs in the same row space.
        for (ValueId v : g_.node(m).outputs) {
          if (v == kNoValue) continue;
          for (NodeId c : users_[v]) {
            if (group_of_[c] == ga) continue;
            const Node& cn = g_.node(c);
            bool ok_inputs = std::all_of(cn.inputs.begin(), cn.inputs.end(), [&](ValueId u) {
              return u == kNoValue || in_group(ga, u) || g_.value(u).producer == kNoNode ||
                     groups_[group_of_[g_.value(u).producer]].kind != GroupKind::Reduction ||
                     !groups_[group_of_[g_.value(u).producer]].anchored;
            });
            if (!ok_inputs) continue;
            if (lower_.rows(cn) && single(c)) {
              std::optional<RowSpace> crs = row_space(c);
              if (!crs || !(*crs == *rs)) {
                refuse(m, c, "a reduction over other rows");
                continue;
              }
              if (reductions >= opts_.max_reductions) {
                refuse(m, c,
                       fmt::format("the kernel already makes {} passes over each row", reductions));
                continue;
              }
              if (merge(ga, group_of_[c], m, c, opts_.max_reduction_nodes)) {
                ++reductions;
                groups_[group_of_[c]].anchored = true;
                changed = true;
              }
              continue;
            }
            if (!free_pointwise(c) || !is_light(cn) || cn.outputs.size() != 1) continue;
            // Only element-wise consumers: the kernel computes each output element from its
            // row's statistics, and a layout op (a Transpose of the kept dims, even one that
            // keeps the shape) would ask for elements of other rows.
            if (!is_elementwise(cn)) {
              refuse(m, c, "a layout op after the reduction would move elements between rows");
              continue;
            }
            if (!fits(*rs, cn.outputs[0])) {
              refuse(m, c,
                     fmt::format("%{} is not per element or per row of the reduction",
                                 g_.value(cn.outputs[0]).name));
              continue;
            }
            if (merge(ga, group_of_[c], m, c, opts_.max_reduction_nodes)) changed = true;
          }
        }
      }
    }
  }

  // ---- phase 3: pointwise --------------------------------------------------------------
  void grow_pointwise(NodeId n) {
    int gc = group_of_[n];
    for (ValueId v : g_.node(n).inputs) {
      if (v == kNoValue) continue;
      NodeId p = g_.value(v).producer;
      if (p == kNoNode || group_of_[p] == gc) continue;
      const Grp& gp = groups_[group_of_[p]];
      if (gp.anchored) continue;
      const Node& pn = g_.node(p);
      // A loop op computed per output element (Conv, pooling, Resize: opaque, each its own
      // kernel) joins its only consumer's kernel when that computes no more elements than it
      // has: Conv -> Clip writes the clipped value, not the convolution and then the clip.
      // Both shapes static: a data-dependent one (Range's) sends the group to the CPU.
      auto loop_into_consumer = [&] {
        const ValueId o = g_.node(n).outputs[0];
        if (!lower_.index_map(pn) || users_[v].size() != 1 || o == kNoValue) return false;
        const graph::Value& out = g_.value(o);
        return g_.value(v).has_shape && out.has_shape &&
               checked_numel(out.shape) <= checked_numel(g_.value(v).shape);
      };
      const bool joins = gp.kind == GroupKind::Pointwise
                             ? is_light(pn) || loop_into_consumer()
                             : gp.kind == GroupKind::Opaque && single(p) && loop_into_consumer();
      if (!joins) continue;
      // A value with consumers in other kernels joins too: it is written once by this
      // kernel and read there, and its consumers here read it in registers.
      int gp_id = group_of_[p];
      merge(gc, gp_id, p, n, opts_.max_pointwise_nodes);
      gc = group_of_[n];
    }
  }

  // A loop op's layout producers that nothing else reads join its kernel (left alone by the
  // phases above: a loop op is no light op, so grow_pointwise never pulls its producers): its
  // taps then read through their index arithmetic, and a kernel ordered by the loop op's
  // output (or the layout after it) reads a channels-last input along its channels.
  void pull_layouts_into_loop_op(NodeId id) {
    if (groups_[group_of_[id]].anchored) return;
    for (ValueId v : g_.node(id).inputs) {
      if (v == kNoValue || users_[v].size() != 1 || is_output(v)) continue;
      const NodeId p = g_.value(v).producer;
      if (p == kNoNode || !free_pointwise(p) || !g_.node(p).op->layout) continue;
      merge(group_of_[id], group_of_[p], p, id, opts_.max_pointwise_nodes);
    }
  }

  Plan finish() {
    // Groups in a topological order of the group graph (ties by first node's position).
    std::vector<int> alive;
    for (size_t i = 0; i < groups_.size(); ++i)
      if (groups_[i].alive && !groups_[i].nodes.empty()) alive.push_back(static_cast<int>(i));
    std::map<int, std::set<int>> succ;
    std::map<int, int> indeg;
    for (int a : alive) indeg[a] = 0;
    for (NodeId id : order_)
      for (ValueId v : g_.node(id).inputs) {
        if (v == kNoValue || g_.value(v).producer == kNoNode) continue;
        int from = group_of_[g_.value(v).producer], to = group_of_[id];
        if (from != to && succ[from].insert(to).second) ++indeg[to];
      }
    auto key = [&](int gi) { return groups_[gi].first; };
    std::vector<std::vector<NodeId>> members(groups_.size());
    for (NodeId id : order_) members[group_of_[id]].push_back(id);
    std::set<std::pair<size_t, int>> ready;
    for (int a : alive)
      if (indeg[a] == 0) ready.insert({key(a), a});
    Plan plan;
    while (!ready.empty()) {
      int gi = ready.begin()->second;
      ready.erase(ready.begin());
      Group grp;
      grp.kind = groups_[gi].kind;
      grp.nodes = std::move(members[gi]);
      if (grp.nodes.size() > 1 && grp.kind == GroupKind::Opaque) grp.kind = GroupKind::Pointwise;
      for (NodeId id : grp.nodes)
        if (is_gemm(g_.node(id)) && grp.kind != GroupKind::Attention) grp.kind = GroupKind::Gemm;
      compute_boundary(g_, grp, users_);
      plan.groups.push_back(std::move(grp));
      for (int s : succ[gi])
        if (--indeg[s] == 0) ready.insert({key(s), s});
    }
    plan.refused = std::move(refused_);
    return plan;
  }

  const graph::Graph& g_;
  const Lowerings& lower_;
  PartitionOptions opts_;
  const Capabilities* caps_;
  std::vector<std::vector<NodeId>> users_;
  std::vector<NodeId> order_;
  std::vector<size_t> pos_;  // by node: its place in order_
  std::vector<int> group_of_;
  std::vector<Grp> groups_;
  mutable std::vector<unsigned> mark_;  // by group: stamp_ when path_through_others has seen it
  mutable unsigned stamp_ = 0;
  std::vector<RefusedMerge> refused_;
};

}  // namespace

Plan plan_fused(const graph::Graph& g, const Lowerings& lower, const PartitionOptions& opts,
                const Capabilities* caps) {
  Plan p = Partitioner(g, lower, opts, caps).run();
#ifndef NDEBUG
  check_plan(g, p);
#endif
  return p;
}

void check_plan(const graph::Graph& g, const Plan& plan) {
  std::vector<int> group_of(g.num_nodes(), -1);
  for (size_t i = 0; i < plan.groups.size(); ++i)
    for (NodeId id : plan.groups[i].nodes) {
      BRAZE_CHECK(group_of[id] < 0, "plan: node in two groups: " + g.node(id).describe());
      group_of[id] = static_cast<int>(i);
    }
  for (NodeId id : g.topo_order()) {
    BRAZE_CHECK(group_of[id] >= 0, "plan: node in no group: " + g.node(id).describe());
    for (ValueId v : g.node(id).inputs) {
      if (v == kNoValue || g.value(v).producer == kNoNode) continue;
      // Groups are listed in execution order: a producer's group never comes later.
      BRAZE_CHECK(group_of[g.value(v).producer] <= group_of[id],
                  "plan: groups out of order or cyclic at " + g.node(id).describe());
    }
  }
}

}  // namespace braze::fusion
