// braze conformance DIR...: runs cases in the ONNX backend-test layout and prints one line
// per case, then "N passed, N failed, N skipped". Exit 1 when a case failed.
#include <braze/error.h>

#include <iostream>
#include <memory>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <braze/braze.h>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/model_options.h"

namespace braze::cli {

namespace {

struct ConformanceOptions {
  std::vector<std::string> dirs;
  std::string backend = "reference";
  std::string filter;
  std::string json;
};

int run_conformance(const ConformanceOptions& o) {
  const BackendChoice choice = backend_choice(o.backend);
  std::regex re;
  try {
    re = std::regex(o.filter.empty() ? ".*" : o.filter);
  } catch (const std::regex_error& e) {
    throw UserError(fmt::format("--filter '{}' is not a valid regular expression", o.filter));
  }

  int pass = 0, fail = 0, skip = 0;
  nlohmann::json cases = nlohmann::json::array();
  for (const std::string& dir : find_conformance_cases(o.dirs)) {
    if (!std::regex_search(std::filesystem::path(dir).filename().string(), re)) continue;
    const ConformanceResult r = run_conformance_case(dir, choice.backend, choice.fuse);
    std::string detail = r.detail;  // one line per case
    for (size_t p = detail.find("\n"); p != std::string::npos; p = detail.find("\n")) {
      size_t q = detail.find_first_not_of(' ', p + 1);
      detail.replace(p, (q == std::string::npos ? detail.size() : q) - p, "; ");
    }
    if (detail.size() > 600) detail = detail.substr(0, 600) + " … (whole text in --json)";
    if (!r.fallbacks.empty())
      detail += fmt::format("{}CPU fallback: {}", detail.empty() ? "" : "; ",
                            fmt::join(r.fallbacks, "; "));
    (r.status == "PASS" ? pass : r.status == "FAIL" ? fail : skip)++;
    std::cout << fmt::format("{} {} ({:.1f} ms){}{}\n", r.status, r.name, r.seconds * 1e3,
                             detail.empty() ? "" : ": ", detail)
              << std::flush;
    cases.push_back({{"name", r.name},
                     {"path", dir},
                     {"status", r.status},
                     {"detail", r.detail},
                     {"fallbacks", r.fallbacks},
                     {"seconds", r.seconds}});
  }
  std::cout << fmt::format("{} passed, {} failed, {} skipped\n", pass, fail, skip);
  if (pass + fail + skip == 0 && !o.filter.empty())
    throw UserError(fmt::format("--filter '{}' matches none of the cases", o.filter));
  if (!o.json.empty()) {
    nlohmann::json j = {{"backend", o.backend},
                        {"passed", pass},
                        {"failed", fail},
                        {"skipped", skip},
                        {"cases", cases}};
    write_output("--json", o.json,
                 j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  return fail ? 1 : 0;
}

}  // namespace

void add_conformance(CLI::App& app, Runner& run) {
  auto o = std::make_shared<ConformanceOptions>();
  CLI::App* cmd =
      app.add_subcommand("conformance", "run ONNX backend-test cases and compare outputs");
  cmd->add_option("dirs", o->dirs, "case folders, or folders of cases")->required();
  cmd->add_option("--backend", o->backend, "backend to test")
      ->check(CLI::IsMember(backend_names()));
  cmd->add_option("--filter", o->filter,
                  "run only cases whose name matches this regular expression");
  cmd->add_option("--json", o->json, "also write the results as JSON to this file");
  cmd->callback([o, &run] { run = [o] { return run_conformance(*o); }; });
}

}  // namespace braze::cli
