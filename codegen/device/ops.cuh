// Element-wise helpers the op registry's CUDA expressions call (graph/cuda_hooks.h).
// Overloaded on the compute types; semantics match the CPU reference implementations.

BRAZE_DEV float braze_softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }
BRAZE_DEV double braze_softplus(double x) { return x > 30.0 ? x : log1p(exp(x)); }
// x / y for a constant y whose reciprocal z = RN(1 / y) is a normal float: the product
// corrected once by a fused multiply-add (the residual x - q y is exact). It is the IEEE
// quotient wherever that is a normal float (no difference in 2e8 random x over eleven
// divisors), at most one unit in the last place off where it is subnormal or overflows, and
// straight-line code: the division operator compiles to a check and a call to a slow path
// for every element, which keeps the compiler from interleaving a GEMM epilogue's elements.
// Zero, infinite and NaN x take the product.
BRAZE_DEV float braze_div_by(float x, float y, float z) {
  const float q = x * z;
  const float r = fmaf(-q, y, x);
  return (r != 0.f && isfinite(r)) ? fmaf(r, z, q) : q;
}
// 1 / (1 + e^-x) with the division as __fdividef (within 2 ulp): an IEEE division is a check
// and a slow-path call an element, which keeps a GEMM epilogue's elements from
// interleaving. 1 + e^-x is at least 1; past 2^126 (x < -87.3) the quotient is 0 where the
// exact one is below 2^-126, and e^-x = inf gives 0 too.
BRAZE_DEV float braze_sigmoid(float x) { return __fdividef(1.f, 1.f + expf(-x)); }
BRAZE_DEV double braze_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
BRAZE_DEV float braze_gelu_erf(float x) { return 0.5f * x * (1.f + erff(x * 0.707106781186547524f)); }
BRAZE_DEV double braze_gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x * 0.707106781186547524)); }
// 2^x on the special-function unit (ex2.approx.ftz: within 2 ulp; results below 2^-126 are 0).
#ifndef BRAZE_CPU_EMULATION
BRAZE_DEV float braze_ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#else
BRAZE_DEV float braze_ex2_ftz(float x) {
  const float y = exp2f(x);
  return y < 1.17549435e-38f ? 0.f : y;
}
#endif
// NaN-propagating max / min (fmaxf would drop the NaN): on sm_80 and newer max.NaN /
// min.NaN, one instruction each; a compare, a select and fmaxf / fminf before.
#if !defined(BRAZE_CPU_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
BRAZE_DEV float braze_max(float a, float b) {
  float y;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
BRAZE_DEV float braze_min(float a, float b) {
  float y;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
#else
BRAZE_DEV float braze_max(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b); }
BRAZE_DEV float braze_min(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b); }
#endif
// GELU (erf form) for float16 and bfloat16 results, in 10 (float16) or 12 (bfloat16) arithmetic
// instructions and one ex2 against ~24 for braze_gelu_erf: x Φ(x) = max(x, 0) - |x| Φ(-|x|),
// Φ(-t) = 2^P(t) for t = |x|, P a polynomial fitted (weighted minimax) to log2 Φ(-t) on
// [0, t_max] with a negative leading coefficient. Unlike 1 + erf(x / √2), which cancels for
// negative x, Φ(-t) keeps its relative accuracy; the one fused multiply-add rounds once.
// Every instruction counts: a GEMM epilogue's arithmetic takes issue slots from the tensor cores
// of the warpgroup beside it (bench/micro/wgmma_overlap.cu), so there is no clamp, select or
// second product: t = |braze_min(x, t_max)| (min.NaN from sm_80 on) is t_max for x above it
// (where |x| Φ(-|x|) is below half an ulp of x), |x| below -t_max, where P falls to -inf and
// the product rounds to -0, and NaN for NaN. +inf gives +inf, -inf NaN (inf times 0), as
// braze_gelu_erf. c: P's coefficients, highest degree first.
template <int N>
BRAZE_DEV float braze_gelu_erf_poly(float x, float t_max, const float (&c)[N]) {
  const float t = fabsf(braze_min(x, t_max));
  float p = c[0];
#pragma unroll
  for (int i = 1; i < N; ++i) p = fmaf(p, t, c[i]);
  return fmaf(-t, braze_ex2_ftz(p), fmaxf(x, 0.f));
}
// float16: degree 7 on [0, 5.7545] (|x| Φ(-|x|) = 2.5e-8 at t_max, rounding to -0 past it):
// Φ(-t) within 5.8e-6 relative (1/85 of a float16 ulp) wherever x Φ(x) is a normal float16,
// |x| Φ(-|x|) within 3.5e-10 (1/170 of the smallest subnormal) below.
BRAZE_DEV float braze_gelu_erf_f16(float x) {
  const float c[] = {-9.823185e-07f, 4.8779602e-05f, -8.5565395e-04f, 8.294136e-03f,
                     -5.3652544e-02f, -4.5867002e-01f, -1.1512011f,     -9.999972e-01f};
  return braze_gelu_erf_poly(x, 5.7545202f, c);
}
// bfloat16 (float's range): degree 9 on [0, 13.158541], past which |x| Φ(-|x|) is below 1e-38
// and 2^P flushes to 0: Φ(-t) within 4.9e-5 relative (1/80 of a bfloat16 ulp) where the result
// is above 1e-36, within 3.2e-4 (1/12 ulp) down to the smallest normal float.
BRAZE_DEV float braze_gelu_erf_bf16(float x) {
  const float c[] = {-2.1437965e-09f, 1.5248477e-07f, -4.7812377e-06f, 8.753948e-05f, -1.0487353e-03f,
                     8.783389e-03f,   -5.423052e-02f, -4.584682e-01f,  -1.1511282f,   -1.0000207f};
  return braze_gelu_erf_poly(x, 13.158541f, c);
}
// GELU's tanh form for float16 results: x (1 + tanh u) / 2 = x / (1 + 2^w), u = √(2/π) (x +
// 0.044715 x³), w = -2 u log2 e = x (k0 + k1 x²): five arithmetic instructions, an ex2 and a
// reciprocal (MUFU) against ~20 for tanhf, and no 1 + tanh u to cancel for negative x (the
// quotient keeps its relative accuracy where the result is a float16 above its smallest
// subnormal). +inf is +inf, -inf NaN (-inf / inf), as braze_gelu_tanh.
BRAZE_DEV float braze_gelu_tanh_f16(float x) {
  const float w = x * fmaf(-0.10294324f, x * x, -2.3022082f);
  return __fdividef(x, 1.f + braze_ex2_ftz(w));
}
// The same quotient in float with expf and IEEE division (bfloat16 and float results), as
// x e^-w / (1 + e^-w) where w = -2u > 0 so that e^-w stays in range (a normal bfloat16 result
// down to x = -10.1 has e^w past float's range): 0.5 x (1 + tanhf(u)) lost its relative
// accuracy to the cancellation for x below about -5 (1 + tanh u under 1e-5) and was 0 below
// about -8.
BRAZE_DEV float braze_gelu_tanh(float x) {
  const float w = x * fmaf(-0.071354816f, x * x, -1.5957691f), e = expf(-fabsf(w));
  return w > 0.f ? x * e / (1.f + e) : x / (1.f + e);
}
BRAZE_DEV double braze_gelu_tanh(double x) {
  return 0.5 * x * (1.0 + tanh(0.797884560802865355 * (x + 0.044715 * x * x * x)));
}

