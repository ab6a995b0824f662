#include "api/compile_script.h"

#include <braze/error.h>

#include <algorithm>
#include <chrono>
#include <ostream>
#include <utility>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "graph/passes/pipeline.h"
#include "graph/passes/precision.h"
#include "graph/passes/weights_k_major.h"
#include "runtime/gpu/cuda_driver.h"

namespace braze::api {

const std::vector<std::string>& dump_names() {
  static const std::vector<std::string> names = {"log",  "graph", "passes", "precision", "plan",
                                                 "cuda", "tune",  "ptx",    "memory"};
  return names;
}

namespace {

using Clock = std::chrono::steady_clock;

// Times the steps: each ends with what it made, logged (and written at --dump=log).
class StepLog {
 public:
  StepLog(std::vector<CompileStep>& log, std::ostream* out) : log_(log), out_(out) {}
  void end(const char* name, std::string summary) {
    const Clock::time_point now = Clock::now();
    CompileStep step{name, std::chrono::duration<double>(now - start_).count(), std::move(summary)};
    start_ = now;
    if (out_)
      *out_ << fmt::format("== step {} {}: {:.3f} s: {} ==\n", log_.size() + 1, step.name,
                           step.seconds, step.summary);
    log_.push_back(std::move(step));
  }
  double last_seconds() const { return log_.empty() ? 0 : log_.back().seconds; }

