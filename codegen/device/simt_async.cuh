// braze SIMT GEMM main loop with its operands copied by cp.async (sm_80+) into STAGES
// shared-memory stages, for float products whose operands are float32 tensors read in place
// (codegen/gemm_simt.cpp, tile key `st`). Included after mma.cuh (cp.async, commit, wait) and
// simt_gemm.cuh (the stage layout, the fragments, the thread grid): the stages are laid out
// k-major as braze_simt_gemm's two are, so the k-steps read the same fragments; only the way
// a k-tile reaches shared memory differs. With two register-staged buffers a k-tile's global
// loads had to land within one k-tile's FMAs (BERT b1's 128 x 2304 x 768: SM throughput 29%
// against 61% for cuBLAS's three-stage cp.async kernel, Nsight Compute, H100 2026-12-07;
// 39.5 us against 25.9 here, bench/RESULTS.md); here STAGES - 1 k-tiles are in flight while
// one is computed.

#ifdef BRAZE_CPU_EMULATION
BRAZE_DEV void braze_cp_async4(braze_saddr dst, const void* src, bool valid) {
  if (valid)
    memcpy(dst, src, 4);
  else
    memset(dst, 0, 4);
}
#else
// 4 bytes global -> shared (through L1; cp.async.cg takes 16 only), zero-filled when !valid.
BRAZE_DEV void braze_cp_async4(braze_saddr dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 4 : 0));
}
#endif

// One float32 operand's ROWS x BK k-tile copied into a k-major stage (element (r, c) at
// s[c * (ROWS + 4) + r]): read in place at src[row * ld + p] when KFAST, else src[p * ld +
// row]. KFAST operands are transposed on the way, a float a copy, consecutive threads along k
// (so that a warp's reads are whole sectors); the others VEC rows a copy (16 bytes when VEC is
// 4: `rows` and ld multiples of 4, src aligned). Rows from `rows` and k from `k` read as zero.
// The copies are braze_simt_stage's (simt_gemm.cuh): its tile coordinates and stage layout.
template <int ROWS, int BK, int THREADS, bool KFAST, int VEC>
struct braze_simt_async {
  static constexpr int kWidth = KFAST ? 1 : VEC;  // floats a copy
  typedef braze_simt_stage<float, ROWS, BK, THREADS, KFAST, kWidth> Stage;
  const float* src_;
  long long ld_, row0_, rows_;
  int k_;

  BRAZE_DEV braze_simt_async(const float* src, long long ld, long long row0, long long rows,
                             long long k)
      : src_(src), ld_(ld), row0_(row0), rows_(rows), k_((int)k) {}

  // Starts the copies of the k-tile from k = p0 into the stage at s.
  BRAZE_DEV void issue(float* s, int p0) const {
#pragma unroll
    for (int j = 0; j < Stage::kPer; ++j) {
      int r, c;
      if (!Stage::at(j, r, c)) break;
      const long long row = row0_ + r;
      const int p = p0 + c;
      const bool ok = row < rows_ && p < k_;
      const float* from = ok ? (KFAST ? src_ + row * ld_ + p : src_ + (long long)p * ld_ + row) : src_;
      const braze_saddr to = braze_smem_addr(s + c * Stage::kStride + r);
      if (kWidth == 4)
        braze_cp_async16(to, from, ok);
      else
        braze_cp_async4(to, from, ok);
    }
  }
};

// braze_simt_gemm's product with its stages filled by cp.async, STAGES of them at smem
// (STAGES * kStage floats, 16-byte aligned); LA and LB are braze_simt_async readers. Each
// thread sums its k in order, as braze_simt_gemm::run does. Returns with shared memory free.
template <int BM, int BN, int BK, int TM, int TN, int STAGES>
struct braze_simt_gemm_async : braze_simt_gemm<float, BM, BN, BK, TM, TN> {
  typedef braze_simt_gemm<float, BM, BN, BK, TM, TN> Base;
  static constexpr int kSharedElems = STAGES * Base::kStage;
  static_assert(STAGES >= 2, "at least two stages");

  template <class LA, class LB>
  static BRAZE_DEV void run(float (&sum)[TM][TN], const LA& la, const LB& lb, int ktiles,
                            float* smem, int kt0 = 0) {
    const int tr = Base::thread_row(), tc = Base::thread_col();
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) sum[i][j] = 0.f;
    if (ktiles <= 0) return;
    // k-tiles 0 .. STAGES - 2 in flight, one commit group each (empty past the last).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ktiles) {
        la.issue(smem + s * Base::kStage, (kt0 + s) * BK);
        lb.issue(smem + s * Base::kStage + BK * Base::kAStride, (kt0 + s) * BK);
      }
      braze_cp_async_commit();
    }
    float fa[TM], fb[TN];
    int slot = 0, fill = STAGES - 1;  // the stage k-tile kt is in; the one k-tile kt + STAGES - 1 goes to
    for (int kt = 0; kt < ktiles; ++kt) {
      // k-tile kt has landed for every thread, and every thread is done with k-tile kt - 1,
      // whose stage the next copies refill.
      braze_cp_async_wait<STAGES - 2>();
      __syncthreads();
      if (kt + STAGES - 1 < ktiles) {
        la.issue(smem + fill * Base::kStage, (kt0 + kt + STAGES - 1) * BK);
        lb.issue(smem + fill * Base::kStage + BK * Base::kAStride, (kt0 + kt + STAGES - 1) * BK);
      }
      braze_cp_async_commit();
      const float* cur = smem + slot * Base::kStage;
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        Base::fragments(fa, fb, cur, kk, tr, tc);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) sum[i][j] += fa[i] * fb[j];
      }
      slot = slot + 1 == STAGES ? 0 : slot + 1;
      fill = fill + 1 == STAGES ? 0 : fill + 1;
    }
    braze_cp_async_wait<0>();
    __syncthreads();
  }
};