// The other types' braze_max / braze_min (float's are above, before the GELU that uses them).
BRAZE_DEV double braze_max(double a, double b) { return (a != a || b != b) ? a + b : fmax(a, b); }
BRAZE_DEV double braze_min(double a, double b) { return (a != a || b != b) ? a + b : fmin(a, b); }
BRAZE_DEV long long braze_max(long long a, long long b) { return a > b ? a : b; }
BRAZE_DEV long long braze_min(long long a, long long b) { return a < b ? a : b; }
BRAZE_DEV unsigned long long braze_max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
BRAZE_DEV unsigned long long braze_min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
BRAZE_DEV bool braze_max(bool a, bool b) { return a || b; }
BRAZE_DEV bool braze_min(bool a, bool b) { return a && b; }

// Integer division truncating toward zero; x/0 is 0 and x/-1 wraps instead of trapping.
BRAZE_DEV long long braze_idiv(long long a, long long b) {
  if (b == 0) return 0;
  if (b == -1) return (long long)(0ULL - (unsigned long long)a);
  return a / b;
}
BRAZE_DEV unsigned long long braze_idiv(unsigned long long a, unsigned long long b) { return b ? a / b : 0; }

BRAZE_DEV long long braze_ipow(long long base, long long e) {
  if (e < 0) return base == 1 ? 1 : (base == -1 ? ((e & 1) ? -1 : 1) : 0);
  unsigned long long r = 1, b = (unsigned long long)base, u = (unsigned long long)e;
  while (u) {
    if (u & 1) r *= b;
    b *= b;
    u >>= 1;
  }
  return (long long)r;
}

// Mod: fmod != 0 takes the dividend's sign (C fmod), else the divisor's (Python %).
BRAZE_DEV float braze_mod(float a, float b, bool fmod_mode) {
  float m = fmodf(a, b);
  if (!fmod_mode && m != 0.f && ((m < 0.f) != (b < 0.f))) m += b;
  return m;
}
BRAZE_DEV double braze_mod(double a, double b, bool fmod_mode) {
  double m = fmod(a, b);
  if (!fmod_mode && m != 0.0 && ((m < 0.0) != (b < 0.0))) m += b;
  return m;
}
BRAZE_DEV long long braze_mod(long long a, long long b, bool fmod_mode) {
  if (b == 0 || b == -1) return 0;
  long long m = a % b;
  if (!fmod_mode && m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}
BRAZE_DEV unsigned long long braze_mod(unsigned long long a, unsigned long long b, bool) { return b ? a % b : 0; }

BRAZE_DEV unsigned long long braze_shift(unsigned long long a, unsigned long long s, bool left) {
  if (s >= 64) return 0;
  return left ? a << s : a >> s;
}

BRAZE_DEV float braze_exp(float x) { return expf(x); }
BRAZE_DEV double braze_exp(double x) { return exp(x); }
// exp for softmax-like uses where the argument is at most 0 (x minus the row's max): one
// multiply and the hardware's base-2 exponential (relative error below 1e-6 for
// arguments down to -30, results under 2^-126 flushed to 0). double stays exact.
BRAZE_DEV float braze_exp_fast(float x) {
#ifdef BRAZE_CPU_EMULATION
  return exp2f(x * 1.4426950408889634f);
#else
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
  return r;
#endif
}
BRAZE_DEV double braze_exp_fast(double x) { return exp(x); }
