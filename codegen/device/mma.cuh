// braze tensor-core helpers (sm_80+) and the multistage GEMM main loop the tensor-core
// schedule (codegen/gemm_tc.cpp) instantiates; only that schedule's kernels include this.
// 16-bit operands (float16, bfloat16) use mma.m16n8k16; float operands (--precision tf32)
// use mma.m16n8k8 with tf32 operands, each float rounded to tf32 as it leaves shared memory.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16" and "... m16n8k8");
// lane = 4 * g + t:
//   m16n8k16, A 16x16 (m x k), four registers of two b16 each, lower index in the low half:
//     a0 = (m g, k 2t..2t+1)  a1 = (m g+8, k 2t..)  a2 = (m g, k 2t+8..)  a3 = (m g+8, k 2t+8..)
//   m16n8k16, B 16x8 (k x n), two registers:  b0 = (k 2t..2t+1, n g)  b1 = (k 2t+8.., n g)
//   m16n8k8 tf32, A 16x8, four registers of one tf32 each:
//     a0 = (m g, k t)  a1 = (m g+8, k t)  a2 = (m g, k t+4)  a3 = (m g+8, k t+4)
//   m16n8k8 tf32, B 8x8 (k x n), two registers:  b0 = (k t, n g)  b1 = (k t+4, n g)
//   C and D (both shapes), 16x8 floats:  d0, d1 = (m g, n 2t, 2t+1)  d2, d3 = (m g+8, n 2t, 2t+1)
// ldmatrix .x4: lanes 8q..8q+7 give the addresses of the eight 16-byte rows of 8x8 matrix q;
// register q of lane 4g+t receives row g, columns 2t..2t+1 of matrix q — or, with .trans,
// rows 2t..2t+1 of column g. So a tile stored with k contiguous loads A and B fragments
// directly, and one stored with m (or n) contiguous loads them with .trans. For floats the
// same ldmatrix loads tf32 fragments from a k-contiguous tile (braze_tc_gemm says why);
// from an m- or n-contiguous one, ld.shared loads them a float at a time.
//
// Under BRAZE_CPU_EMULATION (runtime/emulator_shim.h) the instructions become plain C++
// with the same semantics, the warp's lanes exchanging operands through the shim.

#ifdef BRAZE_CPU_EMULATION
typedef unsigned char* braze_saddr;  // a shared-memory address
BRAZE_DEV braze_saddr braze_smem_addr(void* p) { return static_cast<unsigned char*>(p); }
#else
typedef unsigned braze_saddr;  // a shared-state-space address, as the instructions take
BRAZE_DEV braze_saddr braze_smem_addr(void* p) { return (unsigned)__cvta_generic_to_shared(p); }
#endif

// ---- instructions ----

#ifdef BRAZE_CPU_EMULATION

BRAZE_DEV void braze_cp_async16(braze_saddr dst, const void* src, bool valid) {
  if (valid)
    memcpy(dst, src, 16);
  else
    memset(dst, 0, 16);
}
BRAZE_DEV void braze_cp_async_commit() {}
template <int N>
BRAZE_DEV void braze_cp_async_wait() {}  // the copies above completed when issued

template <bool TRANS>
void braze_emu_ldmatrix_x4(unsigned (&r)[4], braze_saddr row) {
  const unsigned g = braze_emu_lane / 4, t = braze_emu_lane % 4;
  unsigned out[4];
  braze_emu_warp_exchange(row, [&](const void* const* rows) {
    for (int q = 0; q < 4; ++q) {
      unsigned short lo, hi;
      if (TRANS) {
        memcpy(&lo, static_cast<const unsigned char*>(rows[8 * q + 2 * t]) + 2 * g, 2);
        memcpy(&hi, static_cast<const unsigned char*>(rows[8 * q + 2 * t + 1]) + 2 * g, 2);
      } else {
        memcpy(&lo, static_cast<const unsigned char*>(rows[8 * q + g]) + 4 * t, 2);
        memcpy(&hi, static_cast<const unsigned char*>(rows[8 * q + g]) + 4 * t + 2, 2);
      }
      out[q] = lo | static_cast<unsigned>(hi) << 16;
    }
  });
  for (int q = 0; q < 4; ++q) r[q] = out[q];
}
BRAZE_DEV void braze_ldmatrix_x4(unsigned (&r)[4], braze_saddr row) {
  braze_emu_ldmatrix_x4<false>(r, row);
}
BRAZE_DEV void braze_ldmatrix_x4_trans(unsigned (&r)[4], braze_saddr row) {
  braze_emu_ldmatrix_x4<true>(r, row);
}

