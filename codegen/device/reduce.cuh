// Warp and block reductions for the reduction schedules.

// Arg-reduction order: is (a, ia) a better extreme than (b, ib)? The max (is_max) or min
// value wins, the first index on ties unless `last`; NaN counts as the extreme (numpy's
// argmax does); an index of -1 means "nothing yet".
template <class T>
BRAZE_DEV bool braze_arg_better(T a, long long ia, T b, long long ib, bool is_max, bool last) {
  if (ib < 0) return true;
  if (ia < 0) return false;
  bool an = a != a, bn = b != b;
  if (an || bn) return an && (!bn || (last ? ia > ib : ia < ib));
  if (a == b) return last ? ia > ib : ia < ib;
  return is_max ? a > b : a < b;
}

template <class T, class F>
BRAZE_DEV T braze_warp_reduce(T v, F f) {
  for (int off = 16; off > 0; off >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Reduces v over the block with f; every thread gets the result. `identity` pads the
// warps past the block's end; `shm` holds at least 32 T and is free again on return.
template <class T, class F>
BRAZE_DEV T braze_block_reduce(T v, F f, T identity, T* shm) {
  v = braze_warp_reduce(v, f);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? shm[lane] : identity;
    w = braze_warp_reduce(w, f);
    if (lane == 0) shm[0] = w;
  }
  __syncthreads();
  T r = shm[0];
  __syncthreads();
  return r;
}

// The same within one warp (a warp per row): every lane gets the best index.
template <class T>
BRAZE_DEV long long braze_warp_argreduce(T v, long long i, bool is_max, bool last) {
  for (int off = 16; off > 0; off >>= 1) {
    T ov = __shfl_xor_sync(0xffffffffu, v, off);
    long long oi = __shfl_xor_sync(0xffffffffu, i, off);
    if (braze_arg_better(ov, oi, v, i, is_max, last)) v = ov, i = oi;
  }
  return i;
}

// The row index of the block's best (value, index) pair; every thread gets it.
template <class T>
BRAZE_DEV long long braze_block_argreduce(T v, long long i, bool is_max, bool last, T* shm_v, long long* shm_i) {
  for (int off = 16; off > 0; off >>= 1) {
    T ov = __shfl_xor_sync(0xffffffffu, v, off);
    long long oi = __shfl_xor_sync(0xffffffffu, i, off);
    if (braze_arg_better(ov, oi, v, i, is_max, last)) v = ov, i = oi;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) shm_v[warp] = v, shm_i[warp] = i;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? shm_v[lane] : v;
    i = lane < warps ? shm_i[lane] : -1;
    for (int off = 16; off > 0; off >>= 1) {
      T ov = __shfl_xor_sync(0xffffffffu, v, off);
      long long oi = __shfl_xor_sync(0xffffffffu, i, off);
      if (braze_arg_better(ov, oi, v, i, is_max, last)) v = ov, i = oi;
    }
    if (lane == 0) shm_i[0] = i;
  }
  __syncthreads();
  long long r = shm_i[0];
  __syncthreads();
  return r;
}

// Online softmax statistics: a running max m and the sum s of exp(x - m), rescaled when m
// grows (one read of the row instead of two). A +inf element makes the sum NaN, as
// subtracting the max does in the two-pass form.
template <class T>
BRAZE_DEV void braze_online_update(T& m, T& s, T x) {
  if (isinf(x) && x > 0) {
    s = x - x;  // NaN
    m = x;
  } else if (x > m) {
    s = s * braze_exp_fast(m - x) + (T)1;
    m = x;
  } else {
    s += braze_exp_fast(x - m);
  }
}
template <class T>
BRAZE_DEV void braze_online_merge(T& m, T& s, T om, T os) {
  T nm = braze_max(m, om);
  T a = (m == nm) ? s : (s == (T)0 ? (T)0 : s * braze_exp_fast(m - nm));
  T b = (om == nm) ? os : (os == (T)0 ? (T)0 : os * braze_exp_fast(om - nm));
  m = nm;
  s = a + b;
}
template <class T>
BRAZE_DEV void braze_warp_online(T& m, T& s) {
  for (int off = 16; off > 0; off >>= 1) {
    T om = __shfl_xor_sync(0xffffffffu, m, off), os = __shfl_xor_sync(0xffffffffu, s, off);
    braze_online_merge(m, s, om, os);
  }
}
template <class T>
BRAZE_DEV void braze_block_online(T& m, T& s, T* shm_m, T* shm_s) {
  braze_warp_online(m, s);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) shm_m[warp] = m, shm_s[warp] = s;
  __syncthreads();
  if (warp == 0) {
    T wm = lane < warps ? shm_m[lane] : shm_m[0];
    T ws = lane < warps ? shm_s[lane] : (T)0;
    braze_warp_online(wm, ws);
    if (lane == 0) shm_m[0] = wm, shm_s[0] = ws;
  }
  __syncthreads();
  m = shm_m[0];
  s = shm_s[0];
  __syncthreads();
}

// A row staged in shared memory (the reduction schedule's "smem" mode): 16-, 8- or 4-byte
// asynchronous copies that each thread waits for itself — every thread later reads back
// only the elements it copied, so no barrier is needed between the copy and the passes.
#ifdef BRAZE_CPU_EMULATION
template <int B>
BRAZE_DEV void braze_cp_async(void* dst, const void* src) { memcpy(dst, src, B); }
BRAZE_DEV void braze_cp_async_wait_all() {}
#else
template <int B>
BRAZE_DEV void braze_cp_async(void* dst, const void* src) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (B == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(d), "l"(src), "n"(B) : "memory");
}
BRAZE_DEV void braze_cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
#endif

// Thread-block clusters (sm_90): a row shared by the `split` blocks of a cluster. Each
// block publishes its partial result in a shared-memory slot; after a cluster barrier every
// block reads all slots (distributed shared memory) and combines them in rank order, so all
// blocks agree bit for bit; a second barrier frees the slots (and keeps a block's shared
// memory alive until the others have read it).
#ifndef BRAZE_CPU_EMULATION
template <class T>
BRAZE_DEV T braze_cluster_read(const T* p, unsigned rank) {
  return *reinterpret_cast<const volatile T*>(braze_cluster_map(p, rank));
}
template <class T, class F>
BRAZE_DEV T braze_cluster_reduce(T v, F f, T* slot, int split) {
  if (threadIdx.x == 0) *slot = v;
  braze_cluster_sync();
  T r = braze_cluster_read(slot, 0);
  for (int q = 1; q < split; ++q) r = f(r, braze_cluster_read(slot, q));
  braze_cluster_sync();
  return r;
}
template <class T>
BRAZE_DEV void braze_cluster_online(T& m, T& s, T* slot, int split) {
  if (threadIdx.x == 0) slot[0] = m, slot[1] = s;
  braze_cluster_sync();
  T cm = braze_cluster_read(slot, 0), cs = braze_cluster_read(slot + 1, 0);
  for (int q = 1; q < split; ++q) braze_online_merge(cm, cs, braze_cluster_read(slot, q), braze_cluster_read(slot + 1, q));
  braze_cluster_sync();
  m = cm;
  s = cs;
}
#endif
