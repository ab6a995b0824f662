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
