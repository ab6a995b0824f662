#include "graph/ir.h"

#include <braze/error.h>

#include <algorithm>
#include <queue>

#include <fmt/format.h>

#include "graph/registry.h"

namespace braze::graph {

const std::string& Node::op_type() const {
  static const std::string kNone = "<no op>";
  return op ? op->name : kNone;
}

std::string Node::describe() const { return fmt::format("node '{}' ({})", name, op_type()); }

const AttrValue* Node::find_attr(std::string_view attr) const {
  if (auto it = attrs.find(attr); it != attrs.end()) return &it->second;
  if (op) {
    if (const AttrSpec* spec = op->find_attr(attr); spec && spec->default_value)
      return &*spec->default_value;
  }
  return nullptr;
}

bool Node::has_attr(std::string_view attr) const { return attrs.count(attr) != 0; }

namespace {
template <class T>
const T& get_attr(const Node& n, const AttrValue* v, std::string_view attr, AttrType want) {
  if (!v) throw UserError(fmt::format("{}: missing required attribute '{}'", n.describe(), attr));
  if (const T* p = std::get_if<T>(v)) return *p;
  throw UserError(fmt::format("{}: attribute '{}' should be of type {}, not {}", n.describe(), attr,
                              attr_type_name(want), attr_type_name(attr_type(*v))));
}
}  // namespace

int64_t Node::attr_int(std::string_view a) const {
  return get_attr<int64_t>(*this, find_attr(a), a, AttrType::Int);
}
double Node::attr_float(std::string_view a) const {
  return get_attr<double>(*this, find_attr(a), a, AttrType::Float);
}
std::string Node::attr_string(std::string_view a) const {
  return get_attr<std::string>(*this, find_attr(a), a, AttrType::String);
}
std::vector<int64_t> Node::attr_ints(std::string_view a) const {
  return get_attr<std::vector<int64_t>>(*this, find_attr(a), a, AttrType::Ints);
}
std::vector<double> Node::attr_floats(std::string_view a) const {
  return get_attr<std::vector<double>>(*this, find_attr(a), a, AttrType::Floats);
}
const Tensor& Node::attr_tensor(std::string_view a) const {
  return get_attr<Tensor>(*this, find_attr(a), a, AttrType::Tensor);
}

ValueId Graph::add_value(std::string nm, DType dtype, Shape shape) {
  users_.reset();
  if (nm.empty() || name_index_.count(nm)) nm = unique_name(nm.empty() ? "v" : nm);
  ValueId id = static_cast<ValueId>(values_.size());
  name_index_.emplace(nm, id);
  Value v;
  v.name = std::move(nm);
  v.dtype = dtype;
  v.shape = std::move(shape);
  values_.push_back(std::move(v));
  return id;
}

ValueId Graph::add_constant(std::string nm, Tensor t) {
  ValueId id = add_value(std::move(nm), t.dtype(), t.shape());
  values_[id].constant = std::make_shared<const Tensor>(std::move(t));
  return id;
}

NodeId Graph::add_node(const OpDef* op, std::string nm, std::vector<ValueId> ins,
                       std::vector<ValueId> outs, Attributes attrs, int opset) {
  users_.reset();
  NodeId id = static_cast<NodeId>(nodes_.size());
  for (ValueId o : outs) {
    if (o == kNoValue) continue;
    BRAZE_CHECK(values_.at(o).producer == kNoNode, "value produced twice: " + values_[o].name);
    values_[o].producer = id;
  }
  Node n;
  n.name = std::move(nm);
  n.op = op;
  n.opset = opset;
  n.attrs = std::move(attrs);
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  nodes_.push_back(std::move(n));
  return id;
}

size_t Graph::num_live_nodes() const {
  return static_cast<size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return !n.dead; }));
}

void Graph::remove_input(ValueId v) {
  inputs_.erase(std::remove(inputs_.begin(), inputs_.end(), v), inputs_.end());
}

void Graph::add_output(ValueId v, std::string nm) {
  if (nm.empty()) nm = values_.at(v).name;
  outputs_.push_back({std::move(nm), v});
}

bool Graph::is_graph_input(ValueId v) const {
  return std::find(inputs_.begin(), inputs_.end(), v) != inputs_.end();
}

bool Graph::is_graph_output(ValueId v) const {
  return std::any_of(outputs_.begin(), outputs_.end(),
                     [v](const Output& o) { return o.value == v; });
}

