// The device helper files (codegen/device/*.cuh), embedded as strings at build time.
#pragma once

#include <string_view>

namespace braze::codegen {

std::string_view device_prelude();    // prelude.cuh: load/store conversions, error flag
std::string_view device_ops();        // ops.cuh: helpers the registry's CUDA expressions call
std::string_view device_reduce();     // reduce.cuh: warp and block reductions
std::string_view device_mma();        // mma.cuh: cp.async, ldmatrix, mma; the tensor-core main loop
std::string_view device_simt_gemm();  // simt_gemm.cuh: the SIMT GEMM main loop
std::string_view device_simt_async();  // simt_async.cuh: its stages filled by cp.async (sm_80+)
std::string_view device_wgmma();       // wgmma.cuh: TMA, mbarriers, wgmma (sm_90a)
std::string_view device_attention();   // attention.cuh: flash attention on mma.sync
std::string_view
device_attention_wgmma();  // attention_wgmma.cuh: flash attention on wgmma (sm_90a)

}  // namespace braze::codegen
