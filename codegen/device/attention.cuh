// braze flash attention, the forward pass on mma.sync (sm_80+), instantiated by the
// attention schedule (codegen/attention.cpp); needs mma.cuh before it.
//
// One block of BM / 16 warps takes BM query rows of one batch (and head): its Q tile stays
// in shared memory and registers, K and V tiles of BN keys stream through two shared buffers
// (cp.async, the next tile's copies in flight during this tile's math), and the scores never
// leave registers:
//
//   S = Q Kᵀ (mma, fp32)  ->  x = score(i, j, S)  ->  online softmax: m = max(m, max_j x),
//   rescale l and O by exp(m_old - m), P = exp(x - m)  ->  O += P V (P as fp16/bf16 A fragments)
//
// Each warp owns 16 query rows. The C fragment of S (lane 4g + t holds rows g and g + 8,
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
#ifndef BRAZE_ATTENTION_CUH
#define BRAZE_ATTENTION_CUH

BRAZE_DEV float braze_exp2(float x) { return exp2f(x); }
BRAZE_DEV float braze_neg_inf() { return -__int_as_float(0x7f800000); }

// Two floats as the b16 pair of one mma operand register (the first in the low half).
BRAZE_DEV unsigned braze_pack2(float lo, float hi, braze_tag<__half>) {
  __half a = __float2half_rn(lo), b = __float2half_rn(hi);
  unsigned short x, y;
  memcpy(&x, &a, 2);
  memcpy(&y, &b, 2);
  return x | (unsigned)y << 16;
}
BRAZE_DEV unsigned braze_pack2(float lo, float hi, braze_tag<__nv_bfloat16>) {
  __nv_bfloat16 a = __float2bfloat16_rn(lo), b = __float2bfloat16_rn(hi);
  unsigned short x, y;
  memcpy(&x, &a, 2);
  memcpy(&y, &b, 2);
  return x | (unsigned)y << 16;
}

template <class T, int D, int BM, int BN>
struct braze_flash {
  static_assert(D % 16 == 0 && D >= 16 && D <= 256, "head dim: a multiple of 16");
  static_assert(BM % 16 == 0 && BN % 16 == 0, "tiles of whole 16-row mma steps");
  static constexpr int kWarps = BM / 16, kThreads = kWarps * 32;
  static constexpr int kChunks = D / 8;                                   // 16 bytes a chunk
  static constexpr int kRowBytes = (kChunks % 2 ? kChunks : kChunks + 1) * 16;
  static constexpr int kQBytes = BM * kRowBytes, kTileBytes = BN * kRowBytes;
  static constexpr int kSharedBytes = kQBytes + 4 * kTileBytes;          // Q, 2 x K, 2 x V
  static constexpr float kLog2e = 1.4426950408889634f;

  // Starts copying rows row0.. of a [rows, D] matrix (row stride ld, D contiguous) into the
  // tile at dst; rows from `rows` on are zero-filled.
  template <int ROWS>
  static BRAZE_DEV void load(braze_saddr dst, const T* src, long long ld, long long row0, long long rows) {
    for (int l = (int)threadIdx.x; l < ROWS * kChunks; l += kThreads) {
      const int r = l / kChunks, c = l % kChunks;
      const bool ok = row0 + r < rows;
      braze_cp_async16(dst + r * kRowBytes + c * 16, ok ? src + (row0 + r) * ld + c * 8 : src, ok);
    }
  }

