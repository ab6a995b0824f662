#include "codegen/codegen.h"

#include <braze/error.h>
#include <xxhash.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "codegen/attention.h"
#include "codegen/device_sources.h"
#include "codegen/lowering.h"
#include "graph/registry.h"

namespace braze::codegen {

namespace {

// Appends the progress parameters (Kernel::kProgressParams) to the kernel's signature and
// makes braze_note_step (prelude.cuh) its body's first statement.
std::string with_step_note(const std::string& code) {
  const std::string head = "KERNEL_NAME(";
  size_t open = code.find(head);
  BRAZE_CHECK(open != std::string::npos && code.find(head, open + 1) == std::string::npos,
              "a generated kernel has one KERNEL_NAME(…) signature");
  size_t close = open + head.size();
  for (int depth = 1; depth > 0; ++close) {
    BRAZE_CHECK(close < code.size(), "a generated kernel's parameter list is closed");
    depth += (code[close] == '(') - (code[close] == ')');
  }
  --close;  // the list's ')'
  size_t brace = code.find_first_not_of(" \n", close + 1);
  BRAZE_CHECK(brace != std::string::npos && code[brace] == '{',
              "a generated kernel's body follows its signature");
  std::string params = code.substr(open + head.size(), close - open - head.size());
  bool none = params.find_first_not_of(" \n") == std::string::npos;
  return code.substr(0, close) + (none ? "" : ", ") +
         "unsigned* braze_progress, unsigned braze_step" + code.substr(close, brace + 1 - close) +
         "\n  braze_note_step(braze_progress, braze_step);" + code.substr(brace + 1);
}

}  // namespace

void finish_kernel(const graph::Graph& g, Kernel& k, const std::string& generated,
                   unsigned helpers) {
  const std::string code = with_step_note(generated);
  std::vector<std::string> ops;
  std::string covers;
  for (graph::NodeId id : k.nodes) {
    const graph::Node& n = g.node(id);
    if (std::find(ops.begin(), ops.end(), n.op_type()) == ops.end()) ops.push_back(n.op_type());
    covers += fmt::format("{}'{}' ({})", covers.empty() ? "" : ", ", n.name, n.op_type());
  }
  std::string op_part;
  for (size_t i = 0; i < ops.size() && i < 3; ++i) op_part += (i ? "_" : "") + ops[i];
  if (ops.size() > 3) op_part += "_etc";
  std::string source = std::string(device_prelude()) + std::string(device_ops());
  if (helpers & kReduceHelpers) source += std::string(device_reduce());
  if (helpers & kMmaHelpers) source += std::string(device_mma());
  if (helpers & kSimtGemmHelpers) source += std::string(device_simt_gemm());
  if (helpers & kSimtAsyncHelpers) source += std::string(device_simt_async());
  if (helpers & kWgmmaHelpers) source += std::string(device_wgmma());
  if (helpers & kAttentionHelpers) source += std::string(device_attention());
  if (helpers & kAttentionWgmmaHelpers) source += std::string(device_attention_wgmma());
  // The name hashes the device helpers too, so that the tuning cache (keyed by name) does
  // not keep a winner timed against helpers that have since changed.
  uint64_t h =
      XXH3_64bits_withSeed(code.data(), code.size(), XXH3_64bits(source.data(), source.size()));
  k.name = fmt::format("braze_{}_{}_{:08x}", fusion::group_kind_name(k.kind), op_part,
                       static_cast<uint32_t>(h));
  std::string body = code;
  for (size_t p = body.find("KERNEL_NAME"); p != std::string::npos; p = body.find("KERNEL_NAME", p))
    body.replace(p, 11, k.name);
  k.source = std::move(source);
  k.source += fmt::format("// ---- generated ----\n// {}: {} kernel for ONNX nodes {}\n", k.name,
                          fusion::group_kind_name(k.kind), covers);
  k.source += body;
}

std::vector<Tunables> candidates(const graph::Graph& g, const fusion::Group& group,
                                 const Target& target) {
  for (graph::NodeId id : group.nodes)
    for (graph::ValueId v : g.node(id).outputs)
      if (v != graph::kNoValue && !g.value(v).has_shape) return {};
  bool rows = std::any_of(group.nodes.begin(), group.nodes.end(), [&](graph::NodeId id) {
    return static_cast<bool>(lowering(g.node(id)).row);
  });
  if (group.kind == fusion::GroupKind::Gemm) return gemm_candidates(g, group, target);
  if (group.kind == fusion::GroupKind::Attention) return attention_candidates(g, group, target);
  if (rows) return reduction_candidates(g, group);
  if (group.outputs.empty()) return {};
  return pointwise_candidates(g, group);
}

std::vector<SettledGroup> settle_plan(const graph::Graph& g, fusion::Plan plan,
                                      const Target& target) {
  std::vector<SettledGroup> out;
  std::shared_ptr<const graph::Users> users;
  for (fusion::Group& grp : plan.groups) {
    GroupCode gc = generate(g, grp, target);
    if (gc.kernel || grp.nodes.size() < 2) {
      out.push_back({std::move(grp), std::move(gc), ""});
      continue;
    }
    const std::string why =
        fmt::format("fused group of {} nodes split: {}", grp.nodes.size(), gc.fallback_reason);
    if (!users) users = g.shared_users();
    for (graph::NodeId id : grp.nodes) {
      fusion::Group single;
      single.kind = fusion::kind_of(g.node(id));
      single.nodes = {id};
      fusion::compute_boundary(g, single, *users);
      GroupCode one = generate(g, single, target);
      out.push_back({std::move(single), std::move(one), why});
    }
  }
  return out;
}

GroupCode generate(const graph::Graph& g, const fusion::Group& group, const Target& target,
                   const Tunables* tune) {
  GroupCode out;
  for (graph::NodeId id : group.nodes)
    for (graph::ValueId v : g.node(id).outputs)
      if (v != graph::kNoValue && !g.value(v).has_shape) {
        out.fallback_reason = fmt::format("%{} has a data-dependent shape", g.value(v).name);
        return out;
      }
  auto per_element = [&] {
    return std::all_of(group.nodes.begin(), group.nodes.end(), [&](graph::NodeId id) {
      const graph::Node& n = g.node(id);
      return lowering(n).index || lowering(n).expr;
    });
  };
  bool rows = std::any_of(group.nodes.begin(), group.nodes.end(), [&](graph::NodeId id) {
    return static_cast<bool>(lowering(g.node(id)).row);
  });
  switch (group.kind) {
    case fusion::GroupKind::Gemm:
      out.kernel = gemm_kernel(g, group, target, &out.fallback_reason, tune);
      break;
    case fusion::GroupKind::Attention:
      out.kernel = attention_kernel(g, group, target, &out.fallback_reason, tune);
      break;
    case fusion::GroupKind::Pointwise:
    case fusion::GroupKind::Reduction:
    case fusion::GroupKind::Opaque:
      // A row program runs on the reduction schedule; ops that say how to compute one
      // output element (element-wise, index maps, loops: pooling, convolution, Resize …)
      // run as pointwise.
      if (rows) out.kernel = reduction_kernel(g, group, target, &out.fallback_reason, tune);
      if (!out.kernel && per_element())
        out.kernel =
            pointwise_kernel(g, group, target, &out.fallback_reason, rows ? nullptr : tune);
      if (!out.kernel && out.fallback_reason.empty()) {
        // Name the node codegen has no lowering for (a CPU-reference op), else the first.
        graph::NodeId culprit = group.nodes[0];
        for (graph::NodeId id : group.nodes) {
          const Lowering& l = lowering(g.node(id));
          if (!l.index && !l.expr && !l.row) {
            culprit = id;
            break;
          }
        }
        out.fallback_reason = fmt::format("{} has no GPU kernel", g.node(culprit).describe());
      }
      break;
  }
  if (out.kernel) out.fallback_reason.clear();
  return out;
}

}  // namespace braze::codegen
