#include "frontend/model_checks.h"

#include <braze/error.h>

#include <onnx/defs/schema.h>

#include <functional>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "graph/text.h"

namespace braze::frontend {

namespace {

void check_utf8(std::string_view s, const std::function<std::string()>& what) {
  size_t at = graph::invalid_utf8_at(s);
  if (at == std::string_view::npos) return;
  throw UserError(fmt::format("{} is not valid UTF-8 (byte 0x{:02X} at offset {})", what(),
                              static_cast<unsigned char>(s[at]), at));
}

}  // namespace

void check_names_are_utf8(const onnx::GraphProto& g) {
  check_utf8(g.name(), [] { return std::string("the graph's name"); });
  auto values = [&](const auto& list, const char* kind) {
    for (int i = 0; i < list.size(); ++i)
      check_utf8(list.Get(i).name(), [&] { return fmt::format("the name of {} {}", kind, i); });
  };
  values(g.input(), "graph input");
  values(g.output(), "graph output");
  values(g.value_info(), "value_info entry");
  values(g.initializer(), "initializer");
  for (int n = 0; n < g.node_size(); ++n) {
    const onnx::NodeProto& node = g.node(n);
    auto in_node = [n](const std::string& what) { return fmt::format("node {}: {}", n, what); };
    check_utf8(node.name(), [&] { return in_node("its name"); });
    check_utf8(node.op_type(), [&] { return in_node("its op_type"); });
    check_utf8(node.domain(), [&] { return in_node("its domain"); });
    for (int i = 0; i < node.input_size(); ++i)
      check_utf8(node.input(i), [&] { return in_node(fmt::format("input {}", i)); });
    for (int i = 0; i < node.output_size(); ++i)
      check_utf8(node.output(i), [&] { return in_node(fmt::format("output {}", i)); });
    for (int a = 0; a < node.attribute_size(); ++a) {
      const onnx::AttributeProto& attr = node.attribute(a);
      check_utf8(attr.name(), [&] { return in_node(fmt::format("the name of attribute {}", a)); });
      check_utf8(attr.s(),
                 [&] { return in_node(fmt::format("the value of attribute '{}'", attr.name())); });
      for (int k = 0; k < attr.strings_size(); ++k)
        check_utf8(attr.strings(k), [&] {
          return in_node(fmt::format("value {} of attribute '{}'", k, attr.name()));
        });
    }
  }
}

namespace {

int64_t count_nodes(const onnx::GraphProto& g) {
  int64_t n = g.node_size();
  for (const onnx::NodeProto& node : g.node())
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) n += count_nodes(a.g());
      for (const onnx::GraphProto& sub : a.graphs()) n += count_nodes(sub);
    }
  return n;
}

}  // namespace

void check_node_count(const onnx::GraphProto& g) {
  const int64_t n = count_nodes(g);
  if (n > kMaxNodes)
    throw UserError(fmt::format(
        "the model has {} nodes (subgraphs included); braze imports at most {}", n, kMaxNodes));
}

void check_attributes(const onnx::NodeProto& node, const graph::OpDef& op, int opset,
                      const std::string& what) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(
      node.op_type(), opset, op.domain.empty() ? onnx::ONNX_DOMAIN : op.domain);
  std::set<std::string> known;
  for (const graph::AttrSpec& spec : op.attrs) known.insert(spec.name);
  if (schema)
    for (const auto& [name, attr] : schema->attributes()) known.insert(name);
  std::set<std::string> seen;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name().empty()) throw UserError(fmt::format("{}: an attribute has no name", what));
    if (!seen.insert(a.name()).second)
      throw UserError(fmt::format("{}: attribute '{}' is given twice", what, a.name()));
    if (!known.count(a.name()))
      throw UserError(fmt::format(
          "{}: unknown attribute '{}' ({} at opset {} takes {})", what, a.name(), node.op_type(),
          opset, known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", "))));
  }
}

}  // namespace braze::frontend
