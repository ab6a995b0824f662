// braze Hopper helpers (sm_90a) for the warp-specialised tensor-core GEMM
// (codegen/gemm_wgmma.cpp): TMA tile loads completing on mbarriers, wgmma operand
// descriptors and fences, register reallocation between warpgroups. Included after mma.cuh
// (braze_saddr); only kernels compiled for sm_90a include it, never the CPU emulator.
//
// The pipeline (one block, one BM x BN output tile):
//   warpgroup 0, one thread: for each k-tile, wait until stage s is free (empty[s]), arm
//     full[s] with the stage's byte count, start the TMA copies of A's and B's tiles into it;
//   warpgroups 1..: wait until full[s] has its bytes, issue the wgmma's over the stage,
//     and once the previous stage's wgmma's have retired, release that stage (empty[s']).
// Phases: a barrier's k-th completion flips its phase parity; waiting for parity P returns
// once the phase of parity P has completed, so a fresh barrier "has completed" parity 1.

#ifndef BRAZE_CPU_EMULATION

// A CUtensorMap (cuTensorMapEncodeTiled, runtime/gpu/tensor_map.cpp): 128 opaque bytes,
// passed by value as a __grid_constant__ kernel parameter.
struct __align__(64) braze_tmap {
  unsigned long long opaque[16];
};

// ---- mbarriers in shared memory ----

BRAZE_DEV void braze_mbar_init(braze_saddr bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the asynchronous (TMA) proxy.
BRAZE_DEV void braze_mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival that also expects `bytes` more to complete by transaction (the TMA copies).
BRAZE_DEV void braze_mbar_arrive_expect(braze_saddr bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
BRAZE_DEV void braze_mbar_arrive(braze_saddr bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
BRAZE_DEV unsigned long long braze_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// True once the barrier's phase of parity `parity` has completed (each try may suspend the
// thread for a while).
BRAZE_DEV bool braze_mbar_try_wait(braze_saddr bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
// Without the time limit, for warps whose wait cannot outlast another's that has one (a
// trap in a region after setmaxnreg.inc keeps ptxas, CUDA 13.0, from allocating that region
// more registers than the kernel's entry has: the flash kernel's consumers spilled at 168).
BRAZE_DEV void braze_mbar_wait_spin(braze_saddr bar, unsigned parity) {
  while (!braze_mbar_try_wait(bar, parity)) {
  }
}
// Returns once the barrier's phase of parity `parity` has completed. Each try_wait may
// suspend the thread for a while; once the wait has lasted 20 s of the GPU's global timer (far
// beyond any tile's wait, also under compute-sanitizer) the kernel traps, so a copy that
// never lands fails the launch instead of hanging it (a count of 2^28 tries was minutes or
// more: try_wait's suspension is system-dependent).
BRAZE_DEV void braze_mbar_wait(braze_saddr bar, unsigned parity) {
  unsigned tries = 0;
  unsigned long long since = 0;
  while (!braze_mbar_try_wait(bar, parity)) {
    if ((++tries & 4095u) == 0) {
      const unsigned long long now = braze_globaltimer();
      if (since == 0) since = now;
      else if (now - since > 20000000000ull) __trap();
    }
  }
}

// ---- the staged epilogue (gemm_wgmma.cpp, WgTile::se) ----

// Named barrier `id` over `n` threads (a warpgroup: 128).
BRAZE_DEV void braze_bar_sync(unsigned id, unsigned n) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
// Arrives at named barrier `id` (of `n` threads) without waiting.
BRAZE_DEV void braze_bar_arrive(unsigned id, unsigned n) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
BRAZE_DEV void braze_st_shared_v2(braze_saddr a, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(a), "f"(x), "f"(y) : "memory");
}

// ---- TMA ----

// The box of `map` at coordinates (c0 innermost, c1, c2) into shared memory at dst (1024-byte
// aligned for the 128-byte swizzle), completing `bar`'s transaction bytes. Elements outside
// the tensor arrive as zeros (and still count as bytes).
BRAZE_DEV void braze_tma_load_3d(braze_saddr dst, const braze_tmap& map, int c0, int c1, int c2,
                                 braze_saddr bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

BRAZE_DEV void braze_tma_load_4d(braze_saddr dst, const braze_tmap& map, int c0, int c1, int c2,
                                 int c3, braze_saddr bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

BRAZE_DEV void braze_tma_load_5d(braze_saddr dst, const braze_tmap& map, int c0, int c1, int c2,
                                 int c3, int c4, braze_saddr bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4),
      "r"(bar)
      : "memory");
}

// Im2col mode (TensorMap::im2col, codegen/kernel.h): `pixels` windows' rows of `channels`
// from channel c0 into shared memory at dst, the first window's corner at (w, h …, n) and each
// row read at its corner plus the filter offsets (ow, oh …); outside the tensor, zeros. One
// spatial dim (NWC), two (NHWC) or three (NDHWC).
BRAZE_DEV void braze_tma_im2col_3d(braze_saddr dst, const braze_tmap& map, int c0, int w, int n,
                                   unsigned short ow, braze_saddr bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5], {%6};\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(w), "r"(n), "r"(bar), "h"(ow)
      : "memory");
}

BRAZE_DEV void braze_tma_im2col_4d(braze_saddr dst, const braze_tmap& map, int c0, int w, int h,
                                   int n, unsigned short ow, unsigned short oh, braze_saddr bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(w), "r"(h), "r"(n), "r"(bar),
      "h"(ow), "h"(oh)
      : "memory");
}

