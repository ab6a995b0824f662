// braze flash attention, the forward pass on mma.sync (sm_80+), instantiated by the
// attention schedule (codegen/attention.cpp); needs mma.cuh before it.
//
// One block takes BM query rows of one batch (and head) with KSPLIT groups of BM / 16 warps,
// group g visiting key tiles g, g + KSPLIT, … (group 0 merges the others' partial results at
// the end): the Q tile stays in shared memory and registers, each group's K and V tiles of
// BN keys stream through two shared buffers (cp.async, the next tile's copies in flight
// during this tile's math), and the scores never leave registers:
//
//   S = Q Kᵀ (mma, fp32)  ->  x = score(i, j, S)  ->  online softmax: m = max(m, max_j x),
//   rescale l and O by exp(m_old - m), P = exp(x - m)  ->  O += P V (P as fp16/bf16 A fragments)
//
// Each warp owns MT x 16 query rows (MT mma row tiles sharing each K and V fragment it loads
// from shared memory). The C fragment of S (lane 4g + t holds rows g and g + 8,
// columns 2t, 2t + 1 of each 8-column block) is, pairwise, the A fragment P needs for the
// next product (mma.cuh lists the layouts), so P never goes through shared memory. K tiles
// give the B fragments of Q Kᵀ by ldmatrix, V tiles those of P V by ldmatrix.trans. Rows of
// D elements are padded to an odd number of 16-byte chunks, so the eight rows an ldmatrix
// 8x8 matrix reads fall in eight distinct bank groups.
//
// Keys past `sk` score -inf (their V rows are zero-filled); `score` maps the raw product of
// query row i and key j to the softmax's input (scale, mask, bias: the group's element-wise
// chain). A row whose every score is -inf ends with l = 0 and is given `dead` (0 where the
// export's Where(IsNaN(P), 0, P) asks for it, else NaN as the Softmax gives).
//
// T = float is the exact float32 path (a float32 model at --precision fp32): the same tiles,
// the same fragments and the same online softmax, with the two products as float32 FMAs
// instead of mma: a lane computes the S and O elements its mma fragments would hold (rows g,
// g + 8; columns 2t, 2t + 1 of each 8-column block) as dot products of Q and K rows read
// from shared memory as float4, and each warp stages its P tile in shared memory (rows padded
// by one float) for O += P V, whose V rows it reads as float2.
#ifndef BRAZE_ATTENTION_CUH
#define BRAZE_ATTENTION_CUH

// 2^x for the softmax on the special-function unit (braze_ex2_ftz: one instruction where
// exp2f takes four, three of them for subnormal results: probabilities below 2^-126, against
// a row sum of at least 1, and rescalings of what is that much smaller than the row's maximum).
BRAZE_DEV float braze_exp2(float x) { return braze_ex2_ftz(x); }
BRAZE_DEV float braze_neg_inf() { return -__int_as_float(0x7f800000); }

// Two floats as the b16 pair of one mma operand register (the first in the low half).
#ifndef BRAZE_CPU_EMULATION
BRAZE_DEV unsigned braze_pack2(float lo, float hi, braze_tag<__half>) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
BRAZE_DEV unsigned braze_pack2(float lo, float hi, braze_tag<__nv_bfloat16>) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
#else
template <class T>
BRAZE_DEV unsigned braze_pack2(float lo, float hi, braze_tag<T> tag) {
  const T a = braze_pack(tag, lo), b = braze_pack(tag, hi);
  unsigned short x, y;
  memcpy(&x, &a, 2);
  memcpy(&y, &b, 2);
  return x | (unsigned)y << 16;
}
#endif

// The live tiles' score when the chain is c · s with c > 0 (codegen's live_scale): softmax_step
// takes the maxima on the products themselves and each exponent as one FMA of the product.
struct braze_live_scale {
  float c;
  BRAZE_DEV float operator()(int, int, float s, float) const { return s * c; }
};
template <class S>
struct braze_is_live_scale {
  static constexpr bool value = false;
};
template <>
struct braze_is_live_scale<braze_live_scale> {
  static constexpr bool value = true;
};
template <>
struct braze_is_live_scale<const braze_live_scale> {
  static constexpr bool value = true;
};

