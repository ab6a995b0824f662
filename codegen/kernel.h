// codegen::Kernel — one group's generated CUDA C++ and how to launch it. Shapes are static,
// so sizes, strides and the launch grid are all compile-time facts of the source.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "fusion/plan.h"
#include "graph/ir.h"

namespace braze::codegen {

// The GPU a kernel is generated for.
struct Target {
  int sm = 90;        // compute capability * 10 + minor
  int num_sms = 132;  // for sizing grids
  // For the CPU emulator (runtime/emulator.cpp), which runs one block at a time: no
  // thread-block clusters (tensor-core and cp.async helpers have C++ stand-ins there).
  bool emulated = false;
  // Float32 MatMul / Gemm on tensor cores with tf32 operands (--precision tf32); otherwise
  // float32 products stay exact on the SIMT schedule. A codegen choice: the graph keeps its
  // float32 values, and the kernels' source (hence the kernel cache key) differs.
  bool tf32 = false;
  // sm_90a features (wgmma, TMA, setmaxnreg): the kernels are compiled for sm_90a, and the
  // tensor-core GEMM may take its warp-specialised wgmma schedule (gemm_wgmma.cpp).
  bool sm90a = false;
};

// A schedule's compile-time choices ("vec", "threads", "unroll", …), one point of its
// search space; the autotuner times several.
using Tunables = std::map<std::string, int>;

struct Param {
  graph::ValueId value;
  bool is_output;
};

// A TMA descriptor (CUtensorMap) the runtime encodes for a kernel from the address of one of
// its parameters and passes, after the pointers and the error flag, as a __grid_constant__
// `braze_tmap` (codegen/device/wgmma.cuh). A tiled map of a 16-bit tensor (or a float32 one
// read as tf32), 3 to 5 dims innermost first, boxes written to shared memory with the 128-byte
// swizzle, elements outside the tensor read as zeros.
struct TensorMap {
  size_t param = 0;               // index into Kernel::params: the buffer's base address
  uint64_t offset_bytes = 0;      // from that address to the tensor's first element
  DType dtype = DType::Float16;   // Float16, BFloat16 or Float32 (tf32)
  std::vector<uint64_t> dims;     // elements, innermost first
  std::vector<uint64_t> strides;  // bytes between consecutive indices of dims 1, 2, …
  std::vector<uint32_t> box;      // elements a copy moves along each dim
  // Im2col mode (cuTensorMapEncodeIm2col) where `pixels` > 0, for an implicit-GEMM
  // convolution's activations: dims are [C, W (, H (, D)), N] of a channels-last tensor and
  // `box` is empty. A copy at (c, w, h …, n) with filter offsets (kw, kh …) moves `pixels`
  // consecutive windows × `channels` channels: the windows' corners walk the box from
  // `lower` to dim + `upper` (per spatial dim, W first) by `element_strides` (every dim's,
  // 1 for C and N), W fastest, then H …, then N; each row reads its corner + the offsets,
  // zeros outside the tensor.
  std::vector<int32_t> lower, upper;
  std::vector<uint32_t> element_strides;
  uint32_t channels = 0, pixels = 0;
  bool im2col() const { return pixels > 0; }
  // The shared-memory layout a copy writes: rows of 128 bytes swizzled in 1024-byte atoms
  // (true), or as they are (false: an implicit-GEMM convolution's narrow windows, a copy of
  // 16-byte rows, one tap's padded channels, each a block of its own).
  bool swizzle = true;
};

struct Kernel {
  std::string
      name;  // braze_<kind>_<ops>_<hash of the generated code and device helpers>, deterministic
  fusion::GroupKind kind = fusion::GroupKind::Pointwise;
  std::vector<graph::NodeId> nodes;
  std::string source;         // the whole translation unit
  std::vector<Param> params;  // device pointers, in signature order
  // When set, the last parameter is an `int*` flag a failed run-time check writes
  // (1 + index into error_messages).
  bool has_error_flag = false;
  std::vector<std::string> error_messages;
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned shared_bytes = 0;
  bool empty_launch = false;  // nothing to compute (zero-size output): skip the launch
  Tunables tunables;          // the schedule choices this source was generated with
  // The schedule's name where the kernel record says it (a loop op computed lane-parallel:
  // "depthwise", "pool"); else schedule_name (codegen/capabilities.h) derives it.
  std::string schedule;
  std::vector<TensorMap>
      tensor_maps;  // __grid_constant__ parameters after the error flag, in order
  // Every kernel's last two parameters, after everything above: `unsigned* braze_progress` (null,
  // or the session's progress word in host memory mapped into the device) and `unsigned braze_step`
  // (the step's 1-based number). Thread 0 of block 0 writes the step into the word first
  // thing (finish_kernel, braze_note_step), so that a fault can be traced to its kernel.
};

}  // namespace braze::codegen
