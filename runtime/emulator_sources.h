// Text of the files the CPU emulator prepends to kernels, embedded at build time.
#pragma once

#include <string_view>

namespace braze::runtime {

std::string_view emulator_half_header();  // graph/half.h
std::string_view emulator_shim();         // runtime/emulator_shim.h

}  // namespace braze::runtime
