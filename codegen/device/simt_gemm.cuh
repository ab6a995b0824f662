// braze SIMT GEMM main loop, instantiated by the SIMT GEMM schedule (codegen/gemm_simt.cpp)
// for products without tensor cores (float32, float64, integers, and the half types where
// the tensor-core schedule does not apply). Only that schedule's kernels include this.
//
// A block computes a BM x BN tile of C; thread (tr, tc) of the RT x CT thread grid
// (RT = BM / TM, CT = BN / TN) holds a TM x TN micro-tile made of (TM/4) x (TN/4) sub-tiles
// of 4 x 4, spaced 4 RT rows and 4 CT columns apart:
//
//   columns:  4tc .. 4tc+3          4CT + 4tc .. +3
//   rows 4tr .. 4tr+3          [ 4 x 4 ]               [ 4 x 4 ]
//   rows 4RT + 4tr .. +3       [ 4 x 4 ]               [ 4 x 4 ]
//
// Both operands are staged k-major in shared memory (A as [BK][BM + 4], B as [BK][BN + 4]),
// so a k-step reads each 4-wide fragment with one 16-byte load. The lanes of a warp form a
// 4 x 8 block of the thread grid: the eight lanes of a quarter-warp read eight consecutive
// 16-byte B fragments and one broadcast A fragment, without bank conflicts.
//
// K advances BK at a time through two shared-memory stages. Each thread fetches its share of
// the next k-tile from global memory into registers at the start of a k-tile, runs BK - 1
// k-steps of FMAs while the loads are in flight, then stores the registers into the other
// stage and synchronises once, before the last k-step's FMAs. With PREFETCH, step kk + 1's
// fragments (at the last step, the next stage's first) are read into a second register set
// before step kk's FMAs; 8 x 8 float micro-tiles of 256-thread blocks cannot afford it at two
// blocks an SM (128 registers), where the compiler's schedule overlaps what it can.

// One operand's share of a ROWS x BK tile (ROWS: the m or n extent), VEC elements consecutive
// along the operand's fast dim per copy: k when KFAST, else the row dim. Copy l of the tile
// belongs to thread l % THREADS.
template <class Acc, int ROWS, int BK, int THREADS, bool KFAST, int VEC>
struct braze_simt_stage {
  static constexpr int kCopies = ROWS * BK / VEC;
  static constexpr int kPer = (kCopies + THREADS - 1) / THREADS;
  static constexpr int kStride = ROWS + 4;  // of the k-major shared tile
  static_assert((KFAST ? BK : ROWS) % VEC == 0, "copies tile the fast dim");
  Acc v[kPer][VEC];

  // The tile coordinates (row r, k c) of this thread's copy j; false when it has none.
  static BRAZE_DEV bool at(int j, int& r, int& c) {
    const unsigned l = j * THREADS + threadIdx.x;  // unsigned: shifts and masks
    if (KFAST) {
      r = (int)(l / (BK / VEC));
      c = (int)(l % (BK / VEC) * VEC);
    } else {
      c = (int)(l / (ROWS / VEC));
      r = (int)(l % (ROWS / VEC) * VEC);
    }
    return kCopies % THREADS == 0 || l < (unsigned)kCopies;
  }

  // Writes the registers into the k-major tile: element (r, c) at s[c * kStride + r].
  BRAZE_DEV void stash(Acc* s) const {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      int r, c;
      if (!at(j, r, c)) break;
      if (KFAST || VEC == 1) {
#pragma unroll
        for (int q = 0; q < VEC; ++q) s[(c + (KFAST ? q : 0)) * kStride + r + (KFAST ? 0 : q)] = v[j][q];
      } else {
        braze_vec<Acc, VEC> x;
#pragma unroll
        for (int q = 0; q < VEC; ++q) x.v[q] = v[j][q];
        *reinterpret_cast<braze_vec<Acc, VEC>*>(s + c * kStride + r) = x;
      }
    }
  }
};

