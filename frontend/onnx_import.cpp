#include "frontend/onnx_import.h"

#include <braze/error.h>

#include <google/protobuf/io/coded_stream.h>
#include <onnx/defs/parser.h>

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "frontend/model_checks.h"
#include "frontend/onnx_proto.h"
#include "frontend/tensor_io.h"
#include "graph/onnx_dtype.h"
#include "graph/op_context.h"
#include "graph/parallel.h"
#include "graph/registry.h"

namespace braze::frontend {

namespace fs = std::filesystem;
using graph::AttrValue;
using graph::Graph;
using graph::kNoValue;
using graph::NodeId;
using graph::ValueId;

namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::string node_label(const onnx::NodeProto& n, int index) {
  return n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
}

AttrValue convert_attr(const onnx::AttributeProto& a, const DataScope& scope,
                       const std::string& what) {
  using A = onnx::AttributeProto;
  A::AttributeType type = a.type();
  if (!a.ref_attr_name().empty())
    throw UnsupportedError(
        fmt::format("{}: attribute '{}' refers to a function attribute", what, a.name()));
  if (type == A::UNDEFINED) {  // very old models leave the type out: take the field that is set
    if (a.has_f())
      type = A::FLOAT;
    else if (a.has_i())
      type = A::INT;
    else if (a.has_s())
      type = A::STRING;
    else if (a.has_t())
      type = A::TENSOR;
    else if (a.floats_size())
      type = A::FLOATS;
    else if (a.ints_size())
      type = A::INTS;
    else if (a.strings_size())
      type = A::STRINGS;
  }
  switch (type) {
    case A::FLOAT:
      return static_cast<double>(a.f());
    case A::INT:
      return static_cast<int64_t>(a.i());
    case A::STRING:
      return a.s();
    case A::TENSOR:
      return tensor_from_proto(a.t(), scope, fmt::format("{}: attribute '{}'", what, a.name()));
    case A::FLOATS:
      return std::vector<double>(a.floats().begin(), a.floats().end());
    case A::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    default:
      throw UnsupportedError(
          fmt::format("{}: attribute '{}' has a kind braze does not support ({})", what, a.name(),
                      A::AttributeType_Name(type)));
  }
}

// Every (op, domain, opset) the registry lacks, with the nodes that use it, in one error.
void check_supported(const onnx::GraphProto& gp, const std::map<std::string, int64_t>& opsets) {
  std::map<std::string, std::vector<std::string>> missing;  // "Op (domain, opset N)" -> nodes
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& n = gp.node(i);
    std::string domain = is_default_domain(n.domain()) ? "" : n.domain();
    auto it = opsets.find(domain);
    int64_t opset = it == opsets.end() ? -1 : it->second;
    const graph::OpDef* op = graph::find_op(domain, n.op_type());
    std::string dname = domain.empty() ? "ai.onnx" : domain;
    std::string key;
    if (opset < 0)
      key = fmt::format("{} ({}, a domain the model does not import)", n.op_type(), dname);
    else if (!op || op->internal)
      key = fmt::format("{} ({}, opset {})", n.op_type(), dname, opset);
    else if (op->since > opset)
      key = fmt::format("{} ({}, opset {}: the op first appears in opset {})", n.op_type(), dname,
                        opset, op->since);
    else if (op->oldest > opset)
      key = fmt::format("{} ({}, opset {}: braze imports this op from opset {})", n.op_type(),
                        dname, opset, op->oldest);
    if (!key.empty()) missing[key].push_back("'" + node_label(n, i) + "'");
  }
  if (missing.empty()) return;
  std::string msg = fmt::format("the model uses {} unsupported op{}:", missing.size(),
                                missing.size() == 1 ? "" : "s");
  for (auto& [k, nodes] : missing) {
    size_t total = nodes.size();
    if (nodes.size() > 8) {
      nodes.resize(8);
      nodes.push_back(fmt::format("and {} more", total - 8));
    }
    msg += fmt::format("\n  {}: node{} {}", k, total == 1 ? "" : "s", fmt::join(nodes, ", "));
  }
  throw UnsupportedError(msg);
}

