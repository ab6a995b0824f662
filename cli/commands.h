// The braze subcommands. Each add_* registers its options on the CLI11 app and returns the
// subcommand; main() runs the one the user chose and maps errors to exit codes:
//   0 success, 1 a check failed (mismatch, failing conformance case), 2 bad input or usage,
//   3 internal error.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace braze::cli {

using Runner = std::function<int()>;

void add_inspect(CLI::App& app, Runner& run);
void add_run(CLI::App& app, Runner& run);
void add_conformance(CLI::App& app, Runner& run);
void add_compile(CLI::App& app, Runner& run);
void add_diff(CLI::App& app, Runner& run);
void add_doctor(CLI::App& app, Runner& run);
void add_bench(CLI::App& app, Runner& run);

}  // namespace braze::cli