// A stage read straight from an operand in global memory: element (row, p) at
// src[row * ld + p] when KFAST, else src[p * ld + row]. With VEC > 1 a copy is one vector
// load, so the fast dim's extent (k, or `rows`) and ld must be multiples of VEC and src
// aligned to the vector. Rows from `rows` and k from `k` read as zero.
template <class T, class Acc, int ROWS, int BK, int THREADS, bool KFAST, int VEC>
struct braze_simt_gmem : braze_simt_stage<Acc, ROWS, BK, THREADS, KFAST, VEC> {
  typedef braze_simt_stage<Acc, ROWS, BK, THREADS, KFAST, VEC> Stage;
  const T* p_[Stage::kPer];  // copy j's first element in the next k-tile
  int kc_[Stage::kPer];      // its k within a tile (k_ when the thread has no copy j)
  bool row_ok_[Stage::kPer];
  long long step_;  // elements from one k-tile to the next
  int k_;

  BRAZE_DEV braze_simt_gmem(const T* src, long long ld, long long row0, long long rows, long long k)
      : step_(KFAST ? BK : BK * ld), k_((int)k) {
#pragma unroll
    for (int j = 0; j < Stage::kPer; ++j) {
      int r, c;
      const bool has = Stage::at(j, r, c);
      kc_[j] = has ? c : k_;
      row_ok_[j] = has && row0 + r < rows;
      p_[j] = KFAST ? src + (row0 + r) * ld + c : src + c * ld + row0 + r;
    }
  }

  // Moves the pointers `tiles` k-tiles on (split-K: a block's share starts there).
  BRAZE_DEV void advance(int tiles) {
#pragma unroll
    for (int j = 0; j < Stage::kPer; ++j) p_[j] += tiles * step_;
  }

  // Loads the k-tile starting at p0 (the next one: the pointers advance).
  BRAZE_DEV void fetch(int p0) {
#pragma unroll
    for (int j = 0; j < Stage::kPer; ++j) {
      if (row_ok_[j] && p0 + kc_[j] < k_) {
        if (VEC > 1) {
          const braze_vec<T, VEC> x = braze_vload<VEC>(p_[j], 0);
#pragma unroll
          for (int q = 0; q < VEC; ++q) this->v[j][q] = (Acc)braze_val(x.v[q]);
        } else {
          this->v[j][0] = (Acc)braze_load(p_[j], 0);
        }
      } else {
#pragma unroll
        for (int q = 0; q < VEC; ++q) this->v[j][q] = (Acc)0;
      }
      p_[j] += step_;
    }
  }
};

// A stage whose elements a function computes, f(row, p) -> Acc (an operand read through the
// emitter: a view, a cast, a broadcast), one element a copy; out-of-range elements read zero.
template <class Acc, int ROWS, int BK, int THREADS, bool KFAST, class F>
struct braze_simt_fn : braze_simt_stage<Acc, ROWS, BK, THREADS, KFAST, 1> {
  typedef braze_simt_stage<Acc, ROWS, BK, THREADS, KFAST, 1> Stage;
  F& f_;
  long long row0_, rows_, k_;

  BRAZE_DEV braze_simt_fn(F& f, long long row0, long long rows, long long k)
      : f_(f), row0_(row0), rows_(rows), k_(k) {}

  BRAZE_DEV void advance(int) {}  // fetch's p0 says where

  BRAZE_DEV void fetch(int p0) {
#pragma unroll
    for (int j = 0; j < Stage::kPer; ++j) {
      int r, c;
      const bool has = Stage::at(j, r, c);
      const long long row = row0_ + r, p = (long long)p0 + c;
      this->v[j][0] = has && row < rows_ && p < k_ ? f_(row, p) : (Acc)0;
    }
  }
};