// ONNX requires nodes in topological order, but exporters do not always comply; order them,
// reporting values nothing defines and cycles as user errors.
std::vector<int> onnx_node_order(const onnx::GraphProto& gp,
                                 const std::set<std::string>& available) {
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < gp.node_size(); ++i)
    for (const auto& o : gp.node(i).output())
      if (!o.empty()) {
        if (available.count(o) || !producer.emplace(o, i).second)
          throw UserError(fmt::format("value '{}' is defined more than once (again by node '{}')",
                                      o, node_label(gp.node(i), i)));
      }
  std::vector<int> pending(gp.node_size(), 0);
  std::vector<std::vector<int>> consumers(gp.node_size());
  for (int i = 0; i < gp.node_size(); ++i) {
    for (const auto& in : gp.node(i).input()) {
      if (in.empty() || available.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        throw UserError(
            fmt::format("node '{}' ({}) reads '{}', which no node, input or initializer defines",
                        node_label(gp.node(i), i), gp.node(i).op_type(), in));
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < gp.node_size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (static_cast<int>(order.size()) != gp.node_size()) {
    std::vector<std::string> stuck;
    for (int i = 0; i < gp.node_size() && stuck.size() < 5; ++i)
      if (pending[i] > 0) stuck.push_back("'" + node_label(gp.node(i), i) + "'");
    throw UserError(fmt::format("the graph has a cycle through nodes {}", fmt::join(stuck, ", ")));
  }
  return order;
}

Shape input_shape(const onnx::ValueInfoProto& vi, const ImportOptions& opts,
                  std::vector<std::string>& notes) {
  const auto& tt = vi.type().tensor_type();
  auto given = opts.shapes.find(vi.name());
  if (!tt.has_shape()) {
    if (given != opts.shapes.end()) return given->second;
    throw UserError(
        fmt::format("input '{}' has no shape in the model; give one with --shapes {}:<dims>",
                    vi.name(), vi.name()));
  }
  const auto& dims = tt.shape().dim();
  if (given != opts.shapes.end()) {
    const Shape& s = given->second;
    bool differs = static_cast<int>(s.size()) != dims.size();
    for (int i = 0; !differs && i < dims.size(); ++i)
      differs = dims[i].has_dim_value() && dims[i].dim_value() != s[i];
    if (differs && opts.shapes_override_model) {
      notes.push_back(
          fmt::format("input '{}' is given as {} although the model declares another shape",
                      vi.name(), shape_str(s)));
      return s;
    }
    if (static_cast<int>(s.size()) != dims.size())
      throw UserError(
          fmt::format("--shapes gives input '{}' rank {} ({}), but the model declares rank {}",
                      vi.name(), s.size(), shape_str(s), dims.size()));
    for (int i = 0; i < dims.size(); ++i)
      if (dims[i].has_dim_value() && dims[i].dim_value() != s[i])
        throw UserError(
            fmt::format("--shapes gives input '{}' dim {} = {}, but the model fixes it to {}",
                        vi.name(), i, s[i], dims[i].dim_value()));
    return s;
  }
  Shape s;
  for (int i = 0; i < dims.size(); ++i) {
    if (dims[i].has_dim_value()) {
      if (dims[i].dim_value() < 0)
        throw UserError(fmt::format("input '{}' has a negative dimension {} at axis {}", vi.name(),
                                    dims[i].dim_value(), i));
      s.push_back(dims[i].dim_value());
    } else {
      std::string sym = dims[i].dim_param().empty() ? "?" : dims[i].dim_param();
      notes.push_back(
          fmt::format("input '{}' dim {} ('{}') set to 1; choose it with --shapes {}:<dims>",
                      vi.name(), i, sym, vi.name()));
      s.push_back(1);
    }
  }
  checked_numel(s, fmt::format("input '{}'", vi.name()));
  return s;
}

// The model's opset per domain ("" for the default one), checked against what braze imports.
std::map<std::string, int64_t> read_opsets(const onnx::ModelProto& model, ImportResult& res) {
  std::map<std::string, int64_t> opsets;
  for (const auto& oi : model.opset_import())
    opsets[is_default_domain(oi.domain()) ? "" : oi.domain()] = oi.version();
  if (model.opset_import_size() == 0) {
    if (model.ir_version() == 0 && model.graph().node_size() == 0)
      throw UserError("not an ONNX model: no IR version, opset or nodes");
    opsets[""] = 1;  // IR version 3 models without opset_import mean opset 1
  }
  auto def = opsets.find("");
  if (def != opsets.end()) {
    res.opset = def->second;
    if (def->second < graph::kMinOpset || def->second > graph::kMaxOpset)
      throw UnsupportedError(fmt::format(
          "the model uses opset {} of the default domain; braze imports opsets {} to {}",
          def->second, graph::kMinOpset, graph::kMaxOpset));
  }
  return opsets;
}

// The node's attributes, each of the type the op's schema gives it.
graph::Attributes node_attributes(const onnx::NodeProto& np, const graph::OpDef& op,
                                  const DataScope& scope, const std::string& what) {
  graph::Attributes attrs;
  for (const auto& a : np.attribute()) {
    AttrValue v = convert_attr(a, scope, what);
    if (const graph::AttrSpec* spec = op.find_attr(a.name());
        spec && graph::attr_type(v) != spec->type)
      throw UserError(fmt::format("{}: attribute '{}' should be of type {}, not {}", what, a.name(),
                                  graph::attr_type_name(spec->type),
                                  graph::attr_type_name(graph::attr_type(v))));
    attrs.emplace(a.name(), std::move(v));
  }
  return attrs;
}

// The initializers as constants of `g`, their names into `available` (each named, and once).
void add_initializers(const onnx::GraphProto& gp, const DataScope& scope, Graph& g,
                      std::set<std::string>& available) {
  for (const auto& init : gp.initializer()) {
    if (init.name().empty()) throw UserError("an initializer has no name");
    if (!available.insert(init.name()).second)
      throw UserError(fmt::format("initializer '{}' is defined twice", init.name()));
  }
  // Read (external data) and decoded on several threads, added in the file's order.
  std::vector<Tensor> weights(static_cast<size_t>(gp.initializer_size()));
  graph::parallel_for(weights.size(), [&](size_t i) {
    const auto& init = gp.initializer(static_cast<int>(i));
    weights[i] = tensor_from_proto(init, scope, fmt::format("initializer '{}'", init.name()));
  });
  for (size_t i = 0; i < weights.size(); ++i)
    g.add_constant(gp.initializer(static_cast<int>(i)).name(), std::move(weights[i]));
  if (gp.sparse_initializer_size()) throw UnsupportedError("sparse initializers are not supported");
}

// A graph input's dtype: it must be a tensor of a dtype braze supports.
DType input_dtype(const onnx::ValueInfoProto& vi) {
  if (!vi.type().has_tensor_type())
    throw UnsupportedError(
        fmt::format("input '{}' is not a tensor ({}); braze supports tensor inputs only", vi.name(),
                    vi.type().has_sequence_type()   ? "a sequence"
                    : vi.type().has_optional_type() ? "an optional"
                                                    : "a non-tensor type"));
  auto dt = graph::dtype_from_onnx(vi.type().tensor_type().elem_type());
  if (!dt)
    throw UnsupportedError(
        fmt::format("input '{}' has dtype {}, which braze does not support", vi.name(),
                    graph::onnx_dtype_name(vi.type().tensor_type().elem_type())));
  return *dt;
}

// The inputs that are not initializers, into `g` and `available`; --shapes must name only them.
void add_inputs(const onnx::GraphProto& gp, const ImportOptions& opts, ImportResult& res,
                std::set<std::string>& available) {
  Graph& g = res.graph;
  std::set<std::string> input_names;
  for (const auto& vi : gp.input()) {
    if (available.count(vi.name())) continue;  // an initializer's default value: a constant
    DType dt = input_dtype(vi);
    Shape s = input_shape(vi, opts, res.notes);
    available.insert(vi.name());
    input_names.insert(vi.name());
    g.add_input(g.add_value(vi.name(), dt, s));
  }
  for (const auto& [name, shape] : opts.shapes)
    if (!input_names.count(name)) {
      std::vector<std::string> names(input_names.begin(), input_names.end());
      throw UserError(
          fmt::format("--shapes names '{}', which is not an input of the model (inputs: {})", name,
                      fmt::join(names, ", ")));
    }
}

// Upgrades node `id`, infers it and any nodes added; other than UserErrors, errors are internal.
void upgrade_and_infer(Graph& g, const graph::OpDef& op, NodeId id, const std::string& what) {
  try {
    if (op.upgrade) op.upgrade(g, id);
    if (g.num_nodes() == static_cast<size_t>(id) + 1) {
      graph::infer_node(g, id);
    } else {  // the upgrade added nodes around this one: infer them all in dependency order
      for (NodeId j : g.topo_order())
        if (j >= id) graph::infer_node(g, j);
    }
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    throw InternalError(fmt::format("{}: {}", what, e.what()));
  }
}

// A Constant node's output becomes a constant value, as an initializer's is, so that the
// shapes inferred after it (a Reshape's to the constant shape) and the expansions of ops
// defined as functions (RotaryEmbedding of a 4-D X needs X's shape) see it while importing.
// A `value` tensor is shared, not copied (copies of a Tensor share its buffer): a model that
// keeps its weights in Constant nodes holds each once.
void constant_as_initializer(Graph& g, NodeId id) {
  const graph::Node n = g.node(id);  // a copy: the node is killed
  Tensor t = n.has_attr("value") ? n.attr_tensor("value") : graph::evaluate_node(n, {}).at(0);
  g.kill_node(id);
  graph::Value& v = g.value(n.outputs.at(0));
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.has_shape = true;
  v.constant = std::make_shared<const Tensor>(std::move(t));
}

// Adds ONNX node `idx` to `g`, its outputs as new values, and infers it.
void add_node(const onnx::GraphProto& gp, int idx, const std::map<std::string, int64_t>& opsets,
              const DataScope& scope, Graph& g) {
  const onnx::NodeProto& np = gp.node(idx);
  std::string label = node_label(np, idx);
  std::string what = fmt::format("node '{}' ({})", label, np.op_type());
  std::string domain = is_default_domain(np.domain()) ? "" : np.domain();
  const graph::OpDef* op = graph::find_op(domain, np.op_type());
  check_attributes(np, *op, static_cast<int>(opsets.at(domain)), what);
  graph::Attributes attrs = node_attributes(np, *op, scope, what);
  std::vector<ValueId> ins, outs;
  for (const auto& in : np.input()) ins.push_back(in.empty() ? kNoValue : g.find_value(in));
  while (!ins.empty() && ins.back() == kNoValue) ins.pop_back();
  for (const auto& o : np.output())
    outs.push_back(o.empty() ? kNoValue : g.add_value(o, DType::Float32, {}));
  while (!outs.empty() && outs.back() == kNoValue) outs.pop_back();
  NodeId id = g.add_node(op, label, std::move(ins), std::move(outs), std::move(attrs),
                         static_cast<int>(opsets.at(domain)));
  upgrade_and_infer(g, *op, id, what);
  if (op->name == "Constant" && domain.empty()) constant_as_initializer(g, id);
}

// Marks the graph's outputs, each a value the model defines; there must be at least one.
void add_outputs(const onnx::GraphProto& gp, Graph& g) {
  for (const auto& vi : gp.output()) {
    ValueId v = g.find_value(vi.name());
    if (v == kNoValue)
      throw UserError(fmt::format("graph output '{}' is never defined", vi.name()));
    g.add_output(v, vi.name());
  }
  if (g.outputs().empty()) throw UserError("the model has no outputs");
}

}  // namespace

ImportResult import_model_proto(const onnx::ModelProto& model, const ImportOptions& opts) {
  ImportResult res;
  if (!model.has_graph()) throw UserError("not an ONNX model: it has no graph");
  std::map<std::string, int64_t> opsets = read_opsets(model, res);
  res.producer = model.producer_name() +
                 (model.producer_version().empty() ? "" : " " + model.producer_version());
  const onnx::GraphProto& gp = model.graph();
  check_node_count(gp);
  check_names_are_utf8(gp);
  check_supported(gp, opsets);

  Graph& g = res.graph;
  g.name = gp.name().empty() ? "main" : gp.name();
  const DataScope scope{opts.model_dir, opts.model_file};
  std::set<std::string> available;
  add_initializers(gp, scope, g, available);
  add_inputs(gp, opts, res, available);
  for (int idx : onnx_node_order(gp, available)) add_node(gp, idx, opsets, scope, g);
  add_outputs(gp, g);
  graph::verify(g);
  return res;
}

namespace {

// Parses `bytes` with messages nested at most `depth` levels (subgraphs in attributes, types in
// types): protobuf's parser recurses once a level.
bool parse_model(std::string_view bytes, int depth, onnx::ModelProto& model) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT32_MAX);
  in.SetRecursionLimit(depth);
  return model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

}  // namespace

