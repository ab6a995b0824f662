#include "graph/registry.h"

#include <braze/error.h>

#include <algorithm>
#include <unordered_map>

#include "graph/ops/families.h"

namespace braze::graph {

std::string_view fusion_kind_name(FusionKind k) {
  switch (k) {
    case FusionKind::ElemWise:
      return "elemwise";
    case FusionKind::Broadcast:
      return "broadcast";
    case FusionKind::Injective:
      return "injective";
    case FusionKind::Reduce:
      return "reduce";
    case FusionKind::OutEWiseFusable:
      return "out-ewise-fusable";
    case FusionKind::Opaque:
      return "opaque";
  }
  return "?";
}

const AttrSpec* OpDef::find_attr(std::string_view a) const {
  for (const AttrSpec& s : attrs)
    if (s.name == a) return &s;
  return nullptr;
}

bool OpDef::is_shape_input(int i) const {
  return std::find(shape_inputs.begin(), shape_inputs.end(), i) != shape_inputs.end();
}

namespace {

struct Registry {
  std::vector<OpDef> ops;
  std::vector<const OpDef*> ptrs;
  std::unordered_map<std::string, const OpDef*> by_key;  // "domain::name"

  Registry() {
    register_elementwise_ops(ops);
    register_reduction_ops(ops);
    register_normalization_ops(ops);
    register_matrix_ops(ops);
    register_movement_ops(ops);
    register_indexing_ops(ops);
    register_generator_ops(ops);
    register_conv_pool_ops(ops);
    register_resize_ops(ops);
    register_composite_ops(ops);
    std::sort(ops.begin(), ops.end(), [](const OpDef& a, const OpDef& b) {
      return std::tie(a.domain, a.name) < std::tie(b.domain, b.name);
    });
    for (const OpDef& op : ops) {
      BRAZE_CHECK(op.infer && op.reference, "op " + op.name + " lacks inference or reference");
      bool fresh = by_key.emplace(op.domain + "::" + op.name, &op).second;
      BRAZE_CHECK(fresh, "op registered twice: " + op.name);
      ptrs.push_back(&op);
    }
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

}  // namespace

const OpDef* find_op(std::string_view domain, std::string_view name) {
  std::string d(domain == "ai.onnx" ? "" : domain);
  auto it = registry().by_key.find(d + "::" + std::string(name));
  return it == registry().by_key.end() ? nullptr : it->second;
}

const OpDef& op(std::string_view name) {
  const OpDef* o = find_op("", name);
  BRAZE_CHECK(o != nullptr, "op not in registry: " + std::string(name));
  return *o;
}

const std::vector<const OpDef*>& all_ops() { return registry().ptrs; }

bool is_elementwise(const Node& n) {
  if (!n.op->scalar || n.op->may_be_random) return false;
  if (n.op->kind != FusionKind::ElemWise && n.op->kind != FusionKind::Broadcast) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] != kNoValue) return false;
  return true;
}

ScalarExpr scalar_expr(const Node& n, const std::vector<std::optional<DType>>& arg_dtypes) {
  BRAZE_CHECK(n.op->scalar, n.describe() + " has no scalar expression");
  ScalarBuilder b(arg_dtypes);
  ScalarId root = n.op->scalar(b, n);
  return b.finish(root);
}

}  // namespace braze::graph