 private:
  std::vector<CompileStep>& log_;
  std::ostream* out_;
  Clock::time_point start_ = Clock::now();
};

// The stream for dump `what` after `step` (its header written), or null when not asked.
std::ostream* dump_after(const CompileOptions& o, const char* what, const char* step) {
  if (!wants_dump(o, what)) return nullptr;
  *o.dump_to << "== after " << step << " ==\n";
  return o.dump_to;
}

void check_options(const CompileOptions& o) {
  check_precision(o.precision);
  for (const std::string& d : o.dump)
    if (std::find(dump_names().begin(), dump_names().end(), d) == dump_names().end())
      throw UserError(
          fmt::format("dump '{}': expected one of {}", d, fmt::join(dump_names(), ", ")));
  if (!(o.compile_limit_seconds > 0))
    throw UserError(fmt::format("the compile limit must be a positive number of seconds, not {}",
                                o.compile_limit_seconds));
}

std::string plural(size_t n, const char* what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

size_t count_ops(const std::map<std::string, int>& ops) {
  size_t n = 0;
  for (const auto& [op, k] : ops) n += static_cast<size_t>(k);
  return n;
}

frontend::ImportResult import_source(const ModelSource& src, const CompileOptions& o) {
  frontend::ImportOptions io;
  io.shapes = {o.shapes.begin(), o.shapes.end()};
  if (src.graph) {
    frontend::ImportResult r;
    r.graph = *src.graph;
    return r;
  }
  if (!src.path.empty()) {
    if (gpu::is_engine_file(src.path))
      throw UserError(fmt::format("{} is a braze engine file, not an ONNX model", src.path));
    return frontend::import_model_file(src.path, io);
  }
  io.model_dir = src.model_dir;
  return frontend::import_model_bytes(src.bytes, io);
}

std::string import_step(const ModelSource& src, const CompileOptions& o, Script& s) {
  frontend::ImportResult r = import_source(src, o);
  s.producer = std::move(r.producer);
  s.opset = r.opset;
  s.notes = std::move(r.notes);
  s.graph = std::move(r.graph);
  s.imported_ops = graph::passes::op_counts(s.graph);
  if (std::ostream* d = dump_after(o, "graph", "import")) *d << s.graph;
  std::string summary = plural(count_ops(s.imported_ops), "node");
  if (src.graph) return summary + ", given as a graph";
  if (s.opset) summary += fmt::format(", opset {}", s.opset);
  if (!s.producer.empty()) summary += ", from " + s.producer;
  return summary;
}

std::string passes_step(const CompileOptions& o, Script& s) {
  graph::passes::PipelineOptions po;
  if (wants_dump(o, "passes")) po.dump = o.dump_to;
  graph::passes::PipelineReport r = graph::passes::run_pipeline(s.graph, po);
  s.pass_log = std::move(r.log);
  return fmt::format(
      "{} after {}, {}", plural(count_ops(graph::passes::op_counts(s.graph)), "node"),
      plural(static_cast<size_t>(r.rounds), "round"), plural(s.pass_log.size(), "rewrite"));
}

std::string precision_step(const CompileOptions& o, Script& s) {
  const DType to = graph::passes::precision_dtype(o.precision);
  if (to == DType::Float32 && o.precision != "tf32") return "fp32: unchanged";
  if (to == DType::Float32) {
    const int weights = graph::passes::store_weights_k_major_as(s.graph, DType::Float32);
    return fmt::format(
        "tf32: float32 graph, products on tensor cores in tf32, {} with k-major "
        "weights",
        plural(static_cast<size_t>(weights), "product"));
  }
  const int values = graph::passes::convert_precision(s.graph, to);
  graph::passes::run_pipeline(s.graph);
  if (std::ostream* d = dump_after(o, "precision", "precision")) *d << s.graph;
  return fmt::format("{}: {} of {}, inputs and outputs kept float32", o.precision,
                     plural(static_cast<size_t>(values), "value"), dtype_name(to));
}

gpu::EngineOptions engine_options(const ScriptOptions& so) {
  const CompileOptions& o = so.compile;
  gpu::EngineOptions e = gpu::default_engine_options(o.arch);
  if (so.target) e.target = *so.target;
  e.target.tf32 = tf32_gemms(o.precision);
  e.fuse = o.fuse;
  e.use_cache = o.use_cache;
  e.want_ptx = wants_dump(o, "ptx");
  e.compile_limit_seconds = o.compile_limit_seconds;
  e.tuning_cache = o.tuning_cache;
  e.compile = o.kernels;
  e.tune = o.tune && o.kernels;
  e.candidate = so.candidate;
  return e;
}

std::string plan_step(const CompileOptions& o, Script& s) {
  s.plan = codegen::plan_for(s.graph, o.fuse, s.engine_options.target);
  if (std::ostream* d = dump_after(o, "plan", "plan")) fusion::write_plan(*d, s.graph, s.plan);
  size_t fused = 0;
  for (const fusion::Group& g : s.plan.groups) fused += g.nodes.size() > 1 ? 1 : 0;
  return fmt::format("{} ({} of more than one node), {} refused",
                     plural(s.plan.groups.size(), "group"), fused,
                     plural(s.plan.refused.size(), "merge"));
}

std::string codegen_step(const CompileOptions& o, Script& s) {
  const codegen::Target& target = s.engine_options.target;
  s.steps = gpu::generate_steps(s.graph, s.plan, target);
  gpu::use_candidate(s.graph, s.steps, target, s.engine_options.candidate);
  if (wants_dump(o, "cuda")) {
    *o.dump_to << "== after codegen ==\n";
    write_kernel_dumps(s.steps, true, false, *o.dump_to);
  }
  size_t kernels = 0, split = 0;
  for (const gpu::Step& st : s.steps) {
    kernels += st.kernel ? 1 : 0;
    split += st.split_note.empty() ? 0 : 1;
  }
  return fmt::format("{}, {} on the CPU reference, {} split", plural(kernels, "kernel"),
                     plural(s.steps.size() - kernels, "group"), plural(split, "fused group"));
}

std::string tune_step(const CompileOptions& o, Script& s) {
  if (!s.engine_options.tune) return "heuristics (tuning not asked for)";
  if (!gpu::gpu_available()) {
    const std::string why = gpu::gpu_unavailable_reason();
    s.notes.push_back(fmt::format("--tune needs a GPU ({}): heuristics choose", why));
    return "heuristics: no GPU (" + why + ")";
  }
  gpu::tune_steps(s.graph, s.steps, s.engine_options, &s.report);
  if (std::ostream* d = dump_after(o, "tune", "tune"))
    for (const std::string& line : s.report.tuning) *d << line << "\n";
  return fmt::format("{} timed, {} from the tuning cache", plural(s.report.tuned, "kernel"),
                     s.report.tuned_cached);
}

std::string compile_step(const CompileOptions& o, Script& s) {
  if (!o.kernels) return "not compiled (CompileOptions::kernels false)";
  const gpu::EngineOptions& e = s.engine_options;
  gpu::Engine::compile_steps(s.steps, e.arch, e, &s.report);
  if (wants_dump(o, "ptx")) {
    *o.dump_to << "== after compile ==\n";
    write_kernel_dumps(s.steps, false, true, *o.dump_to);
  }
  return fmt::format("{} for {}: {} compiled, {} from the kernel cache",
                     plural(s.report.distinct, "distinct kernel"), e.arch.name(), s.report.compiled,
                     s.report.cache_hits);
}

void write_memory_plan(std::ostream& os, const gpu::Engine& e) {
  const graph::Graph& g = e.graph();
  for (size_t v = 0; v < e.slots().size(); ++v) {
    const gpu::Slot& slot = e.slots()[v];
    if (slot.where != gpu::Slot::Arena) continue;
    os << fmt::format("  {:>12} {:>12} %{}\n", slot.offset, slot.bytes,
                      g.value(static_cast<graph::ValueId>(v)).name);
  }
}

std::string assemble_step(const CompileOptions& o, Script& s) {
  gpu::count_steps(s.steps, s.report);
  s.engine = gpu::Engine::assemble(std::move(s.graph), std::move(s.steps), s.engine_options.arch);
  if (std::ostream* d = dump_after(o, "memory", "assemble")) {
    *d << "  arena offset        bytes value\n";
    write_memory_plan(*d, *s.engine);
  }
  const gpu::Engine& e = *s.engine;
  return fmt::format("arena {} for {} of values, weights {}",
                     format_bytes(static_cast<double>(e.arena_bytes())),
                     format_bytes(static_cast<double>(e.intermediate_bytes())),
                     format_bytes(static_cast<double>(e.weights_bytes())));
}

}  // namespace

Script compile_script(const ModelSource& src, const ScriptOptions& so) {
  const CompileOptions& o = so.compile;
  check_options(o);
  Script s;
  StepLog log(s.log, wants_dump(o, "log") ? o.dump_to : nullptr);
  log.end("import", import_step(src, o, s));
  log.end("passes", passes_step(o, s));
  s.engine_options = engine_options(so);
  log.end("precision", precision_step(o, s));
  log.end("plan", plan_step(o, s));
  if (so.through == Through::Plan) return s;
  log.end("codegen", codegen_step(o, s));
  s.report.codegen_seconds = log.last_seconds();
  if (so.through == Through::Codegen) return s;
  log.end("tune", tune_step(o, s));
  log.end("compile", compile_step(o, s));
  log.end("assemble", assemble_step(o, s));
  return s;
}

}  // namespace braze::api
