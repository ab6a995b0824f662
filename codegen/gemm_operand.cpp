// GEMM operands as views (gemm.h, OperandView): the chain of layout ops in front of a
// product, composed through the registry's layout maps into one strided view of the
// kernel input it starts from, then made [output batch…, rows, cols] the product's way
// (Gemm's transposes, MatMul's broadcasting).
#include <fmt/format.h>

#include "codegen/gemm.h"
#include "graph/registry.h"

namespace braze::codegen {

std::optional<OperandView> gemm_operand_view(const graph::Graph& g,
                                             const std::function<bool(graph::NodeId)>& in_group,
                                             const GemmDims& d, int i, std::string* why_not) {
  const graph::Node& n = *d.node;
  if ((i == 0 && d.a_vec) || (i == 1 && d.b_vec)) {
    *why_not = "a matrix-vector product";
    return std::nullopt;
  }
  OperandView view;
  graph::ValueId v = n.inputs[static_cast<size_t>(i)];
  for (graph::NodeId p = g.value(v).producer; p != graph::kNoNode && in_group(p);
       p = g.value(v).producer) {
    const graph::Node& pn = g.node(p);
    if (!pn.op->layout || pn.outputs.size() != 1) {
      *why_not = fmt::format("operand %{} is computed in the kernel ({} is not a layout op)",
                             g.value(n.inputs[static_cast<size_t>(i)]).name, pn.op_type());
      return std::nullopt;
    }
    view.chain.push_back(p);
    v = pn.inputs[0];
  }
  view.root = v;
  graph::Layout l = graph::Layout::contiguous(g.value(v).shape);
  for (size_t k = view.chain.size(); k-- > 0;) {
    const graph::Node& pn = g.node(view.chain[k]);
    std::optional<graph::Layout> next = pn.op->layout(g, pn, l);
    if (!next) {
      *why_not =
          fmt::format("{} in front of operand %{} is not a strided view of %{}", pn.describe(),
                      g.value(n.inputs[static_cast<size_t>(i)]).name, g.value(view.root).name);
      return std::nullopt;
    }
    l = *next;
  }
  // Gemm's transA / transB, then MatMul's broadcasting of the batch dims.
  const size_t rank = l.dims.size();
  if (rank < 2) {
    *why_not = "a matrix-vector product";
    return std::nullopt;
  }
  if (i == 0 ? d.ta : d.tb) std::swap(l.dims[rank - 2], l.dims[rank - 1]);
  Shape full = d.out_batch;
  const Shape ls = l.shape();
  full.push_back(ls[rank - 2]);
  full.push_back(ls[rank - 1]);
  std::optional<graph::Layout> b = graph::expand_layout(l, full);
  if (!b) {
    *why_not = "an operand whose batch dims do not broadcast";
    return std::nullopt;
  }
  const size_t r = b->dims.size();
  std::optional<graph::StridedDim> rows = b->single(r - 2), cols = b->single(r - 1);
  if (!rows || !cols) {
    *why_not = fmt::format("operand %{}'s matrix dims are not one stride each ({})",
                           g.value(n.inputs[static_cast<size_t>(i)]).name, graph::layout_str(*b));
    return std::nullopt;
  }
  // A is [m, k] (k the columns), B is [k, n] (k the rows).
  const graph::StridedDim kd = i == 0 ? *cols : *rows, od = i == 0 ? *rows : *cols;
  if (kd.stride == 1 || (kd.size == 1 && od.stride != 1)) {
    view.kcontig = true;
    view.ld = od.size == 1 ? kd.size : od.stride;
  } else if (od.stride == 1 || od.size == 1) {
    view.kcontig = false;
    view.ld = kd.size == 1 ? od.size : kd.stride;
  } else {
    *why_not = fmt::format("neither matrix dim of operand %{} is contiguous ({})",
                           g.value(n.inputs[static_cast<size_t>(i)]).name, graph::layout_str(*b));
    return std::nullopt;
  }
  std::vector<graph::StridedDim> batch;
  for (size_t k = 0; k + 2 < r; ++k)
    batch.insert(batch.end(), b->dims[k].begin(), b->dims[k].end());
  view.batch = graph::simplify(batch);
  view.offset = b->offset;
  return view;
}

std::optional<WindowView> gemm_window_view(const graph::Graph& g,
                                           const std::function<bool(graph::NodeId)>& in_group,
                                           const GemmDims& d, std::string* why_not) {
  auto producer_in_group = [&](graph::ValueId v) {
    const graph::NodeId p = g.value(v).producer;
    return p != graph::kNoNode && in_group(p) ? p : graph::kNoNode;
  };
  auto is = [&](graph::NodeId id, const char* op) {
    return id != graph::kNoNode && g.node(id).op_type() == op;
  };
  const graph::NodeId reshape = producer_in_group(d.node->inputs[0]);
  const graph::NodeId im2col =
      is(reshape, "Reshape") ? producer_in_group(g.node(reshape).inputs[0]) : graph::kNoNode;
  if (!is(im2col, "Im2Col") || g.node(im2col).op->domain != "braze" || d.ta || d.batches != 1 ||
      g.node(im2col).attr_int("channels_last") == 0 || g.node(im2col).attr_int("columns") != 0) {
    why_not->clear();  // not windows at all
    return std::nullopt;
  }
  const graph::Node& wn = g.node(im2col);
  const graph::Value& x = g.value(wn.inputs[0]);
  if (producer_in_group(wn.inputs[0]) != graph::kNoNode) {
    *why_not = fmt::format(
        "the convolution windows' input %{} is computed in the kernel (TMA reads it from memory)",
        x.name);
    return std::nullopt;
  }
  WindowView w;
  w.root = wn.inputs[0];
  w.images = x.shape.front();
  w.channels = x.shape.back();
  w.geometry = graph::im2col_windows(wn, x.shape);
  w.chain = {reshape, im2col};
  const Shape& a = g.value(d.node->inputs[0]).shape;
  if (a.size() != 2 || a[0] != w.images * checked_numel(w.geometry.out) ||
      a[1] != checked_numel(w.geometry.kernel) * w.channels) {
    *why_not = "the Reshape in front of A is not [images · windows, taps · channels]";
    return std::nullopt;
  }
  return w;
}

std::string operand_view_offset(const OperandView& v) {
  std::string off = v.offset ? fmt::format("{}LL", v.offset) : "";
  int64_t inner = 1;
  for (size_t k = v.batch.size(); k-- > 0;) {
    const graph::StridedDim& f = v.batch[k];
    if (f.stride != 0) {
      std::string digit = inner == 1 ? "b" : fmt::format("(b / {}LL)", inner);
      if (k > 0) digit = fmt::format("({} % {}LL)", digit, f.size);
      off += fmt::format("{}{} * {}LL", off.empty() ? "" : " + ", digit, f.stride);
    }
    inner *= f.size;
  }
  return off.empty() ? "0LL" : off;
}

}  // namespace braze::codegen