  // o: this lane's fragments of the warp's 16 x D output rows (o[n][e]: row g + 8 (e / 2),
  // column 8n + 2t + e % 2), normalised. Key tiles [0, kt_end) are visited; the rest must be
  // fully masked. Returns with shared memory free again.
  // `mask`, when MASK: the additive mask's element (row 0, key 0) for this batch, its rows
  // mask_ld apart and its keys contiguous; its pairs (keys 2t, 2t + 1 of each 8-key block)
  // are loaded before each tile's product, so their latency overlaps the mma, and reach
  // `score` as mk (else mk is 0).
  template <bool MASK, class Score>
  static BRAZE_DEV void run(float (&o)[D / 8][4], const T* q, long long ldq, const T* k, long long ldk,
                            const T* v, long long ldv, const T* mask, long long mask_ld, long long q0,
                            long long sq, long long sk, int kt_end, float dead, Score score,
                            unsigned char* smem) {
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    const braze_saddr s_q = braze_smem_addr(smem), s_k = s_q + kQBytes, s_v = s_k + 2 * kTileBytes;
    load<BM>(s_q, q, ldq, q0, sq);
    if (kt_end > 0) {
      load<BN>(s_k, k, ldk, 0, sk);
      load<BN>(s_v, v, ldv, 0, sk);
    }
    braze_cp_async_commit();

    float m[2] = {braze_neg_inf(), braze_neg_inf()}, l[2] = {0.f, 0.f};
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[n][e] = 0.f;
    unsigned qf[D / 16][4];
    const long long row_a = q0 + warp * 16 + lane / 4;  // this lane's rows: row_a, row_a + 8
    const long long rows[2] = {row_a < sq ? row_a : sq - 1, row_a + 8 < sq ? row_a + 8 : sq - 1};

    for (int kt = 0; kt < kt_end; ++kt) {
      const int buf = kt & 1;
      if (kt + 1 < kt_end) {
        load<BN>(s_k + (buf ^ 1) * kTileBytes, k, ldk, (long long)(kt + 1) * BN, sk);
        load<BN>(s_v + (buf ^ 1) * kTileBytes, v, ldv, (long long)(kt + 1) * BN, sk);
        braze_cp_async_commit();
        braze_cp_async_wait<1>();
      } else {
        braze_cp_async_wait<0>();
      }
      __syncthreads();
      if (kt == 0) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          const int r = warp * 16 + lane % 8 + ((lane / 8) % 2) * 8, c = kk * 2 + lane / 16;
          braze_ldmatrix_x4(qf[kk], s_q + r * kRowBytes + c * 16);
        }
      }
      const braze_saddr tk = s_k + buf * kTileBytes, tv = s_v + buf * kTileBytes;
      const long long j0 = (long long)kt * BN + 2 * (lane % 4);
      // The mask's pairs for this tile (keys past sk read as 0: they score -inf anyway).
      braze_vec<T, 2> mk[MASK ? BN / 8 : 1][2];
      if constexpr (MASK) {
#pragma unroll
        for (int n = 0; n < BN / 8; ++n)
#pragma unroll
          for (int r = 0; r < 2; ++r)
            if (j0 + n * 8 < sk) mk[n][r] = braze_vload<2>(mask + rows[r] * mask_ld, j0 + n * 8);
            else mk[n][r] = braze_vec<T, 2>{};
      }
      // S = Q Kᵀ over this tile's BN keys.
      float s[BN / 8][4];
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[n][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
        for (int n2 = 0; n2 < BN / 16; ++n2) {
          unsigned b[4];
          const int r = n2 * 16 + lane % 8 + (lane / 16) * 8, c = kk * 2 + (lane / 8) % 2;
          braze_ldmatrix_x4(b, tk + r * kRowBytes + c * 16);
          const unsigned b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
          braze_mma(s[2 * n2], qf[kk], b0, braze_tag<T>{});
          braze_mma(s[2 * n2 + 1], qf[kk], b1, braze_tag<T>{});
        }
      // The softmax's input, the running maxima, and P = exp(x - m) in place of S.
      float mx[2] = {m[0], m[1]};
#pragma unroll
      for (int n = 0; n < BN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const long long j = j0 + n * 8 + e % 2;
          float mv = 0.f;
          if constexpr (MASK) mv = braze_val(mk[n][e / 2].v[e % 2]);
          const float x = j < sk ? score(rows[e / 2], j, s[n][e], mv) : braze_neg_inf();
          s[n][e] = x;
          mx[e / 2] = fmaxf(mx[e / 2], x);
        }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        // exp(-inf - -inf) would be NaN: a row with nothing live yet scales by 0. The
        // difference is taken before the scaling by log2(e), so that scores near a huge
        // finite mask (bfloat16's lowest) cancel exactly instead of through an FMA.
        const float base = mx[r] == braze_neg_inf() ? 0.f : mx[r];
        const float alpha = braze_exp2((m[r] - base) * kLog2e);
        m[r] = mx[r];
        l[r] *= alpha;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          o[n][2 * r] *= alpha;
          o[n][2 * r + 1] *= alpha;
        }
#pragma unroll
        for (int n = 0; n < BN / 8; ++n)
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const float p = braze_exp2((s[n][2 * r + c] - base) * kLog2e);
            s[n][2 * r + c] = p;
            l[r] += p;
          }
      }
      // O += P V.
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        const unsigned a[4] = {braze_pack2(s[2 * kk][0], s[2 * kk][1], braze_tag<T>{}),
                               braze_pack2(s[2 * kk][2], s[2 * kk][3], braze_tag<T>{}),
                               braze_pack2(s[2 * kk + 1][0], s[2 * kk + 1][1], braze_tag<T>{}),
                               braze_pack2(s[2 * kk + 1][2], s[2 * kk + 1][3], braze_tag<T>{})};
#pragma unroll
        for (int n2 = 0; n2 < D / 16; ++n2) {
          unsigned b[4];
          const int r = kk * 16 + lane % 8 + ((lane / 8) % 2) * 8, c = n2 * 2 + lane / 16;
          braze_ldmatrix_x4_trans(b, tv + r * kRowBytes + c * 16);
          const unsigned b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
          braze_mma(o[2 * n2], a, b0, braze_tag<T>{});
          braze_mma(o[2 * n2 + 1], a, b1, braze_tag<T>{});
        }
      }
      __syncthreads();  // this buffer is the one the next iteration's copies overwrite
    }
    if (kt_end == 0) {
      braze_cp_async_wait<0>();
      __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
      l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
      const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
#pragma unroll
        for (int c = 0; c < 2; ++c) o[n][2 * r + c] = l[r] > 0.f ? o[n][2 * r + c] * inv : dead;
    }
  }
};

#endif  // BRAZE_ATTENTION_CUH
