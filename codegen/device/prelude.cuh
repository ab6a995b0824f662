// braze device prelude: storage <-> compute type conversions. Every generated kernel
// begins with this file. Compute types: float for float16/bfloat16/float32, double,
// long long for signed integers, unsigned long long for unsigned ones, bool.
#ifndef BRAZE_CPU_EMULATION  // the CPU emulator (tests) brings its own definitions
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif

#define BRAZE_DEV __device__ __forceinline__

// A kernel's dynamic shared memory (Kernel::shared_bytes of it); the CPU emulator, which
// runs one block at a time, gives it a static buffer of `bytes`.
#ifdef BRAZE_CPU_EMULATION
#define BRAZE_DYNAMIC_SMEM(name, bytes) alignas(128) static unsigned char name[bytes]
#else
#define BRAZE_DYNAMIC_SMEM(name, bytes) extern __shared__ __align__(128) unsigned char name[]
#endif

BRAZE_DEV float braze_load(const float* p, long long i) { return p[i]; }
BRAZE_DEV float braze_load(const __half* p, long long i) { return __half2float(p[i]); }
BRAZE_DEV float braze_load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
BRAZE_DEV double braze_load(const double* p, long long i) { return p[i]; }
BRAZE_DEV long long braze_load(const long long* p, long long i) { return p[i]; }
BRAZE_DEV long long braze_load(const int* p, long long i) { return p[i]; }
BRAZE_DEV long long braze_load(const short* p, long long i) { return p[i]; }
BRAZE_DEV long long braze_load(const signed char* p, long long i) { return p[i]; }
BRAZE_DEV unsigned long long braze_load(const unsigned long long* p, long long i) { return p[i]; }
BRAZE_DEV unsigned long long braze_load(const unsigned int* p, long long i) { return p[i]; }
BRAZE_DEV unsigned long long braze_load(const unsigned short* p, long long i) { return p[i]; }
BRAZE_DEV unsigned long long braze_load(const unsigned char* p, long long i) { return p[i]; }
BRAZE_DEV bool braze_load(const bool* p, long long i) { return p[i]; }

// Stores round to nearest even for the half types and wrap for narrow integers.
BRAZE_DEV void braze_store(float* p, long long i, float v) { p[i] = v; }
BRAZE_DEV void braze_store(__half* p, long long i, float v) { p[i] = __float2half_rn(v); }
BRAZE_DEV void braze_store(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }
BRAZE_DEV void braze_store(double* p, long long i, double v) { p[i] = v; }
BRAZE_DEV void braze_store(long long* p, long long i, long long v) { p[i] = v; }
BRAZE_DEV void braze_store(int* p, long long i, long long v) { p[i] = (int)v; }
BRAZE_DEV void braze_store(short* p, long long i, long long v) { p[i] = (short)v; }
BRAZE_DEV void braze_store(signed char* p, long long i, long long v) { p[i] = (signed char)v; }
BRAZE_DEV void braze_store(unsigned long long* p, long long i, unsigned long long v) { p[i] = v; }
BRAZE_DEV void braze_store(unsigned int* p, long long i, unsigned long long v) { p[i] = (unsigned int)v; }
BRAZE_DEV void braze_store(unsigned short* p, long long i, unsigned long long v) { p[i] = (unsigned short)v; }
BRAZE_DEV void braze_store(unsigned char* p, long long i, unsigned long long v) { p[i] = (unsigned char)v; }
BRAZE_DEV void braze_store(bool* p, long long i, bool v) { p[i] = v; }

// Thread-block clusters (sm_90): a barrier over the cluster's blocks (release / acquire,
// so shared-memory writes before it are seen after it), and the address of `p`'s object
// in block `rank`'s shared memory (distributed shared memory). Not in the CPU emulator,
// which runs no clusters.
#ifndef BRAZE_CPU_EMULATION
BRAZE_DEV void braze_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
template <class T>
BRAZE_DEV const T* braze_cluster_map(const T* p, unsigned rank) {
  unsigned long long q;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(reinterpret_cast<unsigned long long>(p)), "r"(rank));
  return reinterpret_cast<const T*>(q);
}

// Split-K over a cluster: the SPLIT blocks of a cluster (ranks along x) computed one output
// tile over disjoint shares of k, each thread E partial sums at `flat`. Each block parks
// them in its own shared memory `red` (element e of thread t at e * blockDim.x + t:
// coalesced, conflict-free), and rank 0 adds the others' in rank order through distributed
// shared memory; the second cluster barrier keeps every block's shared memory alive until
// rank 0 has read it. Returns whether this block holds the sum (rank 0), which then runs
// the epilogue. `red` holds E floats a thread.
template <int SPLIT, int E>
BRAZE_DEV bool braze_split_reduce(float* flat, float* red) {
  const unsigned rank = blockIdx.x % SPLIT;
  if (rank != 0)
#pragma unroll
    for (int e = 0; e < E; ++e) red[e * blockDim.x + threadIdx.x] = flat[e];
  braze_cluster_sync();
  if (rank == 0)
    for (unsigned q = 1; q < SPLIT; ++q) {
      const float* other = braze_cluster_map(red, q);
#pragma unroll
      for (int e = 0; e < E; ++e) flat[e] += other[e * blockDim.x + threadIdx.x];
    }
  braze_cluster_sync();
  return rank == 0;
}
#endif