ImportResult import_model_bytes(std::string_view bytes, ImportOptions opts) {
  if (bytes.empty()) throw UserError("the model file is empty");
  if (bytes.size() > INT32_MAX)
    throw UnsupportedError("models over 2 GiB must keep their weights as external data");
  onnx::ModelProto model;
  if (!parse_model(bytes, kMaxNesting, model)) {
    // Nested too deep, or not a model at all: a second parse, allowed deeper, tells them apart.
    onnx::ModelProto deeper;
    if (parse_model(bytes, kMaxNesting * 10, deeper))
      throw UserError(fmt::format(
          "the model nests messages more than {} levels deep (subgraphs within subgraphs, "
          "or types within types); braze reads at most {}",
          kMaxNesting, kMaxNesting));
    throw UserError(fmt::format(
        "not an ONNX model: the file does not parse as a ModelProto (truncated, another "
        "format, or nested more than {} levels deep?)",
        kMaxNesting * 10));
  }
  if (!model.has_graph() || model.ir_version() <= 0)
    throw UserError("not an ONNX model: it has no graph or IR version");
  return import_model_proto(model, opts);
}

ImportResult import_model_file(const fs::path& path, ImportOptions opts) {
  std::error_code ec;
  if (const uint64_t size = fs::file_size(path, ec); !ec && size > INT32_MAX)
    throw UnsupportedError(
        fmt::format("{}: the model file is {:.2f} GiB; an ONNX model (a protobuf message) is at "
                    "most 2 GiB, larger models keep their weights as external data",
                    path.string(), static_cast<double>(size) / (1 << 30)));
  std::string bytes = read_file(path);
  if (opts.model_dir.empty())
    opts.model_dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  opts.model_file = path;
  try {
    return import_model_bytes(bytes, std::move(opts));
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(fmt::format("{}: {}", path.string(), e.what()));
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", path.string(), e.what()));
  }
}

