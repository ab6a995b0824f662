// Running the braze executable from the CLI tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "frontend/onnx_proto.h"

namespace braze::test {

struct Result {
  int code;
  std::string out;  // stdout and stderr together
};

// The shell command `cmd`'s exit code and output.
inline Result shell(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// `streams`: the shell's redirections of the command's output into the pipe read here.
inline Result braze(const std::string& args, const std::string& streams = "2>&1") {
  return shell(std::string(BRAZE_BINARY) + " " + args + " " + streams);
}

// The model in ONNX text syntax `text`, written to `path`.
inline std::filesystem::path write_text_model(const std::filesystem::path& path,
                                              const std::string& text) {
  std::ofstream(path, std::ios::binary) << frontend::parse_model_text(text).SerializeAsString();
  return path;
}

}  // namespace braze::test