template <class Acc, int BM, int BN, int BK, int TM, int TN>
struct braze_simt_gemm {
  static constexpr int RT = BM / TM, CT = BN / TN, kThreads = RT * CT;
  static constexpr int kLaneCols = CT < 8 ? CT : 8, kLaneRows = 32 / kLaneCols;
  static constexpr int kAStride = BM + 4, kBStride = BN + 4;
  static constexpr int kStage = BK * (kAStride + kBStride);
  static constexpr int kSharedElems = 2 * kStage;
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BM % TM == 0 && BN % TN == 0, "micro-tile shape");
  static_assert(kThreads % 32 == 0 && RT % kLaneRows == 0, "whole warps of 4 x 8 lanes");

  // This thread's place (tr, tc) in the thread grid.
  static BRAZE_DEV int thread_row() {
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    return (int)(warp / (CT / kLaneCols) * kLaneRows + lane / kLaneCols);
  }
  static BRAZE_DEV int thread_col() {
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    return (int)(warp % (CT / kLaneCols) * kLaneCols + lane % kLaneCols);
  }
  // The block-tile row of accumulator row ti of thread row tr; columns likewise.
  static BRAZE_DEV int row_of(int tr, int ti) { return ti / 4 * 4 * RT + 4 * tr + ti % 4; }
  static BRAZE_DEV int col_of(int tc, int tj) { return tj / 4 * 4 * CT + 4 * tc + tj % 4; }

  // k-step kk's fragments of the stage at s.
  static BRAZE_DEV void fragments(Acc (&fa)[TM], Acc (&fb)[TN], const Acc* s, int kk, int tr,
                                  int tc) {
#pragma unroll
    for (int i = 0; i < TM / 4; ++i) {
      const braze_vec<Acc, 4> x =
          *reinterpret_cast<const braze_vec<Acc, 4>*>(s + kk * kAStride + i * 4 * RT + 4 * tr);
#pragma unroll
      for (int q = 0; q < 4; ++q) fa[4 * i + q] = x.v[q];
    }
#pragma unroll
    for (int i = 0; i < TN / 4; ++i) {
      const braze_vec<Acc, 4> x = *reinterpret_cast<const braze_vec<Acc, 4>*>(
          s + BK * kAStride + kk * kBStride + i * 4 * CT + 4 * tc);
#pragma unroll
      for (int q = 0; q < 4; ++q) fb[4 * i + q] = x.v[q];
    }
  }

  // sum = the block tile's product over `ktiles` k-tiles of A's stage `la` (BM rows) and
  // B's `lb` (BN rows), from k-tile kt0 on (split-K); smem holds kSharedElems, 32-byte
  // aligned. Returns with shared memory free again. PREFETCH: k-step kk + 1's fragments are
  // read into a second set of registers before step kk's FMAs (more registers; without it
  // the compiler's schedule decides).
  template <bool PREFETCH, class LA, class LB>
  static BRAZE_DEV void run(Acc (&sum)[TM][TN], LA& la, LB& lb, int ktiles, Acc* smem,
                            int kt0 = 0) {
    const int tr = thread_row(), tc = thread_col();
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) sum[i][j] = (Acc)0;
    if (ktiles <= 0) return;
    la.advance(kt0);
    lb.advance(kt0);
    la.fetch(kt0 * BK);
    lb.fetch(kt0 * BK);
    la.stash(smem);
    lb.stash(smem + BK * kAStride);
    __syncthreads();
    Acc fa[PREFETCH ? 2 : 1][TM], fb[PREFETCH ? 2 : 1][TN];
    if (PREFETCH) fragments(fa[0], fb[0], smem, 0, tr, tc);
    for (int kt = 0; kt < ktiles; ++kt) {
      const Acc* cur = smem + (kt & 1) * kStage;
      Acc* next = smem + ((kt + 1) & 1) * kStage;
      const bool more = kt + 1 < ktiles;
      if (more) {
        la.fetch((kt0 + kt + 1) * BK);
        lb.fetch((kt0 + kt + 1) * BK);
      }
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        const int f = PREFETCH ? kk % 2 : 0;
        if (!PREFETCH) fragments(fa[0], fb[0], cur, kk, tr, tc);
        if (kk == BK - 1 && more) {
          // Every thread finished reading `next` (k-tile kt - 1) before the last barrier.
          la.stash(next);
          lb.stash(next + BK * kAStride);
          __syncthreads();
        }
        if (PREFETCH)
          fragments(fa[PREFETCH ? 1 - f : 0], fb[PREFETCH ? 1 - f : 0], kk < BK - 1 ? cur : next,
                    kk < BK - 1 ? kk + 1 : 0, tr, tc);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) sum[i][j] += fa[f][i] * fb[f][j];
      }
    }
    __syncthreads();
  }
};
