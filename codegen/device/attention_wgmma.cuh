// braze flash attention, the forward pass on Hopper (sm_90a): wgmma with TMA and a producer
// warpgroup, instantiated by codegen/attention_wgmma.cpp; needs mma.cuh, wgmma.cuh and
// attention.cuh (whose online softmax step it shares) before it.
//
// A block takes items — BM = 64 CONS query rows of one batch (and head) each — in rounds
// (braze_flash_slot: a persistent grid of fewer blocks than items walks them in turn), with
// CONS + 1 warpgroups:
//
//   warpgroup 0, one thread: for each item TMA-loads its Q tile (once the consumers have read
//     the previous item's), then for each key tile the K and V tiles into the next stage
//     (waiting until the consumers have freed it), each on its own barrier, so that Q Kᵀ can
//     start while V is still landing — the next item's tiles while this one's finish;
//   warpgroup 1 + c: query rows 64 c .. 64 c + 63. Per key tile: S = Q Kᵀ (wgmma m64nBNk16,
//     Q and K from shared memory), the scores' chain and the online softmax in registers (the
//     wgmma accumulator of each warp is the mma.sync C fragment, so braze_flash's softmax
//     step serves as it is), then O += P V (wgmma m64nDk16 with P from registers — the C
//     fragment pairs are its A fragment — and V from shared memory, MN-major). A tile's
//     softmax runs while the previous tile's P V is still on the tensor cores.
//
// Shared tiles are what the TMA writes with the 128-byte swizzle: rows of 64 elements (128
// bytes), a head dim of 128 as two such boxes side by side (box h at h x rows x 128 bytes).
// Q Kᵀ's operands are both K-major (the head dim contiguous); P V's B (V, keys x head dim)
// is MN-major: its 64-column boxes are LBO = BN x 128 bytes apart, its 8-key groups SBO =
// 1024. TMA zero-fills rows past the sequences; keys past sk score -inf (the softmax step),
// so their zero V rows add nothing. Each consumer warp frees a stage once its P V has retired.
#ifndef BRAZE_ATTENTION_WGMMA_CUH
#define BRAZE_ATTENTION_WGMMA_CUH
#ifndef BRAZE_CPU_EMULATION

// One item of a block: its first query row, one past its last key tile, and the key tiles
// whole and live for every row (braze_flash::run's kt_live).
struct braze_flash_item {
  int q0, kt_end, kt_live;
};

// The item a block takes in round r: the blocks walk the items in rounds of gridDim.x, every
// other round in reverse, so that items sorted heaviest first (the longest causal query tiles)
// even out over the blocks.
BRAZE_DEV int braze_flash_slot(int r) {
  return r * (int)gridDim.x + ((r & 1) ? (int)gridDim.x - 1 - (int)blockIdx.x : (int)blockIdx.x);
}

template <int N>
BRAZE_DEV void braze_fence_frag(float (&d)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[i][e])::"memory");
}

// OPS::qk(s, desc_q, desc_k, accumulate) (S = Q Kᵀ, or S += … when accumulate) and
// OPS::pv(o, a, desc_v) (O += P V, P's A fragment in a) are written by the schedule for the
// kernel's BN and D (their register lists are literal).
template <class T, int D, int BN, int CONS, int STAGES, bool PP, class OPS>
struct braze_flash_wg {
  static_assert(D == 64 || D == 128, "head dims of whole 128-byte rows");
  static_assert(BN % 16 == 0 && BN >= 16 && BN <= 256, "key tiles of whole k16 steps, a TMA box at most");
  static_assert(CONS == 1 || CONS == 2, "one or two consumer warpgroups");
  static_assert(STAGES >= 1 && STAGES <= 4, "1 to 4 stages");
  typedef braze_flash<T, D, 64, BN> step;  // the online softmax of one warp's 16 rows
  static constexpr int BM = 64 * CONS, kThreads = 128 * (CONS + 1), kBoxes = D / 64;
  static constexpr int kQBytes = BM * D * 2, kTileBytes = BN * D * 2;
  static constexpr int kKOff = kQBytes, kVOff = kKOff + STAGES * kTileBytes, kBarOff = kVOff + STAGES * kTileBytes;
  static constexpr int kSharedBytes = kBarOff + 8 * (2 + 3 * STAGES) + 1024;  // 1024: the alignment
  static constexpr float kLog2e = 1.4426950408889634f;