onnx::ModelProto parse_model_text(const std::string& text) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  if (!status.IsOK()) throw UserError("ONNX text syntax: " + status.ErrorMessage());
  return model;
}

std::map<std::string, Shape> parse_shape_spec(std::string_view spec) {
  std::map<std::string, Shape> out;
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    // A name may contain ':' (torch exports); the dims follow the last ':'.
    std::string item(
        spec.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    pos = end == std::string_view::npos ? spec.size() : end + 1;
    size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw UserError(fmt::format("--shapes: '{}' is not NAME:DIMS (e.g. input_ids:1x128)", item));
    std::string name = item.substr(0, colon), dims = item.substr(colon + 1);
    if (!dims.empty() && dims.back() == 'x')  // "name:" is a scalar
      throw UserError(
          fmt::format("--shapes: '{}' ends without a dimension (e.g. input_ids:1x128)", item));
    Shape s;
    size_t p = 0;
    while (p < dims.size()) {
      size_t x = dims.find('x', p);
      std::string d = dims.substr(p, x == std::string::npos ? std::string::npos : x - p);
      p = x == std::string::npos ? dims.size() : x + 1;
      if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos || d.size() > 15)
        throw UserError(fmt::format("--shapes: '{}' in '{}' is not a dimension", d, item));
      s.push_back(std::stoll(d));
    }
    checked_numel(s, "--shapes " + name);
    if (!out.emplace(name, s).second)
      throw UserError(fmt::format("--shapes names '{}' twice", name));
  }
  return out;
}

}  // namespace braze::frontend
