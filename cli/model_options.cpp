#include "cli/model_options.h"

#include <braze/error.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace braze::cli {

void ModelOptions::add_to(CLI::App& cmd, const std::string& what) {
  cmd.add_option("model", model, what)->required();
  cmd.add_option(
      "--shapes", shapes,
      "input shapes, e.g. input_ids:1x128,attention_mask:1x128 (symbolic dims default to 1)");
  cmd.add_option("--dump", dump,
                 "print what the compile's steps make, after each: log (each step's time and "
                 "result), graph (as imported), passes (after each pass), precision (converted "
                 "to fp16 / bf16), plan (the fusion plan), cuda (each kernel's source), tune "
                 "(each timed kernel's candidates), ptx (each kernel's PTX), memory (each "
                 "value's place in the arena); also from BRAZE_DUMP")
      ->delimiter(',')
      ->check(CLI::IsMember(compile_dump_names()));
}

void BuildOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--arch", arch,
                 "GPU architecture to compile for, e.g. sm_90 (default: the device's, else sm_90)");
  cmd.add_flag("--no-cache", no_cache, "compile every kernel, bypassing the kernel cache");
  cmd.add_flag("--no-fuse", no_fuse, "one node per kernel");
  cmd.add_flag("--tune", tune,
               "time each kernel's candidate schedules on the GPU and keep the fastest "
               "(remembered in the tuning cache; without a GPU, heuristics choose)");
  cmd.add_option("--tuning-cache", tuning_cache,
                 "tuning cache file (default: <cache dir>/tuning.json)");
  cmd.add_option("--compile-limit", compile_limit,
                 "seconds one kernel's NVRTC compile may take before it is cancelled "
                 "and the compile fails (default 600)")
      ->check([](const std::string& v) {
        try {
          if (std::stod(v) > 0) return std::string();
        } catch (const std::exception&) {
        }
        return fmt::format("a positive number of seconds, not '{}'", v);
      });
  add_precision_option(cmd, precision)->each([this](const std::string&) {
    precision_given = true;
  });
}

CLI::Option* add_precision_option(CLI::App& cmd, std::string& precision) {
  return cmd
      .add_option("--precision", precision,
                  "fp32 (default): float32 exact, GEMMs on the SIMT kernel; tf32: float32 "
                  "MatMul/Gemm on tensor cores "
                  "with operands rounded to tf32 (10-bit mantissa), fp32 accumulation, everything "
                  "else exact; fp16 or "
                  "bf16: compute a float32 model in half precision (weights and activations "
                  "converted, inputs and "
                  "outputs stay float32, reductions and normalisation statistics in float32)")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}));
}

std::vector<std::string> backend_names() {
  return {"reference", "gpu", "gpu-unfused", "emulator", "emulator-unfused"};
}

BackendChoice backend_choice(const std::string& name) {
  if (name == "reference") return {Backend::Reference, true};
  if (name == "gpu" || name == "gpu-unfused") return {Backend::Gpu, name == "gpu"};
  if (name == "emulator" || name == "emulator-unfused")
    return {Backend::Emulator, name == "emulator"};
  throw UserError(fmt::format("unknown backend '{}' (choose from: {})", name,
                              fmt::join(backend_names(), ", ")));
}

CompileOptions compile_options(const ModelOptions& m, const BuildOptions& b,
                               const std::map<std::string, Shape>& default_shapes) {
  CompileOptions o;
  for (auto& [name, shape] : parse_shapes(m.shapes)) o.shapes[name] = shape;
  for (const auto& [name, shape] : default_shapes) o.shapes.emplace(name, shape);  // --shapes wins
  o.precision = b.precision;
  o.fuse = !b.no_fuse;
  o.arch = b.arch;
  o.tune = b.tune;
  o.use_cache = !b.no_cache;
  o.tuning_cache = b.tuning_cache;
  o.compile_limit_seconds = b.compile_limit;
  for (const std::string& what : compile_dump_names())
    if (m.dumps(what)) o.dump.push_back(what);
  o.dump_to = &std::cout;
  return o;
}

void refuse_engine_file(const ModelOptions& m) {
  if (is_engine_file(m.model))
    throw UserError(fmt::format(
        "{} is a braze engine file; this command takes the ONNX model it was compiled from",
        m.model));
}

void refuse_build_options_for_engine(const ModelOptions& m, const BuildOptions& b,
                                     const std::string& engine_precision) {
  std::vector<std::string> given;
  if (!m.shapes.empty()) given.push_back("--shapes");
  if (!b.arch.empty()) given.push_back("--arch");
  if (b.no_fuse) given.push_back("--no-fuse");
  if (b.tune) given.push_back("--tune");
  if (!b.tuning_cache.empty()) given.push_back("--tuning-cache");
  if (b.compile_limit != CompileOptions{}.compile_limit_seconds) given.push_back("--compile-limit");
  if (b.precision_given && b.precision != engine_precision)
    given.push_back("--precision " + b.precision);
  if (given.empty()) return;
  throw UserError(fmt::format(
      "{} is an engine (compiled at --precision {}): {} take{} effect when a model is compiled; "
      "compile the ONNX model again with {} (braze compile), or give the model itself",
      m.model, engine_precision, fmt::join(given, ", "), given.size() == 1 ? "s" : "",
      given.size() == 1 ? "it" : "them"));
}

bool ModelOptions::dumps(const std::string& what) const {
  if (std::find(dump.begin(), dump.end(), what) != dump.end()) return true;
  const char* env = std::getenv("BRAZE_DUMP");
  if (!env) return false;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ','))
    if (item == what) return true;
  return false;
}

}  // namespace braze::cli
