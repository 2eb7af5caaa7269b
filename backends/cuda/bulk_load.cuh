// Tile loads by the copy engine (sm_90 on): a range of global memory staged in
// shared memory with cp.async.bulk, what CUB 3.6's DeviceMerge does on sm_90
// (cub::detail::BlockLoadToShared, which CCCL 3.0 lacks). One thread issues a
// copy per range, no element passes through registers, and the CTA waits on
// one mbarrier. A bulk copy moves whole 16-byte lines between 16-byte aligned
// addresses, so a range lands at its source address's offset within a line:
// two ranges staged one after the other take up to 48 bytes more than their
// elements (bulk_pair_bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda/ptx>

namespace libmerge::detail::cuda_backend {

// Whether ranges of T read through It can be staged by bulk copies: It is a
// plain pointer to T (no conversion, no fancy iterator), and every T sits at
// an offset in its 16-byte line that is a multiple of its size, so that the
// bytes copied by hand before and after the lines are whole elements.
template <class T, class It>
inline constexpr bool bulk_loadable =
    std::is_pointer_v<It> && std::is_same_v<std::remove_cv_t<std::remove_pointer_t<It>>, T> &&
    (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16) &&
    alignof(T) == sizeof(T);

// Shared memory for `ranges` ranges of n elements of T in all, staged one
// after the other (stage_pair, stage_ranges): each begins up to
// 16 - sizeof(T) bytes into a line, and each range's first line follows the
// last one's, so at most (2 ranges - 1) (16 - sizeof(T)) bytes go unused (45
// for a pair of 1-byte keys).
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

// A CTA's bulk copies into shared memory, completed on one mbarrier (in
// shared memory, 8 bytes, not written by anything else). Every thread of the
// CTA constructs it, stages the same ranges and waits; one thread issues the
// copies (in the last warp, as CUB does, away from the first warp's work).
// Used once per kernel: the barrier's first phase.
template <int NT>
class bulk_loader {
 public:
  __device__ __forceinline__ bulk_loader(std::uint64_t* barrier, int tid)
      : barrier_(barrier), tid_(tid), elected_(tid == NT - 32) {
    static_assert(NT % 32 == 0, "bulk_loader: whole warps");
    if (elected_) {
      ::cuda::ptx::mbarrier_init(barrier_, 1);
      // The initialization visible to the copy engine (the async proxy), as
      // CUB's bulk-copy transform kernel does after its mbarrier_init.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared);
    }
    __syncthreads();  // initialized before any thread uses it (as CUB's BlockLoadToShared does)
  }

  // Stages src[0, n) at dst + (src's offset in its 16-byte line); dst is
  // 16-byte aligned with room for n elements and 15 bytes. Returns where src[0]
  // lands. The lines in the middle go by one bulk copy; the elements before
  // the first line and after the last (under 16 bytes each) by the threads.
  template <class T>
  __device__ __forceinline__ T* stage(const T* src, int n, unsigned char* dst) {
    constexpr int size = static_cast<int>(sizeof(T));
    const int lead = static_cast<int>(reinterpret_cast<std::uintptr_t>(src) % 16);
    T* out = reinterpret_cast<T*>(dst + lead);
    const int head = min(n, (16 - lead) % 16 / size);
    const int body = (n - head) * size / 16 * 16 / size;
    if (elected_ && body > 0) {
      // The CTA's own shared memory as the destination where the PTX ISA has
      // it (8.6, CUDA 12.8); before, the same address in the cluster's.
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

  // Stages a[0, na) at dst and b[0, nb) from the 16-byte line after a's
  // last; dst is 16-byte aligned with bulk_pair_bytes<T>(na + nb) bytes.
  // A merge reads the pair's first element where a side is exhausted
  // (serial_merge), and it must be an input key, not whatever shared memory
  // held (a comparator may dereference its keys): with A empty, B's first
  // element is also copied there by hand. That slot is in a line no bulk
  // copy writes (A's line when A starts inside one, else B's first line,
  // where B starts inside it), unless it is B's first slot itself. (Where
  // the pair began at B's first element instead, a select of the pair's
  // pointer in every tile, int32 keys took 1.07x the time from 2^24 to 2^28
  // on an H200.)
  template <class T>
  __device__ __forceinline__ staged_pair<T> stage_pair(const T* a, int na, const T* b, int nb, unsigned char* dst) {
    T* at = stage(a, na, dst);
    const auto a_end = reinterpret_cast<std::uintptr_t>(at + na) - reinterpret_cast<std::uintptr_t>(dst);
    T* bt = stage(b, nb, dst + (a_end + 15) / 16 * 16);
    if (na == 0 && nb > 0 && bt != at && tid_ == 0) at[0] = b[0];
    return {at, static_cast<int>(bt - at)};
  }

  // Stages R ranges src[k][0, n[k]) one after the other from dst (16-byte
  // aligned, bulk_ranges_bytes<T>(sum of n, R) bytes), each from the line
  // after the last one's end; at[k] is where range k begins, in elements from
  // dst. A merge of them reads dst's first slot where a side is exhausted
  // (merge_walk's stand-in), and it must hold an input key: where the first
  // element staged does not land there, it is copied there by hand too. The
  // slot then lies in a line no bulk copy writes (the first range's bodies
  // begin on a later line).
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

// Tile stores by the copy engine (sm_90 on), the mirror of bulk_loader:
// a tile's outputs, in order in shared memory at src, to global memory at
// dst, where src and dst lie at the same offset in their 16-byte lines. The
// lines in the middle go by one bulk copy, the elements before the first
// line and after the last (under 16 bytes each) by the threads: no output
// passes through registers again on its way out, and no thread issues a
// store a warp of outputs. Every thread of the CTA calls it once it has
// written its part of src[0, n); it fences those writes for the copy engine
// (the async proxy) and synchronizes the CTA. Shared memory may be read
// meanwhile but not written until the CTA ends: the issuing thread waits
// until the copy has read it before it returns. (H200, the sort's staged
// passes against the transpose through cub::WarpStore: 2^28 int32 keys in
// 0.93x the time, 2^26 0.96x, 2^24 0.98x.)
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

// Where a tile whose outputs go out by bulk_store writes them in shared
// memory (from `tile`, 16-byte aligned): at out's offset in its 16-byte
// line, so that both sides of the copy are aligned alike. The tile needs
// room for its elements and 15 bytes.
template <class T>
__device__ __forceinline__ T* bulk_store_slots(unsigned char* tile, const T* out) {
  return reinterpret_cast<T*>(tile + reinterpret_cast<std::uintptr_t>(out) % 16);
}

}  // namespace libmerge::detail::cuda_backend
