// What an op's shape inference and reference implementation see of a node.
//
// InferCtx serves two callers: graph-level inference (inputs may lack constant data, and
// downstream of data-dependent ops may lack shapes) and evaluation (every input has data).
// An infer function sets output dtypes first, then asks for what it needs; asking for a
// shape or value that is not known throws NotStatic, and the caller records the outputs'
// shapes as unknown.
#pragma once

#include <braze/tensor.h>

#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::graph {

// Thrown by InferCtx when a needed shape or constant value is not known statically.
struct NotStatic {};

struct InputInfo {
  bool present = false;
  DType dtype = DType::Float32;
  const Shape* shape = nullptr;   // nullptr: unknown
  const Tensor* value = nullptr;  // nullptr: not constant
};

struct OutputInfo {
  bool set = false;
  DType dtype = DType::Float32;
  Shape shape;
  bool has_shape = false;
};

class InferCtx {
 public:
  InferCtx(const Node& node, std::vector<InputInfo> inputs);

  const Node& node() const { return node_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].present; }
  DType dtype(size_t i) const;
  const Shape& shape(size_t i) const;  // throws NotStatic when unknown
  int64_t rank(size_t i) const { return static_cast<int64_t>(shape(i).size()); }
  const Tensor* value(size_t i) const;          // nullptr when not constant
  const Tensor& require_value(size_t i) const;  // throws NotStatic when not constant
  std::vector<int64_t> ints(size_t i) const { return require_value(i).to_int64s(); }

  size_t num_outputs() const { return outputs_.size(); }
  void set_dtype(size_t i, DType dt);
  void set_output(size_t i, DType dt, Shape shape);
  void set_shape(size_t i, Shape shape);  // dtype set before
  const std::vector<OutputInfo>& outputs() const { return outputs_; }

  // A UserError naming the node: "node 'n' (Op): msg".
  [[noreturn]] void fail(const std::string& msg) const;
  // Normalises a possibly negative axis against rank, failing when out of range.
  int64_t axis(int64_t a, int64_t rank, const char* what = "axis") const;

 private:
  const Node& node_;
  std::vector<InputInfo> inputs_;
  std::vector<OutputInfo> outputs_;
};

class RefCtx {
 public:
  RefCtx(const Node& node, std::vector<const Tensor*> inputs, std::vector<Tensor>& outputs)
      : node_(node), inputs_(std::move(inputs)), outputs_(outputs) {}

  const Node& node() const { return node_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& input(size_t i) const;
  size_t num_outputs() const { return outputs_.size(); }
  bool has_output(size_t i) const { return i < outputs_.size() && outputs_[i].defined(); }
  Tensor& output(size_t i) { return outputs_.at(i); }
  [[noreturn]] void fail(const std::string& msg) const;

 private:
  const Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor>& outputs_;
};

// Infers output dtypes and shapes of node `n` from the graph's values and writes them to its
// output values. Throws UserError on an invalid node (wrong dtype, bad attribute …).
void infer_node(Graph& g, NodeId n);

// Runs the registry's reference implementation of `node` on concrete inputs (nullptr for
// omitted optional inputs); returns one tensor per node output (undefined for omitted ones).
std::vector<Tensor> evaluate_node(const Node& node, const std::vector<const Tensor*>& inputs);

// The registry's Transpose of t by `perm` (output dim i is t's dim perm[i]), for passes that
// rearrange constants at compile time.
Tensor transposed(const Tensor& t, const std::vector<int64_t>& perm);

}  // namespace braze::graph
