// The cuts of each rank's output into the exchange's chunks (merge_sort.cuh,
// step 4; splitters.cuh finds the exact splitters beside them). They need not
// be exact, only the same prefix of the global order on every rank, and any
// candidate c gives one for free: every sequence's count L_v(c) cuts the
// first R(c) elements. So a chunk's cut is the first round's candidate with
// the largest R(c) at most its target (chunk_target; snap_kernel; those
// candidates lie every N / (1023 x sequences) or so of the global order),
// clamped between the exact cuts of rank s's output (prefixes of one order
// are nested, so the sequence-wise max and min of two are prefixes too).
// Chunks thus cost the search no interval and no round.
#pragma once

#include <cub/block/block_reduce.cuh>

#include "../../libmerge/detail/config.hpp"

namespace libmerge::detail::nccl_backend {

// Where chunk c (c = 0 .. chunks) of rank s's output would start ideally:
// G_s + floor(c n_s / chunks), from every rank's length (one every `stride`
// words); c = chunks is G_{s+1}, and s = world with c = 0 the total. With a
// taper t != 1 each chunk is t times the one before: chunk c starts at
// G_s + n_s (1 - t^c) / (1 - t^chunks). Every rank must compute the same
// target, GPUs of different architectures included, so each operation is
// rounded on its own (the _rn intrinsics: never fused into an FMA, which
// the compiler of one architecture may do and another not).
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
// G_s, where rank s's output starts in the global order: the lengths of the
// ranks before it (s = world: the total).
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

// The chunks' cuts (see the top of the file): block k = s x (chunks - 1) +
// c - 1 takes, among the first round's candidates, the one with the largest
// global position R at most chunk_target(s, c) (the lowest index of equals:
// the same element proposed twice), and writes its count in each of the
// rank's runs to sub[j x world x (chunks - 1) + k]; -1 where there is none.
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
