#include "cli/gpu_build.h"

#include <algorithm>
#include <iostream>

#include <braze/error.h>

#include <fmt/format.h>

namespace braze::cli {

BuiltEngine build_engine(const graph::Graph& g, const BuildOptions& build, const ModelOptions& model) {
  api::BuildRequest r;
  r.arch = build.arch;
  r.precision = build.precision;
  r.fuse = !build.no_fuse;
  r.use_cache = !build.no_cache;
  r.tune = build.tune;
  r.tuning_cache = build.tuning_cache;
  r.want_ptx = model.dumps("ptx");
  api::Built built = api::build(g, r);
  for (const std::string& n : built.notes) std::cerr << "note: " << n << "\n";
  BuiltEngine out{std::move(built.engine), std::move(built.report)};
  if (model.dumps("cuda") || model.dumps("ptx"))
    api::write_kernel_dumps(*out.engine, model.dumps("cuda"), model.dumps("ptx"), std::cout);
  return out;
}

void print_build_summary(const gpu::Engine& e, const gpu::BuildReport* r) {
  print_build_summary(api::report_of(e, r), e.arch().name(), r != nullptr);
}

std::vector<TensorInfo> input_infos(const graph::Graph& g) {
  std::vector<TensorInfo> out;
  for (graph::ValueId id : g.inputs()) {
    const graph::Value& v = g.value(id);
    if (!v.has_shape) throw UserError(fmt::format("input '{}' has no static shape; give it with --shapes", v.name));
    out.push_back({v.name, v.dtype, v.shape});
  }
  return out;
}

void print_fallbacks(const gpu::Engine& e) {
  for (const gpu::Step& s : e.steps())
    if (!s.kernel) std::cerr << "note: runs on the CPU reference: " << s.fallback_reason << "\n";
}

}  // namespace braze::cli
