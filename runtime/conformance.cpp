#include "runtime/conformance.h"

#include <braze/error.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "frontend/onnx_import.h"
#include "graph/infer.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"

namespace braze::runtime {

namespace fs = std::filesystem;

std::string_view status_name(CaseResult::Status s) {
  switch (s) {
    case CaseResult::Status::Pass:
      return "PASS";
    case CaseResult::Status::Fail:
      return "FAIL";
    case CaseResult::Status::Skip:
      return "SKIP";
  }
  return "?";
}

std::vector<fs::path> find_cases(const std::vector<fs::path>& roots) {
  std::vector<fs::path> out;
  for (const fs::path& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec))
      throw UserError(fmt::format("{}: not a folder", root.string()));
    if (fs::exists(root / "model.onnx")) {
      out.push_back(root);
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) found.push_back(e.path());
    if (found.empty())
      throw UserError(fmt::format("{}: holds no test cases (no model.onnx in it or its folders)",
                                  root.string()));
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

namespace {

struct SetResult {
  std::string failure;  // empty when every output matched
  std::string notes;
  std::vector<std::string> fallbacks;
};

// ONNX 1.12's test generator stores bfloat16 tensors as uint16 bit patterns; read them as
// the bfloat16 the model declares.
Tensor as_declared(Tensor t, DType declared) {
  if (declared == DType::BFloat16 && t.dtype() == DType::UInt16) {
    Tensor b(DType::BFloat16, t.shape());
    if (t.nbytes()) std::memcpy(b.raw(), t.raw(), t.nbytes());
    return b;
  }
  return t;
}

}  // namespace

PreparedSet prepare_data_set(const fs::path& model, const fs::path& set) {
  // A first import learns the input names and types; the second specialises to the data's
  // shapes, which win over the model's declared ones (the data is what is checked).
  std::vector<std::string> names;
  std::vector<DType> in_types, out_types;
  {
    frontend::ImportResult probe = frontend::import_model_file(model);
    for (graph::ValueId v : probe.graph.inputs()) {
      names.push_back(probe.graph.value(v).name);
      in_types.push_back(probe.graph.value(v).dtype);
    }
    for (const auto& o : probe.graph.outputs())
      out_types.push_back(probe.graph.value(o.value).dtype);
  }
  std::vector<Tensor> given = match_inputs(names, read_input_files({set}, "input_", true));
  std::vector<InputFile> expected = read_input_files({set}, "output_");
  for (size_t i = 0; i < given.size(); ++i) given[i] = as_declared(given[i], in_types[i]);
  PreparedSet p;
  for (size_t i = 0; i < expected.size(); ++i)
    p.expected.push_back(i < out_types.size() ? as_declared(expected[i].tensor, out_types[i])
                                              : expected[i].tensor);
  frontend::ImportOptions opts;
  opts.shapes_override_model = true;
  for (size_t i = 0; i < names.size(); ++i) opts.shapes[names[i]] = given[i].shape();
  p.graph = std::move(frontend::import_model_file(model, opts).graph);
  graph::Graph& g = p.graph;

  std::map<std::string, Tensor> by_name;
  for (size_t i = 0; i < names.size(); ++i) by_name[names[i]] = given[i];
  for (graph::ValueId v : graph::shape_arg_inputs(g)) {
    std::string nm = g.value(v).name;
    graph::bind_input(g, v, by_name.at(nm));
    by_name.erase(nm);
    p.notes += (p.notes.empty() ? "specialised on " : ", ") + nm;
  }
  graph::passes::run_pipeline(g);
  for (graph::ValueId v : g.inputs()) p.inputs.push_back(by_name.at(g.value(v).name));
  return p;
}

namespace {

SetResult run_data_set(const fs::path& model, const fs::path& set, const BackendFn& backend) {
  PreparedSet p = prepare_data_set(model, set);
  const graph::Graph& g = p.graph;
  BackendRun run = backend(g, p.inputs);
  const std::vector<Tensor>& actual = run.outputs;
  if (actual.size() != p.expected.size())
    return {fmt::format("{}: the model gives {} outputs, {} expected", set.filename().string(),
                        actual.size(), p.expected.size()),
            p.notes, run.fallbacks};
  for (size_t i = 0; i < actual.size(); ++i) {
    Comparison c = compare(actual[i], p.expected[i], default_tolerance(p.expected[i].dtype()));
    if (!c.ok)
      return {fmt::format("{}: output {} '{}': {}", set.filename().string(), i, g.outputs()[i].name,
                          c.summary(actual[i], p.expected[i])),
              p.notes, run.fallbacks};
  }
  return {"", p.notes, run.fallbacks};
}

}  // namespace

CaseResult run_case(const fs::path& dir, const BackendFn& backend) {
  CaseResult r;
  r.name = dir.filename().string();
  auto t0 = std::chrono::steady_clock::now();
  try {
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
        sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) throw UserError(dir.string() + ": no test_data_set_* folders");
    for (const fs::path& set : sets) {
      SetResult sr = run_data_set(dir / "model.onnx", set, backend);
      r.detail = sr.notes;
      r.fallbacks = sr.fallbacks;
      if (!sr.failure.empty()) {
        r.status = CaseResult::Status::Fail;
        r.detail = sr.failure;
        break;
      }
    }
  } catch (const UnsupportedError& e) {
    r.status = CaseResult::Status::Skip;
    r.detail = e.what();
  } catch (const UserError& e) {
    r.status = CaseResult::Status::Fail;
    r.detail = e.what();
  } catch (const InternalError& e) {
    r.status = CaseResult::Status::Fail;
    r.detail = e.what();
  } catch (const std::exception& e) {
    r.status = CaseResult::Status::Fail;
    r.detail = std::string("unexpected error: ") + e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace braze::runtime