template <class T, int D, int BM, int BN, int KSPLIT = 1, int MT = 1>
struct braze_flash {
  static_assert(D % 16 == 0 && D >= 16 && D <= 256, "head dim: a multiple of 16");
  static constexpr bool kSimt = sizeof(T) == 4;  // float32: FMAs, not mma
  static_assert(MT >= 1 && MT <= 2 && BM % (16 * MT) == 0 && BN % 16 == 0, "tiles of whole 16-row mma steps");
  static_assert(KSPLIT >= 1 && KSPLIT <= 4, "key tiles shared by 1 to 4 warp groups");
  // KSPLIT groups of BM / (16 MT) warps: group g takes key tiles g, g + KSPLIT, … for the
  // same BM query rows, and group 0 merges the others' (m, l, O) at the end, so that a grid
  // of few query tiles still has warps enough to hide each one's latency.
  static constexpr int kWarpRows = 16 * MT;
  static constexpr int kWarps = BM / kWarpRows, kGroupThreads = kWarps * 32, kThreads = kGroupThreads * KSPLIT;
  static constexpr int kPerChunk = 16 / (int)sizeof(T);                  // elements a 16-byte chunk
  static constexpr int kChunks = D / kPerChunk;
  static constexpr int kRowBytes = (kChunks % 2 ? kChunks : kChunks + 1) * 16;
  static constexpr int kQBytes = BM * kRowBytes, kTileBytes = BN * kRowBytes;
  // float32: each warp's P tile, rows of BN + 1 floats (the 8 rows a P read takes in distinct banks).
  static constexpr int kPRow = BN + 1;
  static constexpr int kPBytes = kSimt ? KSPLIT * kWarps * kWarpRows * kPRow * 4 : 0;
  static constexpr int kSharedBytes = kQBytes + KSPLIT * 4 * kTileBytes + kPBytes;  // Q; 2 x K, 2 x V a group; P
  static constexpr int kMergeFloats = MT * (D / 2 + 4);                  // a lane's O, m and l
  static_assert(KSPLIT == 1 || (KSPLIT - 1) * kGroupThreads * kMergeFloats * 4 <= KSPLIT * 4 * kTileBytes,
                "the merge fits in the K and V buffers");
  static constexpr float kLog2e = 1.4426950408889634f;

  // Starts copying rows row0.. of a [rows, D] matrix (row stride ld, D contiguous) into the
  // tile at dst, thread `tid` of `NT`; rows from `rows` on are zero-filled.
  template <int ROWS, int NT>
  static BRAZE_DEV void load(braze_saddr dst, const T* src, long long ld, int row0, int rows, int tid) {
#pragma unroll
    for (int l0 = 0; l0 < ROWS * kChunks; l0 += NT) {
      const int l = l0 + tid;
      if ((ROWS * kChunks) % NT != 0 && l >= ROWS * kChunks) break;
      const int r = l / kChunks, c = l % kChunks;
      const bool ok = row0 + r < rows;
      braze_cp_async16(dst + r * kRowBytes + c * 16, ok ? src + (long long)(row0 + r) * ld + c * kPerChunk : src, ok);
    }
  }

