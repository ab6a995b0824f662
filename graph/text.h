// UTF-8 as names and messages need it: where a string stops being well-formed, and (in
// include/braze/error.h) braze::printable for echoing bytes from a corrupt file.
#pragma once

#include <cstddef>
#include <string_view>

namespace braze::graph {

// The length (2 to 4) of the well-formed multi-byte UTF-8 sequence at s[i], or 0: no overlong
// forms, no surrogates, nothing past U+10FFFF.
size_t utf8_sequence(std::string_view s, size_t i);

// The offset of the first byte at which `s` is not well-formed UTF-8, or npos.
size_t invalid_utf8_at(std::string_view s);

}  // namespace braze::graph
