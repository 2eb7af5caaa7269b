// Tile loads by the copy engine (sm_90 on): cp.async.bulk into shared memory,
// as CUB 3.6's BlockLoadToShared (not in CCCL 3.0); one mbarrier. Copies move
// whole 16-byte lines, so a range lands at its source's offset in a line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda/ptx>

namespace libmerge::detail::cuda_backend {

// Stageable: It is a plain T* and T tiles a 16-byte line (hand-copied ends are whole elements).
template <class T, class It>
inline constexpr bool bulk_loadable =
    std::is_pointer_v<It> && std::is_same_v<std::remove_cv_t<std::remove_pointer_t<It>>, T> &&
    (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16) &&
    alignof(T) == sizeof(T);

// Shared memory for `ranges` ranges of n elements of T in all: each starts up
// to 16 - sizeof(T) bytes into a fresh line.
template <class T>
constexpr std::size_t bulk_ranges_bytes(std::size_t n, int ranges) {
  return (n * sizeof(T) + 15) / 16 * 16 + static_cast<std::size_t>(2 * ranges - 1) * 16;
}
template <class T>
constexpr std::size_t bulk_pair_bytes(std::size_t n) {
  return bulk_ranges_bytes<T>(n, 2);
}

// Where stage_pair put two ranges: a[0, na) at a, b[0, nb) at a + b_at.
template <class T>
struct staged_pair {
  T* a;
  int b_at;
};

// A CTA's bulk copies on one mbarrier, once a kernel. Every thread constructs
// it, stages the same ranges and waits; a last-warp thread issues (as CUB).
template <int NT>
class bulk_loader {
 public:
  __device__ __forceinline__ bulk_loader(std::uint64_t* barrier, int tid)
      : barrier_(barrier), tid_(tid), elected_(tid == NT - 32) {
    static_assert(NT % 32 == 0, "bulk_loader: whole warps");
    if (elected_) {
      ::cuda::ptx::mbarrier_init(barrier_, 1);
      // The initialization visible to the copy engine (the async proxy), as CUB does.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared);
    }
    __syncthreads();  // initialized before any thread uses it (as CUB's BlockLoadToShared does)
  }

  // Stages src[0, n) at dst + (src's offset in its line); dst 16-byte aligned
  // with room for n elements and 15 bytes. Returns where src[0] lands.
  template <class T>
  __device__ __forceinline__ T* stage(const T* src, int n, unsigned char* dst) {
    constexpr int size = static_cast<int>(sizeof(T));
    const int lead = static_cast<int>(reinterpret_cast<std::uintptr_t>(src) % 16);
    T* out = reinterpret_cast<T*>(dst + lead);
    const int head = min(n, (16 - lead) % 16 / size);
    const int body = (n - head) * size / 16 * 16 / size;
    if (elected_ && body > 0) {
      // The CTA's shared memory as the destination from PTX ISA 8.6 (CUDA 12.8);
      // before, the same address in the cluster's.
#if __cccl_ptx_isa >= 860
      constexpr auto destination = ::cuda::ptx::space_shared;
#else
      constexpr auto destination = ::cuda::ptx::space_cluster;
#endif
      ::cuda::ptx::cp_async_bulk(destination, ::cuda::ptx::space_global, out + head, src + head,
                                 static_cast<std::uint32_t>(body * size), barrier_);
      bytes_ += static_cast<std::uint32_t>(body * size);
    }
    const int by_hand = n - body;  // head, then the tail after the body
    for (int i = tid_; i < by_hand; i += NT) {
      const int j = i < head ? i : i + body;
      out[j] = src[j];
    }
    return out;
  }

