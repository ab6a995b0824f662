// braze inspect MODEL: the imported graph after the passes — op counts by type, what
// folded away, inputs and outputs, every node with its values' dtypes and shapes — and the
// fusion plan: kernels, values crossing them with their bytes, merges refused and why.
#include <braze/braze.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/model_options.h"

namespace braze::cli {

namespace {

struct InspectOptions {
  ModelOptions model;
  bool json = false;
  bool no_fuse = false;
  std::string dot, html;
  std::string arch, precision = "fp32";  // the plan `compile` builds with them
};

int run_inspect(const InspectOptions& o) {
  refuse_engine_file(o.model);
  BuildOptions b;
  b.precision = o.precision;
  b.arch = o.arch;
  b.no_fuse = o.no_fuse;
  const InspectReport r = inspect(o.model.model, compile_options(o.model, b));
  for (const std::string& n : r.notes) std::cerr << "note: " << n << "\n";
  if (!o.dot.empty()) write_output("--dot", o.dot, r.dot);
  if (!o.html.empty()) write_output("--html", o.html, r.html);
  std::cout << (o.json ? r.json : r.text);
  return 0;
}

}  // namespace

void add_inspect(CLI::App& app, Runner& run) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "show the imported graph after the passes");
  o->model.add_to(*cmd);
  cmd->add_flag("--json", o->json, "print JSON instead of text");
  cmd->add_flag("--no-fuse", o->no_fuse, "show the plan with one node per kernel");
  cmd->add_option("--dot", o->dot,
                  "write the graph with each kernel as a coloured cluster (Graphviz DOT)");
  cmd->add_option("--html", o->html, "write the same as a standalone HTML page");
  cmd->add_option(
      "--arch", o->arch,
      "plan for this GPU architecture, as compile does (default: the device's, else sm_90)");
  add_precision_option(*cmd, o->precision);
  cmd->callback([o, &run] { run = [o] { return run_inspect(*o); }; });
}

}  // namespace braze::cli
