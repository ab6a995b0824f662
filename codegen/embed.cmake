# Writes OUT, a C++ file defining braze::codegen::<FN>() returning the contents of IN.
# Run as: cmake -DIN=... -DOUT=... -DFN=... -P embed.cmake
file(READ "${IN}" content)
string(FIND "${content}" ")BRAZE_EMBED\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter")
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by codegen/embed.cmake; do not edit.\n#include <string_view>\nnamespace braze::codegen {\nstd::string_view ${FN}() {\n  static constexpr char kText[] = R\"BRAZE_EMBED(${content})BRAZE_EMBED\";\n  return {kText, sizeof(kText) - 1};\n}\n}  // namespace braze::codegen\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
