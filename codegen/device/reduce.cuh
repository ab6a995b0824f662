// Warp and block reductions for the reduction schedules.

template <class T, class F>
BRAZE_DEV T braze_warp_reduce(T v, F f) {
  for (int off = 16; off > 0; off >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
