// What a compile made, printed from the public report: kernels, memory, compile and tuning.
#pragma once

#include <braze/braze.h>

#include <string>

namespace braze::cli {

// "23 kernels for sm_90 (2 groups on the CPU reference)", memory, compile and tuning lines;
// the compile line only for a report of a compile (`compiled` false: from a file).
void print_build_summary(const CompileReport& r, const std::string& arch, bool compiled = true);

inline std::string human_bytes(double bytes) { return format_bytes(bytes); }

}  // namespace braze::cli