BRAZE_DEV void braze_tma_im2col_5d(braze_saddr dst, const braze_tmap& map, int c0, int w, int h,
                                   int d, int n, unsigned short ow, unsigned short oh,
                                   unsigned short od, braze_saddr bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(w), "r"(h), "r"(d), "r"(n),
      "r"(bar), "h"(ow), "h"(oh), "h"(od)
      : "memory");
}

// ---- wgmma ----

// The operand descriptor of a tile at `addr` in the 128-byte-swizzled layout the TMA writes
// (rows of 128 bytes, eight rows a 1024-byte swizzle atom, atoms 1024-byte aligned): `lbo`
// and `sbo` are the leading and stride byte offsets (PTX ISA, "Matrix Descriptor Format").
BRAZE_DEV unsigned long long braze_wgmma_desc(braze_saddr addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) |
         (unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16 |
         (unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32 | 1ull << 62;
}
// The same for a tile of 16-byte rows as they are (no swizzle: a narrow convolution window's
// blocks, one tap's channels a row): 8-row core matrices `sbo` bytes apart down and `lbo`
// bytes apart along k.
BRAZE_DEV unsigned long long braze_wgmma_desc_unswizzled(braze_saddr addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) |
         (unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16 |
         (unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32;
}
// The descriptor `d` moved `units` 16-byte units on: a 32-bit add to its low word (the start
// address field, bits 0-13, never carries: shared addresses are under 2^18).
BRAZE_DEV unsigned long long braze_wgmma_desc_plus(unsigned long long d, unsigned units) {
  return (d & 0xFFFFFFFF00000000ull) | (unsigned)((unsigned)d + units);
}
// Orders this warpgroup's register accesses before the wgmma's that follow.
BRAZE_DEV void braze_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
BRAZE_DEV void braze_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N of this warpgroup's committed wgmma groups are still running.
template <int N>
BRAZE_DEV void braze_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses to the accumulators across the asynchronous
// wgmma's (which read and write them behind its back).
template <int N>
BRAZE_DEV void braze_fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// ---- registers ----

// The producer warpgroup gives registers back; the consumers take them (both warpgroup-wide).
template <int N>
BRAZE_DEV void braze_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
BRAZE_DEV void braze_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

#endif