  // o: this lane's fragments of its warp's 16 MT x D output rows (o[mt][n][e]: row
  // 16 mt + g + 8 (e / 2), column 8n + 2t + e % 2, the warp's rows at (warp % kWarps) · 16 MT),
  // normalised; true for the threads that hold the result (group 0). Key tiles [0, kt_end) are visited; the rest
  // must be fully masked. Returns with shared memory free again.
  // `mask`, when MASK: the additive mask's element (row 0, key 0) for this batch, its rows
  // mask_ld apart and its keys contiguous; its pairs (keys 2t, 2t + 1 of each 8-key block)
  // are loaded before each tile's product, so their latency overlaps the mma, and reach
  // `score` as mk (else mk is 0).
  // SAFE: `score` reads nothing past the last key, so it runs on a partial tile's every
  // column and the columns past sk are set to -inf after it (else each is tested first).
  // LIVE: key tiles [0, kt_live) are whole and live for every row of the block (below a
  // causal mask's diagonal): they take `live`, the chain with the mask's live value in place.
  template <bool MASK, bool SAFE, bool LIVE, class Score, class LiveScore>
  static BRAZE_DEV bool run(float (&o)[MT][D / 8][4], const T* q, long long ldq, const T* k, long long ldk,
                            const T* v, long long ldv, const T* mask, long long mask_ld, int q0, int sq,
                            int sk, int kt_end, float dead, Score score, LiveScore live, int kt_live,
                            unsigned char* smem) {
    const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int group = warp / kWarps, wq = warp % kWarps, gtid = tid % kGroupThreads;
    const braze_saddr s_q = braze_smem_addr(smem), s_k = s_q + kQBytes + group * 4 * kTileBytes,
                      s_v = s_k + 2 * kTileBytes;
    load<BM, kThreads>(s_q, q, ldq, q0, sq, tid);
    if (group < kt_end) {
      load<BN, kGroupThreads>(s_k, k, ldk, group * BN, sk, gtid);
      load<BN, kGroupThreads>(s_v, v, ldv, group * BN, sk, gtid);
    }
    braze_cp_async_commit();

    float m[MT][2], l[MT][2];
    unsigned qf[kSimt ? 1 : MT][kSimt ? 1 : D / 16][4];
    int rows[MT][2];  // this lane's rows (clamped to the last): 16 mt + g and 16 mt + g + 8
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        m[mt][r] = braze_neg_inf();
        l[mt][r] = 0.f;
        const int row = q0 + wq * kWarpRows + mt * 16 + lane / 4 + r * 8;
        rows[mt][r] = row < sq ? row : sq - 1;
      }
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[mt][n][e] = 0.f;
    }

    // Every group makes the same number of passes (the barriers are the block's); a group
    // past its last tile waits through the rest.
    const int passes = (kt_end + KSPLIT - 1) / KSPLIT;
    for (int it = 0; it < passes; ++it) {
      const int kt = it * KSPLIT + group, buf = it & 1;
      if (kt + KSPLIT < kt_end) {
        load<BN, kGroupThreads>(s_k + (buf ^ 1) * kTileBytes, k, ldk, (kt + KSPLIT) * BN, sk, gtid);
        load<BN, kGroupThreads>(s_v + (buf ^ 1) * kTileBytes, v, ldv, (kt + KSPLIT) * BN, sk, gtid);
        braze_cp_async_commit();
        braze_cp_async_wait<1>();
      } else {
        braze_cp_async_wait<0>();
      }
      __syncthreads();
      if (!kSimt && it == 0) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) {
            const int r = wq * kWarpRows + mt * 16 + lane % 8 + ((lane / 8) % 2) * 8, c = kk * 2 + lane / 16;
            braze_ldmatrix_x4(qf[mt][kk], s_q + r * kRowBytes + c * 16);
          }
      }
      if constexpr (kSimt) {
        // Generic pointers to what s_q, s_k and s_v address.
        const float* fq = reinterpret_cast<const float*>(smem);
        const float* fk = reinterpret_cast<const float*>(smem + kQBytes + (group * 4 + buf) * kTileBytes);
        const float* fv = fk + 2 * kTileBytes / 4;
        float* ps = reinterpret_cast<float*>(smem + kQBytes + KSPLIT * 4 * kTileBytes) + warp * kWarpRows * kPRow;
        if (LIVE && kt < kt_live)
          simt_tile<MASK, true>(o, m, l, fq, rows, fk, fv, mask, mask_ld, kt, sk, live, ps);
        else if (kt < kt_end)
          simt_tile<MASK, SAFE>(o, m, l, fq, rows, fk, fv, mask, mask_ld, kt, sk, score, ps);
      } else {
        if (LIVE && kt < kt_live)
          tile<MASK, true>(o, m, l, qf, rows, s_k + buf * kTileBytes, s_v + buf * kTileBytes, mask, mask_ld, kt, sk,
                           live);
        else if (kt < kt_end)
          tile<MASK, SAFE>(o, m, l, qf, rows, s_k + buf * kTileBytes, s_v + buf * kTileBytes, mask, mask_ld, kt, sk,
                           score);
      }
      __syncthreads();  // this buffer is the one the next pass's copies overwrite
    }
    if (passes == 0) {
      braze_cp_async_wait<0>();
      __syncthreads();
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 1);
        l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 2);
      }
    if constexpr (KSPLIT > 1) merge(o, m, l, group, wq, lane, smem);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float inv = l[mt][r] > 0.f ? 1.f / l[mt][r] : 0.f;
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
#pragma unroll
          for (int c = 0; c < 2; ++c)
            o[mt][n][2 * r + c] = l[mt][r] > 0.f ? o[mt][n][2 * r + c] * inv : dead;
      }
    return group == 0;
  }

  // Group 0 takes in the other groups' running maxima, sums and unnormalised outputs: the
  // same lane of the same warp row holds the same rows and columns in every group.
  static BRAZE_DEV void merge(float (&o)[MT][D / 8][4], float (&m)[MT][2], float (&l)[MT][2], int group, int wq,
                              int lane, unsigned char* smem) {
    float* x = reinterpret_cast<float*>(smem + kQBytes);
    float* mine = x + ((group - 1) * kGroupThreads + wq * 32 + lane) * kMergeFloats;
    constexpr int kOne = D / 2 + 4;  // one row tile's floats
    if (group > 0) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) mine[mt * kOne + n * 4 + e] = o[mt][n][e];
        mine[mt * kOne + D / 2] = m[mt][0];
        mine[mt * kOne + D / 2 + 1] = m[mt][1];
        mine[mt * kOne + D / 2 + 2] = l[mt][0];
        mine[mt * kOne + D / 2 + 3] = l[mt][1];
      }
    }
    __syncthreads();
    if (group == 0) {
#pragma unroll
      for (int g = 1; g < KSPLIT; ++g)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const float* other = x + ((g - 1) * kGroupThreads + wq * 32 + lane) * kMergeFloats + mt * kOne;
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const float mo = other[D / 2 + r], mm = fmaxf(m[mt][r], mo);
            const float base = mm == braze_neg_inf() ? 0.f : mm;
            const float a = braze_exp2((m[mt][r] - base) * kLog2e), b = braze_exp2((mo - base) * kLog2e);
            l[mt][r] = l[mt][r] * a + other[D / 2 + 2 + r] * b;
#pragma unroll
            for (int n = 0; n < D / 8; ++n)
#pragma unroll
              for (int c = 0; c < 2; ++c)
                o[mt][n][2 * r + c] = o[mt][n][2 * r + c] * a + other[n * 4 + 2 * r + c] * b;
            m[mt][r] = mm;
          }
        }
    }
    __syncthreads();  // before the next batch's copies reuse the buffers
  }

  // One key tile: S = Q Kᵀ, the scores' chain, the online softmax, O += P V. Each K and V
  // fragment loaded from shared memory serves the warp's MT row tiles.
  template <bool MASK, bool SAFE, class Score>
  static BRAZE_DEV void tile(float (&o)[MT][D / 8][4], float (&m)[MT][2], float (&l)[MT][2],
                             const unsigned (&qf)[MT][D / 16][4], const int (&rows)[MT][2], braze_saddr tk,
                             braze_saddr tv, const T* mask, long long mask_ld, int kt, int sk, Score& score) {
    const int lane = (int)threadIdx.x % 32;
    const int j0 = kt * BN + 2 * (lane % 4);
    const bool full = (kt + 1) * BN <= sk;
    braze_vec<T, 2> mk[MASK ? MT : 1][MASK ? BN / 8 : 1][2];
    load_mask<MASK>(mk, rows, mask, mask_ld, j0, sk);
    // S = Q Kᵀ over this tile's BN keys.
    float s[MT][BN / 8][4];
    zero(s);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int n2 = 0; n2 < BN / 16; ++n2) {
        unsigned b[4];
        const int r = n2 * 16 + lane % 8 + (lane / 16) * 8, c = kk * 2 + (lane / 8) % 2;
        braze_ldmatrix_x4(b, tk + r * kRowBytes + c * 16);
        const unsigned b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          braze_mma(s[mt][2 * n2], qf[mt][kk], b0, braze_tag<T>{});
          braze_mma(s[mt][2 * n2 + 1], qf[mt][kk], b1, braze_tag<T>{});
        }
      }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) softmax_step<MASK, SAFE>(o[mt], m[mt], l[mt], s[mt], rows[mt], mk[MASK ? mt : 0], j0, full, sk, score);
    // O += P V.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      unsigned a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        a[mt][0] = braze_pack2(s[mt][2 * kk][0], s[mt][2 * kk][1], braze_tag<T>{});
        a[mt][1] = braze_pack2(s[mt][2 * kk][2], s[mt][2 * kk][3], braze_tag<T>{});
        a[mt][2] = braze_pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1], braze_tag<T>{});
        a[mt][3] = braze_pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3], braze_tag<T>{});
      }