  // Shared memory: the tiles, then the barriers (Q's arrival and its release by the consumer
  // warps; each stage's K and V arrivals and its release).
  struct Smem {
    braze_saddr q, k, v, q_bar, q_empty, k_full, v_full, empty;
    BRAZE_DEV explicit Smem(unsigned char* raw) {
      q = (braze_smem_addr(raw) + 1023u) & ~1023u;
      k = q + kKOff;
      v = q + kVOff;
      q_bar = q + kBarOff;
      q_empty = q_bar + 8;
      k_full = q_empty + 8;
      v_full = k_full + 8 * STAGES;
      empty = v_full + 8 * STAGES;
    }
  };

  // The whole block, first: the barriers initialised.
  static BRAZE_DEV void init(unsigned char* raw) {
    const Smem sm(raw);
    if (threadIdx.x == 0) {
      braze_mbar_init(sm.q_bar, 1);
      braze_mbar_init(sm.q_empty, 4 * CONS);
      for (int s = 0; s < STAGES; ++s) {
        braze_mbar_init(sm.k_full + 8 * s, 1);
        braze_mbar_init(sm.v_full + 8 * s, 1);
        braze_mbar_init(sm.empty + 8 * s, 4 * CONS);
      }
      braze_mbar_init_fence();
    }
    __syncthreads();
  }

  // Warpgroup 0 (whose threads then leave the kernel: were they to return into code that
  // the consumers' outputs reach, those would be live, in registers the producer gives back).
  // item(slot) gives the item (braze_flash_item) and points the loads at its batch;
  // load_q(dst, c0, row, bar) copies the box of head-dim columns c0 .. c0 + 63 and rows row ..
  // row + BM - 1 of the batch's Q into dst (load_k, load_v: BN rows of K, V); an item's key
  // tiles [0, kt_end) are loaded. Tiles are counted over the block's items: tile t goes to
  // stage t % STAGES.
  template <class Item, class LoadQ, class LoadK, class LoadV>
  static BRAZE_DEV void produce(Item item, int n_items, LoadQ load_q, LoadK load_k, LoadV load_v, unsigned char* raw) {
    if constexpr (CONS > 1) braze_setmaxnreg_dec<40>();
    if (threadIdx.x != 0) return;
    const Smem sm(raw);
    int tiles = 0;
    for (int r = 0;; ++r) {
      const int slot = braze_flash_slot(r);
      if (slot >= n_items) break;
      const braze_flash_item it = item(slot);
      if (r > 0) braze_mbar_wait(sm.q_empty, (r - 1) & 1);  // the last item's Q Kᵀ retired
      braze_mbar_arrive_expect(sm.q_bar, kQBytes);
#pragma unroll
      for (int h = 0; h < kBoxes; ++h) load_q(sm.q + h * BM * 128, h * 64, it.q0, sm.q_bar);
      for (int kt = 0; kt < it.kt_end; ++kt) {
        const int t = tiles + kt, s = t % STAGES;
        braze_mbar_wait(sm.empty + 8 * s, ((t / STAGES) & 1) ^ 1);
        braze_mbar_arrive_expect(sm.k_full + 8 * s, kTileBytes);
#pragma unroll
        for (int h = 0; h < kBoxes; ++h) load_k(sm.k + s * kTileBytes + h * BN * 128, h * 64, kt * BN, sm.k_full + 8 * s);
        braze_mbar_arrive_expect(sm.v_full + 8 * s, kTileBytes);
#pragma unroll
        for (int h = 0; h < kBoxes; ++h) load_v(sm.v + s * kTileBytes + h * BN * 128, h * 64, kt * BN, sm.v_full + 8 * s);
      }
      tiles += it.kt_end;
    }
    // Until the consumers have freed every stage: their waits have no time limit
    // (braze_mbar_wait_spin), this one's covers them.
    for (int t = tiles > STAGES ? tiles - STAGES : 0; t < tiles; ++t)
      braze_mbar_wait(sm.empty + 8 * (t % STAGES), (t / STAGES) & 1);
  }

