// The compile script (api/compile_script.h): its steps in order, each logged, stopping where
// asked; each dump after its step; a graph given instead of a file; bad dump names.
#include "api/compile_script.h"

#include <braze/error.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "frontend/onnx_import.h"

namespace braze::api {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(BRAZE_SOURCE_DIR) / "models" / "bert_tiny_dynamo" / "model.onnx";

std::vector<std::string> step_names(const Script& s) {
  std::vector<std::string> out;
  for (const CompileStep& st : s.log) out.push_back(st.name);
  return out;
}

ScriptOptions no_nvrtc(Through through) {
  ScriptOptions so;
  so.compile.kernels = false;  // every step runs; compile says it compiled nothing
  so.through = through;
  return so;
}

ModelSource file(const fs::path& p) {
  ModelSource src;
  src.path = p.string();
  return src;
}

TEST(CompileScript, RunsEveryStepInOrderAndStopsWhereAsked) {
  const Script all = compile_script(file(kModel), no_nvrtc(Through::Engine));
  EXPECT_EQ(step_names(all), (std::vector<std::string>{"import", "passes", "precision", "plan",
                                                       "codegen", "tune", "compile", "assemble"}));
  for (const CompileStep& st : all.log) {
    EXPECT_GE(st.seconds, 0) << st.name;
    EXPECT_FALSE(st.summary.empty()) << st.name;
  }
  ASSERT_TRUE(all.engine);
  EXPECT_EQ(all.engine->steps().size(), all.plan.groups.size());
  EXPECT_EQ(all.report.kernels + all.report.fallbacks, all.plan.groups.size());
  EXPECT_NE(all.log[0].summary.find("opset"), std::string::npos) << all.log[0].summary;

  const Script planned = compile_script(file(kModel), no_nvrtc(Through::Plan));
  EXPECT_EQ(step_names(planned).back(), "plan");
  EXPECT_TRUE(planned.steps.empty());
  EXPECT_EQ(planned.plan.groups.size(), all.plan.groups.size());
  const Script generated = compile_script(file(kModel), no_nvrtc(Through::Codegen));
  EXPECT_EQ(step_names(generated).back(), "codegen");
  EXPECT_EQ(generated.steps.size(), all.plan.groups.size());
  EXPECT_FALSE(generated.engine);
}

TEST(CompileScript, EachDumpFollowsItsStepInTheScriptsOrder) {
  std::ostringstream os;
  ScriptOptions so = no_nvrtc(Through::Engine);
  so.compile.precision = "fp16";
  so.compile.dump = {"memory", "plan", "precision", "graph", "log", "cuda"};  // any order
  so.compile.dump_to = &os;
  compile_script(file(kModel), so);
  const std::string out = os.str();
  std::vector<size_t> at;
  for (const char* mark : {"== after import ==", "== step 1 import", "== step 2 passes",
                           "== after precision ==", "== step 3 precision", "== after plan ==",
                           "== step 4 plan", "== after codegen ==", "== cuda braze_",
                           "== step 5 codegen", "== after assemble ==", "== step 8 assemble"}) {
    at.push_back(out.find(mark));
    ASSERT_NE(at.back(), std::string::npos) << mark << " missing from:\n" << out.substr(0, 2000);
  }
  for (size_t i = 1; i < at.size(); ++i) EXPECT_LT(at[i - 1], at[i]) << i;
  EXPECT_NE(out.find("group 0 "), std::string::npos);
  EXPECT_NE(out.find("float16"), std::string::npos) << "the precision dump shows the new types";
  EXPECT_NE(out.find("%layer_norm"), std::string::npos) << "the memory dump names values";
  EXPECT_EQ(out.find("== after compile =="), std::string::npos) << "ptx was not asked for";
}

TEST(CompileScript, AGraphImportedAlreadyStartsAtThePasses) {
  const frontend::ImportResult r = frontend::import_model_file(kModel);
  ModelSource src;
  src.graph = &r.graph;
  const Script s = compile_script(src, no_nvrtc(Through::Codegen));
  EXPECT_NE(s.log[0].summary.find("given as a graph"), std::string::npos) << s.log[0].summary;
  const Script from_file = compile_script(file(kModel), no_nvrtc(Through::Codegen));
  ASSERT_EQ(s.steps.size(), from_file.steps.size());
  for (size_t i = 0; i < s.steps.size(); ++i)
    EXPECT_EQ(s.steps[i].kernel ? s.steps[i].kernel->name : "",
              from_file.steps[i].kernel ? from_file.steps[i].kernel->name : "");
}

TEST(CompileScript, BadOptionsAreUserErrorsNamingTheChoices) {
  ScriptOptions so = no_nvrtc(Through::Plan);
  so.compile.dump = {"sass"};
  try {
    compile_script(file(kModel), so);
    FAIL() << "dump 'sass' was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("memory"), std::string::npos) << e.what();
  }
  so.compile.dump.clear();
  so.compile.compile_limit_seconds = 0;
  EXPECT_THROW(compile_script(file(kModel), so), UserError);
  so.compile.compile_limit_seconds = 10;
  so.compile.precision = "fp8";
  EXPECT_THROW(compile_script(file(kModel), so), UserError);
}

}  // namespace
}  // namespace braze::api
