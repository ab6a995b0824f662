// Shared pieces for writing registry entries: attribute specs, dtype dispatch over the
// three compute types, numpy broadcasting, axis handling, and upgrade helpers that move an
// older opset's attribute into the input the newest opset takes.
#pragma once

#include <braze/error.h>
#include <braze/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/op_context.h"
#include "graph/registry.h"

namespace braze::graph::ops {

// ---- attribute specs -------------------------------------------------------------------
inline AttrSpec attr_i(std::string n, int64_t def) { return {std::move(n), AttrType::Int, def}; }
inline AttrSpec attr_f(std::string n, double def) { return {std::move(n), AttrType::Float, def}; }
inline AttrSpec attr_s(std::string n, std::string def) {
  return {std::move(n), AttrType::String, std::move(def)};
}
inline AttrSpec attr_ints(std::string n, std::vector<int64_t> def) {
  return {std::move(n), AttrType::Ints, std::move(def)};
}
inline AttrSpec attr_floats(std::string n, std::vector<double> def) {
  return {std::move(n), AttrType::Floats, std::move(def)};
}
// Optional, no default: read with node.has_attr() first.
inline AttrSpec attr_opt(std::string n, AttrType t) { return {std::move(n), t, std::nullopt}; }
inline AttrSpec attr_req(std::string n, AttrType t) {
  return {std::move(n), t, std::nullopt, true};
}
// The same spec with what the attribute means (AttrRole).
inline AttrSpec with_role(AttrSpec a, AttrRole role) {
  a.role = role;
  return a;
}

// ---- compute types ---------------------------------------------------------------------
// Reference arithmetic runs in double for floating dtypes, int64_t for signed integers and
// bool, uint64_t for unsigned integers. with_compute(dt, f) calls f(C{}) with that type.
template <class F>
decltype(auto) with_compute(DType dt, F&& f) {
  if (is_float(dt)) return f(double{});
  if (is_unsigned_int(dt)) return f(uint64_t{});
  return f(int64_t{});
}

// ---- shapes and broadcasting -----------------------------------------------------------
// numpy multidirectional broadcasting; fails naming the node on incompatible shapes.
Shape broadcast_shapes(const InferCtx& ctx, const std::vector<Shape>& shapes);
// Strides of `in` (row-major) seen from an output of shape `out` (rank >= in's rank), with
// 0 for broadcast dimensions.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Calls f(out_index, in_offsets) for every element of `out` in row-major order, where
// in_offsets[k] is the flat offset into input k (broadcast to out).
template <class F>
void for_each_broadcast(const Shape& out, const std::vector<const Shape*>& ins, F&& f) {
  size_t rank = out.size();
  size_t k = ins.size();
  std::vector<std::vector<int64_t>> st(k);
  for (size_t j = 0; j < k; ++j) st[j] = broadcast_strides(*ins[j], out);
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  if (n == 0) return;
  std::vector<int64_t> idx(rank, 0), off(k, 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      for (size_t j = 0; j < k; ++j) off[j] += st[j][d];
      if (idx[d] < out[d]) break;
      for (size_t j = 0; j < k; ++j) off[j] -= st[j][d] * out[d];
      idx[d] = 0;
    }
  }
}

// Multi-index <-> flat offset helpers.
inline std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}
inline int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
  return o;
}

// Normalises axes (negative allowed) against rank; fails on out-of-range or duplicates.
std::vector<int64_t> normalize_axes(const InferCtx& ctx, std::vector<int64_t> axes, int64_t rank);

// Output dtype = input 0's dtype; shape = input 0's shape. For ops that keep both.
void infer_same_as_input0(InferCtx& ctx);

// ---- opset upgrades --------------------------------------------------------------------
// If `node` carries attribute `attr` (older opsets), removes it and puts its value in
// input slot `index` as a new constant of dtype `dt` (padding skipped slots with kNoValue).
void move_attr_to_input(Graph& g, NodeId n, const std::string& attr, size_t index, DType dt);
// Sets input slot `index` of node n to a new constant (padding with kNoValue).
void set_const_input(Graph& g, NodeId n, size_t index, Tensor value);

// Copies raw elements (same dtype) src[src_off] -> dst[dst_off].
inline void copy_element(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off) {
  size_t es = dtype_size(src.dtype());
  const auto* s = static_cast<const unsigned char*>(src.raw()) + src_off * es;
  auto* d = static_cast<unsigned char*>(dst.raw()) + dst_off * es;
  for (size_t b = 0; b < es; ++b) d[b] = s[b];
}

// Input offsets of a reduction of `shape` over the dims marked in `reduced`: output element
// o (row-major over the kept dims) reduces the input elements at outer[o] + inner[k], k in
// row-major order over the reduced dims.
struct ReduceIndex {
  std::vector<int64_t> outer{0}, inner{0};
};
ReduceIndex reduce_index(const Shape& shape, const std::vector<bool>& reduced);

}  // namespace braze::graph::ops
