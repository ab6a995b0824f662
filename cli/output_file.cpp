#include "cli/output_file.h"

#include <braze/braze.h>

namespace braze::cli {

void write_output(const char* option, const std::string& path, const std::string& contents) {
  try {
    write_file(path, contents);
  } catch (const UserError& e) {
    throw UserError(std::string(option) + " " + e.what());
  }
}

}  // namespace braze::cli