std::vector<NodeId> Graph::topo_order() const {
  // Kahn's algorithm over live nodes; the ready set is a min-heap of node ids so the order
  // is deterministic and follows the import order where the model allows.
  size_t n = nodes_.size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<NodeId>> consumers(values_.size());
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = nodes_[i];
    if (nd.dead) continue;
    for (ValueId v : nd.inputs) {
      if (v == kNoValue) continue;
      NodeId p = values_[v].producer;
      if (p != kNoNode && !nodes_[p].dead) {
        ++pending[i];
        consumers[v].push_back(static_cast<NodeId>(i));
      }
    }
  }
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (!nodes_[i].dead && pending[i] == 0) ready.push(static_cast<NodeId>(i));
  std::vector<NodeId> order;
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (ValueId o : nodes_[id].outputs) {
      if (o == kNoValue) continue;
      for (NodeId c : consumers[o])
        if (--pending[c] == 0) ready.push(c);
    }
  }
  if (order.size() != num_live_nodes()) {
    std::vector<std::string> stuck;
    for (size_t i = 0; i < n; ++i)
      if (!nodes_[i].dead && pending[i] > 0) stuck.push_back(nodes_[i].describe());
    if (stuck.size() > 5) {
      size_t more = stuck.size() - 5;
      stuck.resize(5);
      stuck.push_back(fmt::format("and {} more", more));
    }
    throw UserError(fmt::format("graph '{}' has a cycle through {}", name, fmt::join(stuck, ", ")));
  }
  return order;
}

Users Graph::compute_users() const {
  Users u(values_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].dead) continue;
    for (ValueId v : nodes_[i].inputs)
      if (v != kNoValue) u[v].push_back(static_cast<NodeId>(i));
  }
  return u;
}

Users Graph::users() const {
  {
    std::lock_guard<std::mutex> lock(users_.mu);
    if (users_.users) return *users_.users;
  }
  return compute_users();
}

std::shared_ptr<const Users> Graph::shared_users() const {
  std::lock_guard<std::mutex> lock(users_.mu);
  if (!users_.users) users_.users = std::make_shared<const Users>(compute_users());
  return users_.users;
}

void Graph::replace_all_uses(ValueId from, ValueId to) {
  users_.reset();
  for (Node& n : nodes_) {
    if (n.dead) continue;
    for (ValueId& v : n.inputs)
      if (v == from) v = to;
  }
  for (Output& o : outputs_)
    if (o.value == from) o.value = to;
}

void Graph::kill_node(NodeId id) {
  users_.reset();
  Node& n = nodes_.at(id);
  n.dead = true;
  for (ValueId o : n.outputs)
    if (o != kNoValue && values_[o].producer == id) values_[o].producer = kNoNode;
}

std::string Graph::unique_name(const std::string& base) {
  if (!name_index_.count(base)) return base;
  for (size_t i = 1;; ++i) {
    std::string cand = fmt::format("{}_{}", base, i);
    if (!name_index_.count(cand)) return cand;
  }
}

ValueId Graph::find_value(std::string_view nm) const {
  auto it = name_index_.find(std::string(nm));
  return it == name_index_.end() ? kNoValue : it->second;
}

void Graph::compact() {
  users_.reset();
  std::vector<bool> used(values_.size(), false);
  for (ValueId v : inputs_) used[v] = true;
  for (const Output& o : outputs_) used[o.value] = true;
  for (const Node& n : nodes_) {
    if (n.dead) continue;
    for (ValueId v : n.inputs)
      if (v != kNoValue) used[v] = true;
    for (ValueId v : n.outputs)
      if (v != kNoValue) used[v] = true;
  }
  std::vector<ValueId> vmap(values_.size(), kNoValue);
  std::vector<Value> nv;
  name_index_.clear();
  for (size_t i = 0; i < values_.size(); ++i) {
    if (!used[i]) continue;
    vmap[i] = static_cast<ValueId>(nv.size());
    name_index_.emplace(values_[i].name, vmap[i]);
    nv.push_back(std::move(values_[i]));
  }
  std::vector<NodeId> nmap(nodes_.size(), kNoNode);
  std::vector<Node> nn;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].dead) continue;
    nmap[i] = static_cast<NodeId>(nn.size());
    nn.push_back(std::move(nodes_[i]));
  }
  auto remap = [&](ValueId v) { return v == kNoValue ? kNoValue : vmap[v]; };
  for (Node& n : nn) {
    for (ValueId& v : n.inputs) v = remap(v);
    for (ValueId& v : n.outputs) v = remap(v);
  }
  for (Value& v : nv) v.producer = v.producer == kNoNode ? kNoNode : nmap[v.producer];
  for (ValueId& v : inputs_) v = vmap[v];
  for (Output& o : outputs_) o.value = vmap[o.value];
  values_ = std::move(nv);
  nodes_ = std::move(nn);
}

}  // namespace braze::graph