inline float braze_emu_b16(unsigned short bits, braze_tag<__half>) {
  return __half2float(__half{bits});
}
inline float braze_emu_b16(unsigned short bits, braze_tag<__nv_bfloat16>) {
  return __bfloat162float(__nv_bfloat16{bits});
}
// One lane's mma operand registers, and d += A B over a 16 x 8 x K tile with the warp's
// lanes exchanging them: A(lane, m, k) and B(lane, k, n) read an element of the operands
// from the registers of the lane holding it (lane(i) gives lane i's), summing over k in order
// in float.
struct braze_emu_frag {
  const unsigned* a;
  const unsigned* b;
};
template <int K, class FA, class FB>
void braze_emu_mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], FA A, FB B) {
  const braze_emu_frag mine{a, b};
  const int g = braze_emu_lane / 4, t = braze_emu_lane % 4;
  float out[4];
  braze_emu_warp_exchange(&mine, [&](const void* const* lanes) {
    auto lane = [&](int i) { return static_cast<const braze_emu_frag*>(lanes[i]); };
    for (int e = 0; e < 4; ++e) {
      const int m = g + (e / 2) * 8, n = 2 * t + e % 2;
      float s = d[e];
      for (int k = 0; k < K; ++k) s += A(lane, m, k) * B(lane, k, n);
      out[e] = s;
    }
  });
  for (int e = 0; e < 4; ++e) d[e] = out[e];
}

// m16n8k16: element k of a register pair is its low half when k is even.
template <class T>
void braze_mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], braze_tag<T>) {
  auto elem = [](unsigned reg, int k) {
    return braze_emu_b16(static_cast<unsigned short>(k % 2 ? reg >> 16 : reg & 0xffffu),
                         braze_tag<T>{});
  };
  braze_emu_mma<16>(
      d, a, b,
      [&](auto lane, int m, int k) {
        return elem(lane((m % 8) * 4 + (k % 8) / 2)->a[m / 8 + 2 * (k / 8)], k);
      },
      [&](auto lane, int k, int n) { return elem(lane(n * 4 + (k % 8) / 2)->b[k / 8], k); });
}

BRAZE_DEV float braze_lds_f32(braze_saddr p) {
  float v;
  memcpy(&v, p, 4);
  return v;
}
BRAZE_DEV float braze_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
// cvt.rna.tf32.f32: rounds to nearest, ties away from zero, at the 13th mantissa bit (the
// magnitude's bit pattern rounds like an unsigned number, carrying into the exponent);
// infinities and NaN pass through.
BRAZE_DEV unsigned braze_tf32(float x) {
  unsigned u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return u;
  return (u + 0x1000u) & 0xffffe000u;
}
// m16n8k8 with tf32 operands: the tensor core reads 19 bits of each operand register
// (sign, exponent, 10 mantissa bits) and ignores the low 13.
inline void braze_mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                      braze_tag<float>) {
  auto tf32 = [](unsigned reg) { return braze_as_float(reg & 0xffffe000u); };
  braze_emu_mma<8>(
      d, a, b,
      [&](auto lane, int m, int k) { return tf32(lane((m % 8) * 4 + k % 4)->a[m / 8 + 2 * (k / 4)]); },
      [&](auto lane, int k, int n) { return tf32(lane(n * 4 + k % 4)->b[k / 4]); });
}

#else

// 16 bytes global -> shared, bypassing L1; when !valid nothing is read (src-size 0) and the
// destination is zero-filled.
BRAZE_DEV void braze_cp_async16(braze_saddr dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}
BRAZE_DEV void braze_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
BRAZE_DEV void braze_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

BRAZE_DEV void braze_ldmatrix_x4(unsigned (&r)[4], braze_saddr row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row));
}
BRAZE_DEV void braze_ldmatrix_x4_trans(unsigned (&r)[4], braze_saddr row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row));
}

// 32 bits from shared memory.
BRAZE_DEV float braze_lds_f32(braze_saddr p) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(p));
  return v;
}
BRAZE_DEV float braze_as_float(unsigned u) { return __uint_as_float(u); }
// A float rounded to tf32 (nearest, ties away from zero), as an mma operand register.
BRAZE_DEV unsigned braze_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// d += a * b, fp32 accumulation: m16n8k16 for 16-bit operands, m16n8k8 for tf32.
BRAZE_DEV void braze_mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                         braze_tag<__half>) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
BRAZE_DEV void braze_mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                         braze_tag<__nv_bfloat16>) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
BRAZE_DEV void braze_mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                         braze_tag<float>) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#endif

