// The graph IR: SSA values with dtype, static shape and optional constant data; nodes that
// reference an entry of the op registry; graph inputs and outputs.
//
// Values and nodes live in vectors indexed by ValueId / NodeId. Passes mark nodes dead and
// compact() drops them; a value's producer is kept in sync by the Graph's mutators.
// Graph outputs carry their own names, so a pass may replace the value behind an output
// (e.g. removing an Identity) without renaming what the user sees.
#pragma once

#include <braze/tensor.h>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/attribute.h"

namespace braze::graph {

struct OpDef;

using ValueId = int32_t;
using NodeId = int32_t;
// For each value (by ValueId), the nodes that read it: Graph::users().
using Users = std::vector<std::vector<NodeId>>;
inline constexpr ValueId kNoValue = -1;
inline constexpr NodeId kNoNode = -1;

struct Value {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  bool has_shape = true;  // false only downstream of data-dependent shapes (NonZero …)
  std::shared_ptr<const Tensor> constant;  // set for initializers and folded values
  NodeId producer = kNoNode;
};

struct Node {
  std::string name;  // the ONNX node name (may be empty in the model; importer fills one in)
  const OpDef* op = nullptr;
  int opset = 0;  // opset of the op's domain the node was imported with
  Attributes attrs;
  std::vector<ValueId> inputs;   // kNoValue for an omitted optional input
  std::vector<ValueId> outputs;  // kNoValue for an omitted optional output
  bool dead = false;

  const std::string& op_type() const;
  // "node 'name' (OpType)" for messages.
  std::string describe() const;

  // Attribute access; absent attributes take the registry's default, and a required one
  // that is missing is a UserError naming the node.
  bool has_attr(std::string_view name) const;
  int64_t attr_int(std::string_view name) const;
  double attr_float(std::string_view name) const;
  std::string attr_string(std::string_view name) const;
  std::vector<int64_t> attr_ints(std::string_view name) const;
  std::vector<double> attr_floats(std::string_view name) const;
  const Tensor& attr_tensor(std::string_view name) const;

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != kNoValue; }

 private:
  const AttrValue* find_attr(std::string_view name) const;
};

class Graph {
 public:
  std::string name;

  ValueId add_value(std::string name, DType dtype, Shape shape);
  ValueId add_constant(std::string name, Tensor t);
  NodeId add_node(const OpDef* op, std::string name, std::vector<ValueId> inputs,
                  std::vector<ValueId> outputs, Attributes attrs = {}, int opset = 0);

  Value& value(ValueId id) { return values_.at(static_cast<size_t>(id)); }
  const Value& value(ValueId id) const { return values_.at(static_cast<size_t>(id)); }
  Node& node(NodeId id) {  // a node may change through it: users() is computed again
    users_.reset();
    return nodes_.at(static_cast<size_t>(id));
  }
  const Node& node(NodeId id) const { return nodes_.at(static_cast<size_t>(id)); }
  size_t num_values() const { return values_.size(); }
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_live_nodes() const;

  const std::vector<ValueId>& inputs() const { return inputs_; }
  void add_input(ValueId v) { inputs_.push_back(v); }
  void remove_input(ValueId v);
  struct Output {
    std::string name;
    ValueId value;
  };
  const std::vector<Output>& outputs() const { return outputs_; }
  void add_output(ValueId v, std::string name = {});
  void set_output_value(size_t i, ValueId v) { outputs_.at(i).value = v; }
  bool is_graph_input(ValueId v) const;
  bool is_graph_output(ValueId v) const;

  // Live nodes in a deterministic topological order (ties broken by node id).
  // Throws UserError naming nodes on a cycle.
  std::vector<NodeId> topo_order() const;
  // For each value, the live nodes that consume it (one entry per use): a copy of
  // shared_users()'s while that is current, else computed without caching it (a pass that
  // changes the graph and asks again pays for one computation, not a computation and a copy).
  Users users() const;
  // The same without a copy: computed once until the graph next changes, then shared (safe
  // from several threads while none changes the graph), for the planner and codegen, which
  // ask per group.
  std::shared_ptr<const Users> shared_users() const;

  // Rewires every use of `from` (node inputs and graph outputs) to `to`.
  void replace_all_uses(ValueId from, ValueId to);
  void kill_node(NodeId id);
  // A value name not yet used in the graph, derived from base.
  std::string unique_name(const std::string& base);
  ValueId find_value(std::string_view name) const;  // kNoValue if absent

  // Drops dead nodes and values nothing refers to; renumbers ids (stable order).
  void compact();

 private:
  Users compute_users() const;

  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<Output> outputs_;
  std::unordered_map<std::string, ValueId> name_index_;
  // shared_users()'s result while the nodes stay as they are; a copy of the graph starts empty.
  struct UsersCache {
    UsersCache() = default;
    UsersCache(const UsersCache&) {}
    UsersCache& operator=(const UsersCache&) {
      reset();
      return *this;
    }
    void reset() { users.reset(); }
    mutable std::mutex mu;
    mutable std::shared_ptr<const Users> users;
  } users_;
};

// Deterministic text forms (stable value names, "C" locale numbers).
std::ostream& operator<<(std::ostream& os, const Graph& g);
std::string value_type_str(const Value& v);  // "float32[2,3]" or "float32[?]"
std::string node_str(const Graph& g, const Node& n);

// Checks the invariants every pass must keep; throws InternalError describing the first
// violation. Registry arity and acyclicity are checked too.
void verify(const Graph& g);

}  // namespace braze::graph