  // Warpgroups 1 .. CONS, once before their first item.
  static BRAZE_DEV void consumer_begin() {
    if constexpr (CONS > 1) braze_setmaxnreg_inc<232>();
  }

  // Warpgroups 1 .. CONS, the block's item of round `round` (after consumer_begin), whose
  // first key tile is the block's tile `tile0` (produce's count). o, m, l, mask, score, live,
  // kt_end, kt_live and dead as braze_flash::run; the rows of consumer warp w (0 .. 4 CONS - 1)
  // are 16 w .. 16 w + 15.
  template <bool MASK, bool SAFE, bool LIVE, class Score, class LiveScore>
  static BRAZE_DEV void consume(float (&o)[1][D / 8][4], const T* mask, long long mask_ld, int q0, int sq, int sk,
                                int kt_end, float dead, Score score, LiveScore live, int kt_live, int round, int tile0,
                                unsigned char* raw) {
    const Smem sm(raw);
    const braze_saddr s_q = sm.q, s_k = sm.k, s_v = sm.v, q_bar = sm.q_bar, k_full = sm.k_full, v_full = sm.v_full,
                      empty = sm.empty;
    const int tid = (int)threadIdx.x, wg = tid / 128;
    const int cons = wg - 1, cw = (tid / 32) % 4, lane = tid % 32;
    float m[2], l[2];
    int rows[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      m[r] = braze_neg_inf();
      l[r] = 0.f;
      const int row = q0 + cons * 64 + cw * 16 + lane / 4 + r * 8;
      rows[r] = row < sq ? row : sq - 1;
    }
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[0][n][e] = 0.f;
    braze_mbar_wait_spin(q_bar, round & 1);
    const braze_saddr q_rows = s_q + cons * 64 * 128;
    // Phase kt issues S = Q Kᵀ of tile kt and O += P V of key tile kt - 1, takes tile kt's
    // softmax once the first has retired, then (once P V has too) frees tile kt - 1's stage and
    // scales O. PP: the two
    // consumer warpgroups take turns to issue a phase's products (named barriers 1 and 2:
    // warpgroup c waits on 1 + c, which the other arrives at once it has issued its own), so
    // that one's softmax runs while the other's products keep the tensor cores busy;
    // warpgroup 0 goes first.
    constexpr bool kTurns = PP && CONS == 2;
    float sc[BN / 8][4];
    unsigned p[BN / 16][4];
    braze_vec<T, 2> mk[MASK ? BN / 8 : 1][2];
    // The products are issued unconditionally in each of the three parts below (first tile,
    // the rest, the last P V), after their tiles' waits: ptxas serialises wgmma's under a
    // branch, or after a wait's loop between the fence and them.
    auto turn = [&] {
      if (kTurns) braze_bar_sync(1 + cons, 256);
    };
    auto pass_turn = [&] {
      if (kTurns) braze_bar_arrive(2 - cons, 256);
    };
    // Key tile kt's stage, and the parity of its barriers' phase.
    auto stage = [&](int kt) { return (tile0 + kt) % STAGES; };
    auto parity = [&](int kt) { return (unsigned)((tile0 + kt) / STAGES) & 1u; };
    auto issue_pv = [&](int kt) {
      const braze_saddr tv = s_v + stage(kt) * kTileBytes;
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) OPS::pv(o[0], p[kk], braze_wgmma_desc(tv + kk * 2048, BN * 128, 1024u));
    };
    auto issue_qk = [&](int kt) {
      const braze_saddr tk = s_k + stage(kt) * kTileBytes;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
        OPS::qk(sc, braze_wgmma_desc(q_rows + (kk / 4) * BM * 128 + (kk % 4) * 32, 16u, 1024u),
                braze_wgmma_desc(tk + (kk / 4) * BN * 128 + (kk % 4) * 32, 16u, 1024u), kk > 0);
    };
    // The mask's pairs for tile kt, loaded while the products run.
    auto load_mask = [&](int kt) {
      if constexpr (MASK) {
        const int j0 = kt * BN + 2 * (lane % 4);
#pragma unroll
        for (int n = 0; n < BN / 8; ++n)
#pragma unroll
          for (int r = 0; r < 2; ++r)
            if (j0 + n * 8 < sk) mk[n][r] = braze_vload<2>(mask + rows[r] * mask_ld, (long long)(j0 + n * 8));
            else mk[n][r] = braze_vec<T, 2>{};
      }
    };
    // After the last wait: every product has retired. P's registers are kept from other
    // values until then (P V reads them as it runs).
    auto retire = [&] {
      braze_wgmma_wait<0>();
      braze_fence_frag(sc);
      braze_fence_frag(o[0]);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(p[kk][e])::"memory");
    };
    auto release = [&](int kt) {
      if (lane == 0) braze_mbar_arrive(empty + 8 * stage(kt));
    };
    // Once this item's last Q Kᵀ has retired: the producer may load the next item's Q.
    auto release_q = [&] {
      if (lane == 0) braze_mbar_arrive(sm.q_empty);
    };
    // Tile kt's softmax: P in place of its scores, and the factors O's rows are to be scaled by.
    float alpha[2];
    auto softmax = [&](int kt) {
      const int j0 = kt * BN + 2 * (lane % 4);
      const bool full = (kt + 1) * BN <= sk;
      if (LIVE && kt < kt_live)
        step::template softmax_rows<MASK, true>(alpha, m, l, sc, rows, mk, j0, full, sk, live);
      else
        step::template softmax_rows<MASK, SAFE>(alpha, m, l, sc, rows, mk, j0, full, sk, score);
    };
    // Once the products adding to O have retired: O scaled, and P packed as P V's A fragments.
    auto rescale_and_pack = [&] {
      step::rescale(o[0], alpha);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        p[kk][0] = braze_pack2(sc[2 * kk][0], sc[2 * kk][1], braze_tag<T>{});
        p[kk][1] = braze_pack2(sc[2 * kk][2], sc[2 * kk][3], braze_tag<T>{});
        p[kk][2] = braze_pack2(sc[2 * kk + 1][0], sc[2 * kk + 1][1], braze_tag<T>{});
        p[kk][3] = braze_pack2(sc[2 * kk + 1][2], sc[2 * kk + 1][3], braze_tag<T>{});
      }
    };
    if (kTurns && cons == 1) braze_bar_arrive(1, 256);
    if (kt_end > 0) {
      turn();
      braze_mbar_wait_spin(k_full + 8 * stage(0), parity(0));
      braze_wgmma_fence();
      issue_qk(0);
      braze_wgmma_commit();
      pass_turn();
      load_mask(0);
      retire();
      if (kt_end == 1) release_q();
      softmax(0);
      rescale_and_pack();
      // Each its own group: the softmax waits for Q Kᵀ alone, while P V still runs (its P in
      // registers is not written until it has retired).
      for (int kt = 1; kt < kt_end; ++kt) {
        turn();
        braze_mbar_wait_spin(v_full + 8 * stage(kt - 1), parity(kt - 1));
        braze_mbar_wait_spin(k_full + 8 * stage(kt), parity(kt));
        braze_fence_frag(o[0]);
        braze_wgmma_fence();
        issue_qk(kt);
        braze_wgmma_commit();
        issue_pv(kt - 1);
        braze_wgmma_commit();
        pass_turn();
        load_mask(kt);
        braze_wgmma_wait<1>();
        braze_fence_frag(sc);
        if (kt == kt_end - 1) release_q();
        softmax(kt);
        retire();
        release(kt - 1);
        rescale_and_pack();
      }
      turn();
      braze_mbar_wait_spin(v_full + 8 * stage(kt_end - 1), parity(kt_end - 1));
      braze_fence_frag(o[0]);
      braze_wgmma_fence();
      issue_pv(kt_end - 1);
      braze_wgmma_commit();
      if (cons == 0) pass_turn();  // warpgroup 1's last turn is nobody's
      retire();
      release(kt_end - 1);
    } else {
      release_q();
      if (kTurns && cons == 0) braze_bar_sync(1, 256);  // warpgroup 1's first arrival
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
      l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
      const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
#pragma unroll
        for (int c = 0; c < 2; ++c) o[0][n][2 * r + c] = l[r] > 0.f ? o[0][n][2 * r + c] * inv : dead;
    }
  }
};

#endif  // BRAZE_CPU_EMULATION
#endif  // BRAZE_ATTENTION_WGMMA_CUH