#pragma unroll
      for (int n2 = 0; n2 < D / 16; ++n2) {
        unsigned b[4];
        const int r = kk * 16 + lane % 8 + ((lane / 8) % 2) * 8, c = n2 * 2 + lane / 16;
        braze_ldmatrix_x4_trans(b, tv + r * kRowBytes + c * 16);
        const unsigned b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          braze_mma(o[mt][2 * n2], a[mt], b0, braze_tag<T>{});
          braze_mma(o[mt][2 * n2 + 1], a[mt], b1, braze_tag<T>{});
        }
      }
    }
  }

  template <int A, int B>
  static BRAZE_DEV void zero(float (&x)[A][B][4]) {
#pragma unroll
    for (int a = 0; a < A; ++a)
#pragma unroll
      for (int b = 0; b < B; ++b)
#pragma unroll
        for (int e = 0; e < 4; ++e) x[a][b][e] = 0.f;
  }

  // The mask's pairs for a tile whose lane's first key is j0 (keys past sk read as 0: they
  // score -inf anyway).
  template <bool MASK>
  static BRAZE_DEV void load_mask(braze_vec<T, 2> (&mk)[MASK ? MT : 1][MASK ? BN / 8 : 1][2], const int (&rows)[MT][2],
                                  const T* mask, long long mask_ld, int j0, int sk) {
    if constexpr (MASK) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < BN / 8; ++n)
