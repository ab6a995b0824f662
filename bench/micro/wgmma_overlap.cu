// Does arithmetic in one warpgroup slow another warpgroup's wgmma on the same SM?
// (bench/RESULTS.md, 2026-12-04: a GELU epilogue costs braze's GEMMs about its instruction
// count whether or not a ping-pong partner's mainloop runs under it.)
//
// One block per SM, two warpgroups. Warpgroup 0 issues ITERS wgmma m64n128k16 (float16 in,
// float32 accumulators, A and B from shared memory, four to a commit group, waiting for
// all but the last group), warpgroup 1 runs WORK steps of one kind of arithmetic on 32
// registers a thread: none, FFMA chains, MUFU ex2, braze's float16 GELU (ops.cuh's
// polynomial), or float4 reads of shared memory (as a staged epilogue's). Each warpgroup's thread 0 records its clock64 span; the host prints the
// median over SMs of each, alone and together. If arithmetic and wgmma overlap, warpgroup
// 0's span together is its span alone; if they contend, it grows by about warpgroup 1's.
//
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o /tmp/wgmma_overlap bench/micro/wgmma_overlap.cu
//   /tmp/wgmma_overlap
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));               \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

__device__ unsigned long long desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (unsigned long long)(16u >> 4) << 16 |
         (unsigned long long)(1024u >> 4) << 32 | 1ull << 62;
}

__device__ void mma(float (&d)[64], unsigned long long da, unsigned long long db) {
  asm volatile("{\n wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(da), "l"(db));
}

__device__ float gelu16(float x) {  // braze_gelu_erf_f16's arithmetic (codegen/device/ops.cuh)
  const float c[] = {-5.699346e-06f, 1.6330271e-04f, -2.1010824e-03f, 1.633855e-02f,
                     -8.805948e-02f, 3.644234e-01f,  -1.3554922f,     -9.9999535e-01f};
  const float s = fabsf(x) * 0.8493218f;
  const float t = fminf(s, 4.8044896f);
  float p = c[0];
#pragma unroll
  for (int i = 1; i < 8; ++i) p = fmaf(p, t, c[i]);
  float h;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(h) : "f"(fmaf(-s, s, p)));
  return x * (x >= 0.f ? 1.f - h : h);
}

// KIND: 0 none, 1 FFMA, 2 MUFU ex2, 3 GELU, 4 shared-memory reads (LDS.128). mask: bit 0 runs warpgroup 0, bit 1 warpgroup 1.
template <int KIND>
__global__ void __launch_bounds__(256, 1) probe(int iters, int work, int mask, long long* spans,
                                                 float* sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  for (int i = threadIdx.x; i < 49152 / 4; i += blockDim.x) reinterpret_cast<float*>(smem)[i] = 0.f;
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
  long long t0 = clock64();
  if (wg == 0 && (mask & 1)) {
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.f;
    for (int it = 0; it < iters; it += 4) {
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) mma(d, desc(base + kk * 32), desc(base + 8192 + kk * 32));
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += d[i];
    if (s == 12345.f) sink[threadIdx.x] = s;
  } else if (wg == 1 && (mask & 2)) {
    float v[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = 0.001f * (threadIdx.x + i);
    for (int it = 0; it < work; ++it) {
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        if (KIND == 1) v[i] = fmaf(v[i], 0.999f, 0.001f);
        else if (KIND == 2) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(v[i]));
        else if (KIND == 3) v[i] = gelu16(v[i] - 0.5f);
        else if (KIND == 4 && i % 4 == 0) {
          const float4 q = reinterpret_cast<const float4*>(smem)[(it * 32 + i * 8 + threadIdx.x) % 3072];
          v[i] += q.x, v[i + 1] += q.y, v[i + 2] += q.z, v[i + 3] += q.w;
        }
      }
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 32; ++i) s += v[i];
    if (s == 12345.f) sink[threadIdx.x] = s;
  }
  const long long t1 = clock64();
  if (threadIdx.x % 128 == 0) spans[blockIdx.x * 2 + wg] = t1 - t0;
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  long long* spans;
  float* sink;
  CHECK(cudaMalloc(&spans, sizeof(long long) * 2 * sms));
  CHECK(cudaMalloc(&sink, sizeof(float) * 256));
  CHECK(cudaFuncSetAttribute(probe<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 49152 + 1024));
  CHECK(cudaFuncSetAttribute(probe<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 49152 + 1024));
  CHECK(cudaFuncSetAttribute(probe<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 49152 + 1024));
  CHECK(cudaFuncSetAttribute(probe<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, 49152 + 1024));
  CHECK(cudaFuncSetAttribute(probe<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 49152 + 1024));
  const int iters = 8192;
  const char* kinds[] = {"none", "FFMA", "MUFU ex2", "GELU (f16 form)", "LDS.128"};
  const int works[] = {0, 8192, 1024, 512, 2048};  // about half of the wgmma loop's span each
  std::vector<long long> h(2 * sms);
  auto median = [&](int wg) {
    std::vector<long long> v;
    for (int b = 0; b < sms; ++b) v.push_back(h[2 * b + wg]);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto run = [&](int kind, int mask, long long* w0, long long* w1) -> int {
    for (int rep = 0; rep < 3; ++rep) {  // the last of three launches
      const int w = works[kind];
      switch (kind) {
        case 0: probe<0><<<sms, 256, 49152 + 1024>>>(iters, w, mask, spans, sink); break;
        case 1: probe<1><<<sms, 256, 49152 + 1024>>>(iters, w, mask, spans, sink); break;
        case 2: probe<2><<<sms, 256, 49152 + 1024>>>(iters, w, mask, spans, sink); break;
        case 3: probe<3><<<sms, 256, 49152 + 1024>>>(iters, w, mask, spans, sink); break;
        default: probe<4><<<sms, 256, 49152 + 1024>>>(iters, w, mask, spans, sink); break;
      }
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
    }
    CHECK(cudaMemcpy(h.data(), spans, sizeof(long long) * 2 * sms, cudaMemcpyDeviceToHost));
    *w0 = median(0), *w1 = median(1);
    return 0;
  };
  long long mma_alone, x;
  if (run(0, 1, &mma_alone, &x)) return 1;
  std::printf("wgmma m64n128k16 x %d alone: %lld cycles (%.1f a wgmma)\n", iters, mma_alone,
              double(mma_alone) / iters);
  for (int kind = 1; kind < 5; ++kind) {
    long long alu_alone, both0, both1;
    if (run(kind, 2, &x, &alu_alone) || run(kind, 3, &both0, &both1)) return 1;
    std::printf("%-16s x %5d steps of 32: alone %8lld cycles; together: wgmma %8lld (%+.1f%%), "
                "arithmetic %8lld (%+.1f%%)\n",
                kinds[kind], works[kind], alu_alone, both0, 100.0 * (both0 - mma_alone) / mma_alone,
                both1, 100.0 * (both1 - alu_alone) / alu_alone);
  }
  return 0;
}
