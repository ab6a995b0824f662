// Errors, all derived from braze::Error, in kinds that are never mixed (DESIGN.md "Errors"):
//   UserError      — the input is at fault (bad model, unsupported op, wrong shape, missing
//                    file). The message says what and where; the CLI exits non-zero.
//   InternalError  — a broken invariant inside braze. The message starts "internal error".
//   DeviceError    — the CUDA driver or NVRTC failed (out of memory, no device, a launch).
// UnsupportedError is the user error for "valid ONNX that braze does not handle" (an op,
// opset or dtype outside the registry); the conformance runner reports it as a skip.
#pragma once

#include <stdexcept>
#include <string>

namespace braze {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

class UserError : public Error {
 public:
  explicit UserError(const std::string& what) : Error(what) {}
};

class UnsupportedError : public UserError {
 public:
  explicit UnsupportedError(const std::string& what) : UserError(what) {}
};

class InternalError : public Error {
 public:
  explicit InternalError(const std::string& what) : Error("internal error: " + what) {}
};

class DeviceError : public Error {
 public:
  explicit DeviceError(const std::string& what) : Error(what) {}
};

// `s` safe to print on a terminal: valid UTF-8, tabs and newlines kept; other control bytes
// and bytes that are not valid UTF-8 (a corrupt file's name or header echoed in an error)
// written as \xNN.
std::string printable(const std::string& s);

// Throws InternalError naming the failed condition and its place in the source.
[[noreturn]] void internal_check_failed(const char* cond, const char* file, int line,
                                        const std::string& msg);

}  // namespace braze

#define BRAZE_CHECK(cond, msg)                                                     \
  do {                                                                             \
    if (!(cond)) ::braze::internal_check_failed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
