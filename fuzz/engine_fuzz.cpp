// libFuzzer target over the engine-file reader with its checksum not verified, so that
// mutations reach the JSON header and the blob references behind it (in use, a file whose
// checksum does not match is refused before any of this is read). braze's errors are expected
// outcomes; a crash, a sanitizer report or an exception of another type is a finding.
#include <braze/error.h>

#include <cstdint>
#include <new>
#include <string>

#include "runtime/gpu/engine_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    braze::gpu::read_engine(std::string(reinterpret_cast<const char*>(data), size), "fuzz input",
                            false);
  } catch (const braze::Error&) {
  } catch (const std::bad_alloc&) {
  }
  return 0;
}
