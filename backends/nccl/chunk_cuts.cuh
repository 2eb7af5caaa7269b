// The cuts of each rank's output into chunks (step 4). They need only be the
// same prefix on every rank, so a chunk's cut is the first round's candidate
// with the largest R(c) at most its target, clamped between the exact cuts:
// chunks cost the search no interval and no round.
#pragma once

#include <cub/block/block_reduce.cuh>

#include "../../libmerge/detail/config.hpp"

namespace libmerge::detail::nccl_backend {

// Where chunk c of rank s's output ideally starts: G_s + floor(c n_s / chunks),
// or with taper t, G_s + n_s (1 - t^c) / (1 - t^chunks). The _rn intrinsics
// (no FMA fusion) give every architecture the same target.
__host__ __device__ inline double exact_mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
__host__ __device__ inline double exact_sub(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
// G_s: the lengths of the ranks before s (s = world: the total).
__host__ __device__ inline long long rank_start(const long long* lengths, int stride, int world, int s) {
  long long g = 0;
  for (int q = 0; q < s && q < world; ++q) g += lengths[q * stride];
  return g;
}
__host__ __device__ inline long long chunk_target(const long long* lengths, int stride, int world, int chunks, int s,
                                                  int c, double taper = 1.0) {
  const long long g = rank_start(lengths, stride, world, s);
  if (s >= world) return g;
  if (taper == 1.0 || c == 0 || c >= chunks) return g + static_cast<long long>(c) * lengths[s * stride] / chunks;
  double tc = 1.0, tn = 1.0;
  for (int i = 0; i < chunks; ++i) {
    if (i < c) tc = exact_mul(tc, taper);
    tn = exact_mul(tn, taper);
  }
  const double share = exact_sub(1.0, tc) / exact_sub(1.0, tn);  // (IEEE division, correctly rounded)
  return g + static_cast<long long>(exact_mul(static_cast<double>(lengths[s * stride]), share));
}

// The chunks' cuts: block k = s x (chunks - 1) + c - 1 writes its candidate's
// count in run j to sub[j x world x (chunks - 1) + k]; -1 where there is none.
struct best_candidate {
  long long r;
  int c;
};
struct later_candidate {
  __device__ best_candidate operator()(const best_candidate& a, const best_candidate& b) const {
    if (a.r != b.r) return a.r > b.r ? a : b;
    return a.c < b.c ? a : b;
  }
};

inline constexpr int snap_threads = 256;  // a block a chunk cut, its threads over the candidates

template <int NT = snap_threads>
__global__ void __launch_bounds__(NT)
    snap_kernel(int world, int runs, int chunks, double taper, int per_run, const char* all, std::size_t block,
                const unsigned long long* local, const unsigned long long* global, const long long* lengths,
                int stride, long long* sub) {
  using reduce = cub::BlockReduce<best_candidate, NT>;
  __shared__ typename reduce::TempStorage storage;
  const int k = static_cast<int>(blockIdx.x);
  const int s = k / (chunks - 1), c = k % (chunks - 1) + 1;
  const long long target = chunk_target(lengths, stride, world, chunks, s, c, taper);
  const int per_rank = runs * per_run;
  const int total = world * per_rank;
  best_candidate best{-1, 0};
  for (int x = static_cast<int>(threadIdx.x); x < total; x += NT) {
    const int q = x / per_rank, i = x % per_rank;
    const long long p = reinterpret_cast<const long long*>(all + static_cast<std::size_t>(q) * block)[i];
    const long long r = static_cast<long long>(global[x]);
    if (p >= 0 && r <= target) best = later_candidate()(best, best_candidate{r, x});
  }
  best = reduce(storage).Reduce(best, later_candidate());
  if (threadIdx.x == 0) {
    const int subs = world * (chunks - 1);
    for (int j = 0; j < runs; ++j) {
      sub[j * subs + k] =
          best.r < 0 ? -1
                     : static_cast<long long>(local[static_cast<std::size_t>(j) * static_cast<std::size_t>(total) +
                                                    static_cast<std::size_t>(best.c)]);
    }
  }
}

}  // namespace libmerge::detail::nccl_backend
