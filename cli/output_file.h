// Files the commands write on request (--json, --html, --dot): written whole or an error
// naming the option, the path and the reason, never a silent short file.
#pragma once

#include <string>

namespace braze::cli {

void write_output(const char* option, const std::string& path, const std::string& contents);

}  // namespace braze::cli
