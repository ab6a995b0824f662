#include <braze/error.h>

#include <iostream>
#include <new>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"braze: a graph-level fusion compiler and runtime for ONNX models on NVIDIA GPUs"};
  app.set_version_flag("--version", std::string("braze ") + BRAZE_VERSION);
  app.require_subcommand(1);
  braze::cli::Runner run;
  braze::cli::add_inspect(app, run);
  braze::cli::add_run(app, run);
  braze::cli::add_compile(app, run);
  braze::cli::add_conformance(app, run);
  braze::cli::add_diff(app, run);
  braze::cli::add_doctor(app, run);
  braze::cli::add_bench(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    const int code = run();
    // What was printed reached its file whole (a redirect onto a full disk fails here).
    if (!std::cout.flush()) throw braze::UserError("writing the standard output failed");
    return code;
  } catch (const braze::UserError& e) {
    std::cerr << "error: " << braze::printable(e.what()) << "\n";
    return 2;
  } catch (const braze::DeviceError& e) {
    std::cerr << "error: " << braze::printable(e.what()) << "\n";
    return 2;
  } catch (const braze::InternalError& e) {
    std::cerr << braze::printable(e.what()) << "\n";
    return 3;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of host memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << braze::printable(e.what()) << "\n";
    return 3;
  }
}
