// braze device prelude: storage <-> compute type conversions. Every generated kernel
// begins with this file. Compute types: float for float16/bfloat16/float32, double,
// long long for signed integers, unsigned long long for unsigned ones, bool.
#ifndef BRAZE_CPU_EMULATION  // the CPU emulator (tests) brings its own definitions
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif

#define BRAZE_DEV __device__ __forceinline__

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

// Records the first failed run-time check of a kernel (an out-of-range index …); the
// runtime reads the flag after the run and reports the message for `code`.
BRAZE_DEV void braze_fail(int* flag, int code) { atomicCAS(flag, 0, code); }