#pragma unroll
          for (int r = 0; r < 2; ++r)
            if (j0 + n * 8 < sk) mk[mt][n][r] = braze_vload<2>(mask + rows[mt][r] * mask_ld, (long long)(j0 + n * 8));
            else mk[mt][n][r] = braze_vec<T, 2>{};
    }
  }

  // One key tile in float32 (kSimt): tile()'s steps, each lane computing the elements of its
  // fragments. `ps`: this warp's P tile.
  template <bool MASK, bool SAFE, class Score>
  static BRAZE_DEV void simt_tile(float (&o)[MT][D / 8][4], float (&m)[MT][2], float (&l)[MT][2], const float* q,
                                  const int (&rows)[MT][2], const float* kk, const float* vv, const T* mask,
                                  long long mask_ld, int kt, int sk, Score& score, float* ps) {
    constexpr int kRowFloats = kRowBytes / 4;
    const int lane = (int)threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int wrow = ((int)threadIdx.x / 32 % kWarps) * kWarpRows;  // the warp's first row in the Q tile
    const int j0 = kt * BN + 2 * t;
    const bool full = (kt + 1) * BN <= sk;
    braze_vec<T, 2> mk[MASK ? MT : 1][MASK ? BN / 8 : 1][2];
    load_mask<MASK>(mk, rows, mask, mask_ld, j0, sk);
    // S = Q Kᵀ: rows g, g + 8 of each row tile against keys 8n + 2t, 8n + 2t + 1, four
    // elements of D at a time.
    float s[MT][BN / 8][4];
    zero(s);
#pragma unroll 4
    for (int d = 0; d < D; d += 4) {
      braze_vec<float, 4> qa[MT][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) qa[mt][r] = braze_vload<4>(q, (wrow + mt * 16 + g + 8 * r) * kRowFloats + d);
#pragma unroll
      for (int n = 0; n < BN / 8; ++n) {
        const braze_vec<float, 4> k0 = braze_vload<4>(kk, (n * 8 + 2 * t) * kRowFloats + d);
        const braze_vec<float, 4> k1 = braze_vload<4>(kk, (n * 8 + 2 * t + 1) * kRowFloats + d);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const float* a = qa[mt][r].v;
            s[mt][n][2 * r] += a[0] * k0.v[0] + a[1] * k0.v[1] + a[2] * k0.v[2] + a[3] * k0.v[3];
            s[mt][n][2 * r + 1] += a[0] * k1.v[0] + a[1] * k1.v[1] + a[2] * k1.v[2] + a[3] * k1.v[3];
          }
      }
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) softmax_step<MASK, SAFE>(o[mt], m[mt], l[mt], s[mt], rows[mt], mk[MASK ? mt : 0], j0, full, sk, score);
    // O += P V through this warp's P tile.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) ps[(mt * 16 + g + 8 * (e / 2)) * kPRow + n * 8 + 2 * t + e % 2] = s[mt][n][e];
    __syncwarp();