  // Stages a[0, na) at dst and b[0, nb) from the line after a's last (dst:
  // bulk_pair_bytes<T>(na + nb)). The first slot must hold an input key (the
  // stand-in past a side's end): with A empty, B's first is copied there by hand.
  // Not a select of the pair's start: H200 int32 1.07x the time (docs/cuda-merge-sort.md).
  template <class T>
  __device__ __forceinline__ staged_pair<T> stage_pair(const T* a, int na, const T* b, int nb, unsigned char* dst) {
    T* at = stage(a, na, dst);
    const auto a_end = reinterpret_cast<std::uintptr_t>(at + na) - reinterpret_cast<std::uintptr_t>(dst);
    T* bt = stage(b, nb, dst + (a_end + 15) / 16 * 16);
    if (na == 0 && nb > 0 && bt != at && tid_ == 0) at[0] = b[0];
    return {at, static_cast<int>(bt - at)};
  }

  // Stages R ranges from dst (bulk_ranges_bytes<T>(sum of n, R)), each from the
  // line after the last; at[k]: range k's start in elements. The first slot gets
  // an input key by hand, as in stage_pair.
  template <int R, class T>
  __device__ __forceinline__ void stage_ranges(const T* const (&src)[R], const int (&n)[R], unsigned char* dst,
                                               int (&at)[R]) {
    T* const base = reinterpret_cast<T*>(dst);
    unsigned char* next = dst;
    int first_at = -1;
    const T* first_src = nullptr;
#pragma unroll
    for (int k = 0; k < R; ++k) {
      T* out = stage(src[k], n[k], next);
      at[k] = static_cast<int>(out - base);
      if (first_at < 0 && n[k] > 0) {
        first_at = at[k];
        first_src = src[k];
      }
      const auto end = reinterpret_cast<std::uintptr_t>(out + n[k]) - reinterpret_cast<std::uintptr_t>(dst);
      next = dst + (end + 15) / 16 * 16;
    }
    if (first_at > 0 && tid_ == 0) base[0] = first_src[0];
  }

  // Waits until every staged element is in shared memory.
  __device__ __forceinline__ void wait() {
    if (elected_) {
      (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta,
                                                 ::cuda::ptx::space_shared, barrier_, bytes_);
    }
    __syncthreads();  // the elements copied by hand
    while (!::cuda::ptx::mbarrier_try_wait_parity(barrier_, 0u)) {
    }
  }

 private:
  std::uint64_t* barrier_;
  int tid_;
  bool elected_;
  std::uint32_t bytes_ = 0;
};

// Tile stores by the copy engine (sm_90 on): src (at dst's line offset) to dst.
// Every thread calls it once its part is written; src must not be written
// again until the CTA ends (the issuer waits for the copy to read it).
// H200, 2^28 int32 sort: 0.93x the time of cub::WarpStore's transpose (docs/cuda-merge-sort.md)
template <int NT, class T>
__device__ __forceinline__ void bulk_store(const T* src, int n, T* dst, int tid) {
  constexpr int size = static_cast<int>(sizeof(T));
  ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared);
  __syncthreads();
  const int lead = static_cast<int>(reinterpret_cast<std::uintptr_t>(dst) % 16);
  const int head = min(n, (16 - lead) % 16 / size);
  const int body = (n - head) * size / 16 * 16 / size;
  const bool elected = tid == NT - 32 && body > 0;  // (the last warp, as bulk_loader)
  if (elected) {
    ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_global, ::cuda::ptx::space_shared, dst + head, src + head,
                               static_cast<std::uint32_t>(body * size));
    ::cuda::ptx::cp_async_bulk_commit_group();
  }
  const int by_hand = n - body;
  for (int i = tid; i < by_hand; i += NT) {
    const int j = i < head ? i : i + body;
    dst[j] = src[j];
  }
  if (elected) ::cuda::ptx::cp_async_bulk_wait_group_read(::cuda::ptx::n32_t<0>{});
}

// Where a bulk_store tile puts its outputs: at out's line offset (room + 15 bytes).
template <class T>
__device__ __forceinline__ T* bulk_store_slots(unsigned char* tile, const T* out) {
  return reinterpret_cast<T*>(tile + reinterpret_cast<std::uintptr_t>(out) % 16);
}

}  // namespace libmerge::detail::cuda_backend
