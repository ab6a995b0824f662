#pragma once

#include <string>

namespace braze::cli {

// `s` safe to print on a terminal: valid UTF-8, tabs and newlines kept; other control bytes
// and bytes that are not valid UTF-8 (a corrupt file's name or header echoed in an error)
// written as \xNN.
std::string printable(const std::string& s);

}  // namespace braze::cli