// ---- shared-memory tiles ----

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of CPR chunks a row (CPR a
// power of two). The chunk index is XORed with a function of the row so that the eight rows
// of an ldmatrix 8x8 matrix (consecutive rows, one logical chunk), and eight consecutive
// chunks in row-major order (a quarter-warp of cp.async writes), land in the eight distinct
// 16-byte bank groups of a 128-byte line: no bank conflicts on either side.
template <int CPR>
BRAZE_DEV int braze_swizzle(int row, int chunk) {
  constexpr int kRowsPerLine = CPR >= 8 ? 1 : 8 / CPR;  // rows sharing one 128-byte line
  constexpr int kPhases = CPR >= 8 ? 8 : CPR;
  return (row * CPR + (chunk ^ ((row / kRowsPerLine) % kPhases))) * 16;
}

// A stage tile of rows of CPR 16-byte chunks: swizzled (above), or PADDED with two chunks a
// row. The tf32 fragments of an m- or n-contiguous tile are read a float at a time, lane
// 4g + t at row t, column g (+ constants), so with rows of 4 * (CPR + 2) floats, CPR a
// multiple of 8, lane 4g + t reads bank 8t + g: all 32 distinct, and each lane's addresses
// differ by constants the compiler folds into the loads (a swizzle's XOR would not fold).
template <int CPR, bool PADDED>
struct braze_tc_layout {
  static_assert(!PADDED || CPR % 8 == 0, "padded rows of 128-byte multiples");
  static constexpr int kRowBytes = (CPR + (PADDED ? 2 : 0)) * 16;
  static BRAZE_DEV int chunk(int row, int c) {
    if constexpr (PADDED)
      return row * kRowBytes + c * 16;
    else
      return braze_swizzle<CPR>(row, c);
  }
};

// Starts the copy of a ROWS x COLS tile of T (COLS contiguous), element (r, c) from
// src[(row0 + r) * ld + col0 + c], into the tile at dst (layout braze_tc_layout with
// PADDED); rows from row_end and columns from col_end are zero-filled (col_end and col0
// multiples of the 16 / sizeof(T) elements in a chunk).
template <class T, int ROWS, int COLS, int THREADS, bool PADDED>
BRAZE_DEV void braze_tc_load_tile(braze_saddr dst, const T* src, long long ld, long long row0,
                                  long long row_end, long long col0, long long col_end) {
  constexpr int E = 16 / (int)sizeof(T), CPR = COLS / E, CHUNKS = ROWS * CPR;
#pragma unroll
  for (int l0 = 0; l0 < CHUNKS; l0 += THREADS) {
    const int l = l0 + (int)threadIdx.x;
    if (CHUNKS % THREADS != 0 && l >= CHUNKS) break;
    const int r = l / CPR, c = l % CPR;
    const long long gr = row0 + r, gc = col0 + c * E;
    const bool ok = gr < row_end && gc < col_end;
    braze_cp_async16(dst + braze_tc_layout<CPR, PADDED>::chunk(r, c), ok ? src + gr * ld + gc : src,
                     ok);
  }
}

// ---- the main loop ----

// One block's BM x BN tile of C = A B over k, accumulated in registers: warp w computes the
// (BM/WM) x (BN/WN) sub-tile at warp row w / WN, warp column w % WN, as MI x NI mma tiles of
// 16 x 8; acc[mi][ni] holds one tile's C fragment (layout above). A's element (i, p) is
// a[i * lda + p] when A_KCONTIG, else a[p * lda + i]; B's (p, j) is b[j * ldb + p] when
// B_KCONTIG, else b[p * ldb + j]. T is __half or __nv_bfloat16 (m16n8k16), or float
// (m16n8k8 on tf32-rounded operands). Tiles stream through STAGES shared-memory stages
// (cp.async), STAGES - 1 k-tiles ahead of the math. Returns with shared memory free again.
//
// Fragments of a k-contiguous tile load with ldmatrix for both widths: a 16-byte row of the
// 8x8 b16 matrix q holds four 32-bit words, and lane 4g + t receives word t of row g (the
// b16 pair 2t, 2t+1), which for floats is element (row g, k t) — the tf32 A fragment's
// a0 = (m g, k t) for the matrix at rows m0.., k chunk c, a1 at rows m0 + 8.., a2 and a3 at
// chunk c + 1 (k t + 4); likewise b0 = (k t, n g), b1 = (k t + 4, n g) — the same four
// matrices, in the same order, as the 16-bit fragments take. ldmatrix.trans splits 16-bit
// elements, so an m- or n-contiguous float tile (padded, above) is read with ld.shared.
template <class T, int BM, int BN, int BK, int WM, int WN, int STAGES, bool A_KCONTIG,
          bool B_KCONTIG>
struct braze_tc_gemm {
  static constexpr bool kTf32 = sizeof(T) == 4;
  static constexpr int kE = 16 / (int)sizeof(T);  // elements a 16-byte chunk
  static constexpr int kK = kTf32 ? 8 : 16;       // one mma's k: two chunks
  static constexpr int kThreads = WM * WN * 32;
  static constexpr int kWarpM = BM / WM, kWarpN = BN / WN;
  static constexpr int MI = kWarpM / 16, NI = kWarpN / 8;
  // A's stage tile is BM x BK (k contiguous) or BK x BM; B's BN x BK or BK x BN.
  static constexpr int kACpr = (A_KCONTIG ? BK : BM) / kE, kBCpr = (B_KCONTIG ? BK : BN) / kE;
  typedef braze_tc_layout<kACpr, kTf32 && !A_KCONTIG> ALayout;
  typedef braze_tc_layout<kBCpr, kTf32 && !B_KCONTIG> BLayout;
  static constexpr int kABytes = (A_KCONTIG ? BM : BK) * ALayout::kRowBytes;
  static constexpr int kStageBytes = kABytes + (B_KCONTIG ? BN : BK) * BLayout::kRowBytes;
  static constexpr int kSharedBytes = STAGES * kStageBytes;
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "16-bit or float operands");
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0 && BK % kK == 0, "tile shape");

  static BRAZE_DEV void load_stage(braze_saddr s, const T* a, long long lda, const T* b,
                                   long long ldb, long long m, long long n, long long k,
                                   long long i0, long long j0, long long p0) {
    if constexpr (A_KCONTIG)
      braze_tc_load_tile<T, BM, BK, kThreads, false>(s, a, lda, i0, m, p0, k);
    else
      braze_tc_load_tile<T, BK, BM, kThreads, kTf32>(s, a, lda, p0, k, i0, m);
    if constexpr (B_KCONTIG)
      braze_tc_load_tile<T, BN, BK, kThreads, false>(s + kABytes, b, ldb, j0, n, p0, k);
    else
      braze_tc_load_tile<T, BK, BN, kThreads, kTf32>(s + kABytes, b, ldb, p0, k, j0, n);
  }

  // Rounds the floats ldmatrix loaded to tf32.
  template <int N>
  static BRAZE_DEV void to_tf32(unsigned (&r)[N]) {
    if constexpr (kTf32)
#pragma unroll
      for (int q = 0; q < N; ++q) r[q] = braze_tf32(braze_as_float(r[q]));
  }

  // The A fragment of the 16 x kK mma tile at rows m0.., k-step kk.
  static BRAZE_DEV void load_a(unsigned (&af)[4], braze_saddr sa, int m0, int kk, int lane) {
    if constexpr (A_KCONTIG) {
      // The four 8x8 b16 matrices in register order: (m 0-7, chunk 2kk), (m 8-15, chunk 2kk),
      // (m 0-7, chunk 2kk + 1), (m 8-15, chunk 2kk + 1).
      braze_ldmatrix_x4(af, sa + braze_swizzle<kACpr>(m0 + (lane & 15), kk * 2 + (lane >> 4)));
      to_tf32(af);
    } else if constexpr (kTf32) {
      // a_q = (m g + 8 (q & 1), k t + 4 (q >> 1)), stored at row k, column m.
      const braze_saddr base = sa + (lane % 4) * ALayout::kRowBytes + (lane / 4) * 4;
#pragma unroll
      for (int q = 0; q < 4; ++q)
        af[q] = braze_tf32(braze_lds_f32(base + (kk * 8 + 4 * (q >> 1)) * ALayout::kRowBytes +
                                         (m0 + 8 * (q & 1)) * 4));
    } else {
      braze_ldmatrix_x4_trans(af, sa + braze_swizzle<kACpr>(kk * 16 + (lane & 7) + (lane >> 4) * 8,
                                                             m0 / 8 + ((lane >> 3) & 1)));
    }
  }

  // The B fragments of the two kK x 8 mma tiles at columns n0.. and n0 + 8.., k-step kk.
  static BRAZE_DEV void load_b(unsigned (&b0)[2], unsigned (&b1)[2], braze_saddr sb, int n0,
                               int kk, int lane) {
    if constexpr (kTf32 && !B_KCONTIG) {
      // b_q of tile h = (k t + 4 q, n g + 8 h), stored at row k, column n.
      const braze_saddr base = sb + (lane % 4) * BLayout::kRowBytes + (lane / 4) * 4;
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const braze_saddr row = base + (kk * 8 + 4 * q) * BLayout::kRowBytes;
        b0[q] = braze_tf32(braze_lds_f32(row + n0 * 4));
        b1[q] = braze_tf32(braze_lds_f32(row + (n0 + 8) * 4));
      }
    } else {
      // Two n8 tiles: (n 0-7, chunk 2kk), (n 0-7, chunk 2kk + 1), (n 8-15, chunk 2kk),
      // (n 8-15, chunk 2kk + 1).
      unsigned r[4];
      if constexpr (B_KCONTIG)
        braze_ldmatrix_x4(r, sb + braze_swizzle<kBCpr>(n0 + (lane & 7) + (lane >> 4) * 8,
                                                       kk * 2 + ((lane >> 3) & 1)));
      else
        braze_ldmatrix_x4_trans(
            r, sb + braze_swizzle<kBCpr>(kk * 16 + (lane & 15), n0 / 8 + (lane >> 4)));
      to_tf32(r);
      b0[0] = r[0];
      b0[1] = r[1];
      b1[0] = r[2];
      b1[1] = r[3];
    }
  }

  static BRAZE_DEV void compute_stage(float (&acc)[MI][NI][4], braze_saddr s, int wm, int wn,
                                      int lane) {
    const braze_saddr sa = s, sb = s + kABytes;
#pragma unroll
    for (int kk = 0; kk < BK / kK; ++kk) {
      unsigned af[MI][4], bf[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) load_a(af[mi], sa, wm * kWarpM + mi * 16, kk, lane);
#pragma unroll
      for (int nj = 0; nj < NI / 2; ++nj)
        load_b(bf[2 * nj], bf[2 * nj + 1], sb, wn * kWarpN + nj * 16, kk, lane);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) braze_mma(acc[mi][ni], af[mi], bf[ni], braze_tag<T>{});
    }
  }

  // k-tiles [kt_begin, kt_end) of the ceil(k / BK) only (split-K: a share of k).
  static BRAZE_DEV void run(float (&acc)[MI][NI][4], const T* a, long long lda, const T* b,
                            long long ldb, long long m, long long n, long long k, long long i0,
                            long long j0, braze_saddr smem, int kt_begin = 0,
                            int kt_end = 0x7fffffff) {
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.f;
    const int ktiles = (int)((k + BK - 1) / BK) < kt_end ? (int)((k + BK - 1) / BK) : kt_end;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (kt_begin + s < ktiles)
        load_stage(smem + s * kStageBytes, a, lda, b, ldb, m, n, k, i0, j0,
                   (long long)(kt_begin + s) * BK);
      braze_cp_async_commit();
    }
    for (int kt = kt_begin; kt < ktiles; ++kt) {
      // k-tile kt has landed for every thread, and every warp is done with tile kt - 1,
      // whose stage the next copy refills.
      braze_cp_async_wait<STAGES - 2>();
      __syncthreads();
      const int next = kt + STAGES - 1;
      if (next < ktiles)
        load_stage(smem + ((next - kt_begin) % STAGES) * kStageBytes, a, lda, b, ldb, m, n, k,
                   i0, j0, (long long)next * BK);
      braze_cp_async_commit();
      compute_stage(acc, smem + ((kt - kt_begin) % STAGES) * kStageBytes, warp / WN, warp % WN,
                    lane);
    }
    braze_cp_async_wait<0>();
    __syncthreads();
  }
};

// ---- split-K over a thread-block cluster (sm_90) ----

#ifndef BRAZE_CPU_EMULATION
// The SPLIT blocks of a cluster (ranks along x) computed one output tile over disjoint
// shares of k: braze_split_reduce (prelude) of the accumulators. `red` needs MI * NI * 4
// floats a thread.
template <int SPLIT, int MI, int NI>
BRAZE_DEV bool braze_tc_split_reduce(float (&acc)[MI][NI][4], float* red) {
  return braze_split_reduce<SPLIT, MI * NI * 4>(&acc[0][0][0], red);
}
#endif
