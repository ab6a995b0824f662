// The compile script: one function takes a model to an engine, one step after another, and
// every way in — braze::Engine::compile, braze::inspect, the CLI on them, conformance's GPU
// and emulator backends, tests — runs it:
//
//   1. import     the ONNX model as a graph (frontend/)             --dump=graph
//   2. passes     the graph passes to a fixed point (graph/passes)  --dump=passes (each pass)
//   3. precision  fp16 / bf16: the graph converted, passes again    --dump=precision
//   4. plan       the fusion plan, asking codegen what it takes     --dump=plan
//   5. codegen    each group's kernel; a group no schedule takes is split (codegen/)
//                                                                   --dump=cuda
//   6. tune       tunables timed on the GPU or from the tuning cache --dump=tune
//   7. compile    NVRTC through the kernel cache                    --dump=ptx
//   8. assemble   the memory plan: every value's place in the arena --dump=memory
//
// Each step's seconds and what it made are logged (Script::log; --dump=log writes each line
// as its step ends), each dump follows a "== after <step> ==" line. Internal (not installed).
#pragma once

#include <braze/braze.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/pipeline.h"
#include "codegen/kernel.h"
#include "fusion/plan.h"
#include "graph/ir.h"
#include "runtime/gpu/engine.h"

namespace braze::api {

// The dumps CompileOptions::dump may name, in the order of the steps that write them.
const std::vector<std::string>& dump_names();

// How far the script goes: inspect stops after codegen, the emulator too (it compiles the
// kernels itself); an engine needs every step.
enum class Through { Plan, Codegen, Engine };

struct ScriptOptions {
  CompileOptions compile;
  Through through = Through::Engine;
  // The target kernels are planned and generated for; default: compile.arch's (the device's,
  // else sm_90) with the device's SM count. The emulator gives its own.
  std::optional<codegen::Target> target;
  int candidate = -1;  // tests of the search space (gpu::use_candidate)
};

struct Script {
  std::string producer;            // "pytorch 2.11" …
  int64_t opset = 0;               // default-domain opset
  std::vector<std::string> notes;  // the import's (dims defaulted …), --tune without a GPU …
  std::map<std::string, int> imported_ops;  // op counts as imported
  std::vector<std::string> pass_log;        // "round 1: fold_constants changed 12 nodes" …
  graph::Graph graph;                       // as the steps so far left it: at the precision after 3
  gpu::EngineOptions engine_options;
  fusion::Plan plan;
  std::vector<gpu::Step> steps;         // after codegen; tuned and compiled by 6 and 7
  std::shared_ptr<gpu::Engine> engine;  // after assemble, which moves graph and steps into it
  gpu::BuildReport report;
  std::vector<CompileStep> log;  // the steps run, in order
};

// Runs the script on `src` (an ONNX file, bytes, or an imported graph) as far as asked.
// UserError for a model braze cannot read or compile, naming what and where.
Script compile_script(const ModelSource& src, const ScriptOptions& options);

}  // namespace braze::api