// The first statement of every kernel (codegen.cpp adds it): thread 0 of block 0 writes the
// kernel's step number (1-based) into the session's progress word, host memory mapped into the
// device, so that when a kernel faults — and the context, hence device memory, is lost — the
// host still reads which step was running. Null `progress`: not noted.
BRAZE_DEV void braze_note_step(unsigned* progress, unsigned step) {
  if (progress && (threadIdx.x | threadIdx.y | threadIdx.z | blockIdx.x | blockIdx.y | blockIdx.z) == 0)
    *static_cast<volatile unsigned*>(progress) = step;
}

// Records the first failed run-time check of a kernel (an out-of-range index …); the
// runtime reads the flag after the run and reports the message for `code`.
BRAZE_DEV void braze_fail(int* flag, int code) { atomicCAS(flag, 0, code); }

// 16-byte (or narrower) vector access: N elements of T at an index that is a multiple of N,
// from a pointer aligned to the vector (arena and weight offsets are 256-byte aligned).
template <class T, int N>
struct alignas(sizeof(T) * N) braze_vec {
  T v[N];
};
template <int N, class T>
BRAZE_DEV braze_vec<T, N> braze_vload(const T* p, long long i) {
  return *reinterpret_cast<const braze_vec<T, N>*>(p + i);
}
// Outputs only: 8- and 16-byte stores are written in PTX, because where the compiler unrolls
// a loop of them it loses track of the alignment and splits each into 2- or 4-byte stores
// (seen for float16 rows), which the caller's contract above rules out. The asm declares
// no memory clobber, so loads may still move across it (pointwise kernels keep several in
// flight): the kernel must not read what it stores this way.
template <int N, class T>
BRAZE_DEV void braze_vstore(T* p, long long i, const braze_vec<T, N>& v) {
#ifndef BRAZE_CPU_EMULATION
  if constexpr (sizeof(v) == 16) {
    const uint4 w = *reinterpret_cast<const uint4*>(&v);
    asm volatile("st.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p + i), "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w));
    return;
  } else if constexpr (sizeof(v) == 8) {
    const uint2 w = *reinterpret_cast<const uint2*>(&v);
    asm volatile("st.v2.b32 [%0], {%1, %2};" ::"l"(p + i), "r"(w.x), "r"(w.y));
    return;
  }
#endif
  *reinterpret_cast<braze_vec<T, N>*>(p + i) = v;
}
// GEMM epilogues: the same 8- and 16-byte stores as C++ stores of uint2 / uint4 (the
// alignment is the type's), which the compiler sees through: a load the epilogue repeats
// for each row (a bias) is then shared between the rows, where each asm store above made it
// load again. The straight-line epilogues keep them whole (st.global.v2 / v4 in PTX).
template <int N, class T>
BRAZE_DEV void braze_vstore_typed(T* p, long long i, const braze_vec<T, N>& v) {
#ifndef BRAZE_CPU_EMULATION
  if constexpr (sizeof(v) == 16) {
    *reinterpret_cast<uint4*>(p + i) = *reinterpret_cast<const uint4*>(&v);
    return;
  } else if constexpr (sizeof(v) == 8) {
    *reinterpret_cast<uint2*>(p + i) = *reinterpret_cast<const uint2*>(&v);
    return;
  }
#endif
  *reinterpret_cast<braze_vec<T, N>*>(p + i) = v;
}
// Storage value -> compute type, and back (round to nearest even for the half types).
BRAZE_DEV float braze_val(float x) { return x; }
BRAZE_DEV float braze_val(__half x) { return __half2float(x); }
BRAZE_DEV float braze_val(__nv_bfloat16 x) { return __bfloat162float(x); }
BRAZE_DEV double braze_val(double x) { return x; }
BRAZE_DEV long long braze_val(long long x) { return x; }
BRAZE_DEV long long braze_val(int x) { return x; }
BRAZE_DEV long long braze_val(short x) { return x; }
BRAZE_DEV long long braze_val(signed char x) { return x; }
BRAZE_DEV unsigned long long braze_val(unsigned long long x) { return x; }
BRAZE_DEV unsigned long long braze_val(unsigned int x) { return x; }
BRAZE_DEV unsigned long long braze_val(unsigned short x) { return x; }
BRAZE_DEV unsigned long long braze_val(unsigned char x) { return x; }
BRAZE_DEV bool braze_val(bool x) { return x; }
template <class T> struct braze_tag {};
BRAZE_DEV float braze_pack(braze_tag<float>, float v) { return v; }
BRAZE_DEV __half braze_pack(braze_tag<__half>, float v) { return __float2half_rn(v); }
BRAZE_DEV __nv_bfloat16 braze_pack(braze_tag<__nv_bfloat16>, float v) { return __float2bfloat16_rn(v); }
BRAZE_DEV double braze_pack(braze_tag<double>, double v) { return v; }
BRAZE_DEV long long braze_pack(braze_tag<long long>, long long v) { return v; }
BRAZE_DEV int braze_pack(braze_tag<int>, long long v) { return (int)v; }
BRAZE_DEV short braze_pack(braze_tag<short>, long long v) { return (short)v; }
BRAZE_DEV signed char braze_pack(braze_tag<signed char>, long long v) { return (signed char)v; }
BRAZE_DEV unsigned long long braze_pack(braze_tag<unsigned long long>, unsigned long long v) { return v; }
BRAZE_DEV unsigned int braze_pack(braze_tag<unsigned int>, unsigned long long v) { return (unsigned int)v; }
BRAZE_DEV unsigned short braze_pack(braze_tag<unsigned short>, unsigned long long v) { return (unsigned short)v; }
BRAZE_DEV unsigned char braze_pack(braze_tag<unsigned char>, unsigned long long v) { return (unsigned char)v; }
BRAZE_DEV bool braze_pack(braze_tag<bool>, bool v) { return v; }