#pragma unroll 4
    for (int j = 0; j < BN; ++j) {
      float p[MT][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) p[mt][r] = ps[(mt * 16 + g + 8 * r) * kPRow + j];
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        const braze_vec<float, 2> v = braze_vload<2>(vv, j * kRowFloats + n * 8 + 2 * t);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            o[mt][n][2 * r] += p[mt][r] * v.v[0];
            o[mt][n][2 * r + 1] += p[mt][r] * v.v[1];
          }
      }
    }
    __syncwarp();  // the next tile's P overwrites this one
  }

  // softmax_step's live tile of scores c · s (c > 0): the maxima of s scaled once a row
  // (multiplying by c keeps the order), each exponent 2^(s c log2 e - m log2 e) one FMA where
  // softmax_step scales, subtracts and multiplies (two instructions fewer a score, each of
  // which takes an issue slot from the other warpgroup's wgmma's).
  static BRAZE_DEV void softmax_scaled(float (&alpha)[2], float (&m)[2], float (&l)[2], float (&s)[BN / 8][4],
                                       float c) {
    float mx[2] = {braze_neg_inf(), braze_neg_inf()};
#pragma unroll
    for (int n = 0; n < BN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) mx[e / 2] = fmaxf(mx[e / 2], s[n][e]);
    const float cl = c * kLog2e;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float top = fmaxf(m[r], mx[r] * c);
      const float base = top == braze_neg_inf() ? 0.f : top;
      alpha[r] = braze_exp2((m[r] - base) * kLog2e);
      m[r] = top;
      l[r] *= alpha[r];
      const float shift = -base * kLog2e;
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          const float p = braze_exp2(fmaf(s[n][2 * r + k], cl, shift));
          s[n][2 * r + k] = p;
          l[r] += p;
        }
    }
  }

  // O's rows scaled by the factors a softmax step gives them.
  static BRAZE_DEV void rescale(float (&o)[D / 8][4], const float (&alpha)[2]) {
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[n][e] *= alpha[e / 2];
  }

  // One row tile's scores: the softmax's input, the running maxima, and P = exp(x - m) in
  // place of S, O and l rescaled.
  template <bool MASK, bool SAFE, class Score>
  static BRAZE_DEV void softmax_step(float (&o)[D / 8][4], float (&m)[2], float (&l)[2], float (&s)[BN / 8][4],
                                     const int (&rows)[2], const braze_vec<T, 2> (&mk)[MASK ? BN / 8 : 1][2], int j0,
                                     bool full, int sk, Score& score) {
    float alpha[2];
    softmax_rows<MASK, SAFE>(alpha, m, l, s, rows, mk, j0, full, sk, score);
    rescale(o, alpha);
  }

  // softmax_step but for O: the factor each row of O is to be scaled by, in `alpha` (the wgmma
  // kernel scales O once the products still adding to it have retired).
  template <bool MASK, bool SAFE, class Score>
  static BRAZE_DEV void softmax_rows(float (&alpha)[2], float (&m)[2], float (&l)[2], float (&s)[BN / 8][4],
                                     const int (&rows)[2], const braze_vec<T, 2> (&mk)[MASK ? BN / 8 : 1][2], int j0,
                                     bool full, int sk, Score& score) {
    // A live tile (whole: every key below sk) whose chain is a scale; float32 keeps the
    // rounding of its exact path.
    if constexpr (braze_is_live_scale<Score>::value && !MASK && !kSimt) {
      softmax_scaled(alpha, m, l, s, score.c);
      return;
    }
#pragma unroll
    for (int n = 0; n < BN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = j0 + n * 8 + e % 2;
        float mv = 0.f;
        if constexpr (MASK) mv = braze_val(mk[n][e / 2].v[e % 2]);
        if constexpr (SAFE)
          s[n][e] = score(rows[e / 2], j, s[n][e], mv);
        else
          s[n][e] = full || j < sk ? score(rows[e / 2], j, s[n][e], mv) : braze_neg_inf();
      }
    if (SAFE && !full)
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (j0 + n * 8 + e % 2 >= sk) s[n][e] = braze_neg_inf();
    float mx[2] = {m[0], m[1]};
#pragma unroll
    for (int n = 0; n < BN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) mx[e / 2] = fmaxf(mx[e / 2], s[n][e]);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      // exp(-inf - -inf) would be NaN: a row with nothing live yet scales by 0. The
      // difference is taken before the scaling by log2(e), so that scores near a huge
      // finite mask (bfloat16's lowest) cancel exactly instead of through an FMA.
      const float base = mx[r] == braze_neg_inf() ? 0.f : mx[r];
      alpha[r] = braze_exp2((m[r] - base) * kLog2e);
      m[r] = mx[r];
      l[r] *= alpha[r];
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const float p = braze_exp2((s[n][2 * r + c] - base) * kLog2e);
          s[n][2 * r + c] = p;
          l[r] += p;
        }
    }
  }
};

#endif  // BRAZE_ATTENTION_CUH
