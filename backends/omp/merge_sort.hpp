// OpenMP merge sort, Modern GPU's blocksort then merge passes on CPU cores:
//   1. each thread sorts its n / p block in scratch, cache-sized pieces first;
//   2. passes across blocks, each merge cut at block boundaries (Merge Path),
//      so all p threads stay busy to the last pass;
//   3. the sorted scratch is written back: a comparator that throws leaves
//      the caller's range as it was.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../libmerge/detail/config.hpp"
#include "sequential.hpp"
#include "team.hpp"

namespace libmerge::detail::omp_backend {

// The first runs: trivially copyable elements of up to 8 bytes in fours by a
// branch-free network (sort4), then merged; others in sixteens by insertion.
// Random int32: the network and two merge passes take 30% less time than insertion (docs/omp-benchmark.md)
template <class T>
inline constexpr bool network_sortable = std::is_trivially_copyable_v<T> && sizeof(T) <= 8;
template <class T>
inline constexpr index_t first_run = network_sortable<T> ? 4 : 16;
// Short runs' passes stay in cache (a chunk and its twin in L2, group_chunks
// chunks in L3): memory bandwidth bounds the sort at 16 threads.
inline constexpr std::size_t chunk_bytes = std::size_t{256} << 10;
inline constexpr index_t group_chunks = 4;

// Scratch holds bools as bytes, so a buffer is a plain array.
template <class T>
using scratch_t = std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>;

// Trivial types: uninitialized arrays the sorting threads fill (no serial fill;
// first-touch places pages by their core). Others: a std::vector built up front.
template <class T>
inline constexpr bool raw_scratch = std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>;

template <class T>
class scratch {
 public:
  // n elements: uninitialized for raw_scratch types, else make(0), ..., make(n - 1).
  template <class Make>
  scratch(index_t n, Make&& make) {
    if constexpr (raw_scratch<T>) {
      raw_.reset(new T[static_cast<std::size_t>(n)]);
      data_ = raw_.get();
      (void)make;
    } else {
      built_.reserve(static_cast<std::size_t>(n));
      for (index_t i = 0; i < n; ++i) built_.push_back(make(i));
      data_ = built_.data();
    }
  }
  T* data() const { return data_; }

 private:
  std::unique_ptr<T[]> raw_;
  std::vector<T> built_;
  T* data_ = nullptr;
};

// Smallest k with run << k >= size: the passes from runs of `run` to one.
inline int doublings(index_t run, index_t size) {
  int k = 0;
  for (; run < size; run *= 2) ++k;
  return k;
}

// Merges runs of `width` elements pairwise within [lo, hi), from buffer
// `from` into the other one.
template <class Item, class Order>
void merge_runs(Item* const (&buf)[2], int from, index_t lo, index_t hi, index_t width, const Order& order) {
  Item* src = buf[from];
  Item* dst = buf[from ^ 1];
  for (index_t x = lo; x < hi; x += 2 * width) {
    const index_t mid = std::min(hi, x + width), end = std::min(hi, x + 2 * width);
    merge_sequential<true>(src + x, mid - x, src + mid, end - mid, no_values{}, no_values{}, dst + x, no_values{},
                           order);
  }
}

// Step 1 on block [lo, hi). Every block runs block_passes passes, ending in buf[block_passes & 1].
template <class Item, class Order, class Load>
void sort_block(Item* const (&buf)[2], index_t lo, index_t hi, int block_passes, const Load& load,
                const Order& order) {
  constexpr index_t run = first_run<Item>;
  index_t chunk = run;
  while (chunk * 2 * static_cast<index_t>(sizeof(Item)) <= static_cast<index_t>(chunk_bytes)) chunk *= 2;
  const index_t group = group_chunks * chunk;
  const int chunk_passes = std::min(block_passes, doublings(run, chunk));
  const int group_passes = std::min(block_passes, doublings(run, group));
  for (index_t g = lo; g < hi; g += group) {
    const index_t g_end = std::min(hi, g + group);
    for (index_t c = g; c < g_end; c += chunk) {
      const index_t c_end = std::min(g_end, c + chunk);
      if constexpr (raw_scratch<Item>) {
        for (index_t i = c; i < c_end; ++i) buf[0][i] = load(i);
      }
      for (index_t x = c; x < c_end; x += run) {
        if (network_sortable<Item> && x + 4 <= c_end) {
          sort4(buf[0] + x, order);
        } else {
          insertion_sort(buf[0] + x, std::min(run, c_end - x), order);
        }
      }
      for (int k = 0; k < chunk_passes; ++k) merge_runs(buf, k & 1, c, c_end, run << k, order);
    }
    for (int k = chunk_passes; k < group_passes; ++k) merge_runs(buf, k & 1, g, g_end, run << k, order);
  }
  for (int k = group_passes; k < block_passes; ++k) merge_runs(buf, k & 1, lo, hi, run << k, order);
}

// Step 2: runs of `width` blocks merge pairwise, thread r writing its block's
// range; a barrier a pass (no move while another compares). Returns the buffer.
template <class Item, class Order, class Block>
int merge_blocks(const team& t, Item* const (&buf)[2], int from, std::vector<index_t>& cross, const Block& block,
                 const Order& order) {
  const int p = t.size(), r = t.rank();
  for (int width = 1; width < p; width *= 2) {
    const int first = r / (2 * width) * (2 * width);
    const int mid = std::min(p, first + width), last = std::min(p, first + 2 * width);
    const index_t g_lo = block(first), g_mid = block(mid), g_hi = block(last);
    Item* const src = buf[from];
    auto diag = [&](int k) { return block(k) - g_lo; };
    t.run([&] {
      cross[r] = path_crossing<bounds::lower>(static_cast<const Item*>(src + g_lo), g_mid - g_lo,
                                              static_cast<const Item*>(src + g_mid), g_hi - g_mid, diag(r), order);
    });
    t.barrier();
    t.run([&] {
      const merge_share s = share_of(cross.data(), first, last, r, g_mid - g_lo, g_hi - g_mid, diag);
      merge_sequential<true>(src + g_lo + s.a_begin, s.a_end - s.a_begin, src + g_mid + s.b_begin,
                             s.b_end - s.b_begin, no_values{}, no_values{}, buf[from ^ 1] + block(r), no_values{},
                             order);
    });
    from ^= 1;
    t.barrier();
  }
  return from;
}

template <class Policy, class KeysIt, class ValsIn, class ValsOut, class Comp>
void merge_sort(const Policy& policy, KeysIt keys, index_t n, ValsIn vals_in, ValsOut vals_out, Comp& comp) {
  constexpr bool with_values = has_values<ValsOut>;
  using K = typename std::iterator_traits<KeysIt>::value_type;
  using V = typename std::conditional_t<with_values, std::iterator_traits<ValsOut>,
                                        std::iterator_traits<char*>>::value_type;
  using item = std::conditional_t<with_values, keyed<scratch_t<K>, scratch_t<V>>, scratch_t<K>>;
  const key_order<with_values, Comp> order{comp};

  auto load = [&](index_t i) -> item {
    if constexpr (with_values) {
      return item{static_cast<scratch_t<K>>(keys[i]), static_cast<scratch_t<V>>(vals_in[i])};
    } else {
      return static_cast<item>(keys[i]);
    }
  };

  const int threads = packs_bits<KeysIt> || packs_bits<ValsOut> ? 1 : team_size(policy, n);
  // The ping-pong buffers; [0] receives the input (for raw_scratch types in
  // step 1, by the thread that sorts each block).
  scratch<item> buf0(n, load);
  scratch<item> buf1(n, [&](index_t i) { return buf0.data()[i]; });
  item* const buf[2] = {buf0.data(), buf1.data()};
  std::vector<index_t> cross(static_cast<std::size_t>(threads) + 1);

  parallel(threads, [&](const team& t) {
    const int p = t.size(), r = t.rank();
    auto block = [&](int k) { return share_begin(n, p, k); };
    const index_t lo = block(r), hi = block(r + 1);
    const int block_passes = doublings(first_run<item>, block(1));
    t.run([&] { sort_block(buf, lo, hi, block_passes, load, order); });
    t.barrier();
    const int from = merge_blocks(t, buf, block_passes & 1, cross, block, order);

    // 3. Every comparison is done: write the caller's range, unless a thread failed.
    if (t.failed()) return;
    t.run([&] {
      item* sorted = buf[from];
      for (index_t i = lo; i < hi; ++i) {
        if constexpr (with_values) {
          keys[i] = static_cast<K>(std::move(sorted[i].key));
          vals_out[i] = static_cast<V>(std::move(sorted[i].value));
        } else {
          keys[i] = static_cast<K>(std::move(sorted[i]));
        }
      }
    });
  });
}

}  // namespace libmerge::detail::omp_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::merge_sort, backend::omp> {
  static constexpr bool available = true;

  template <class Policy, class KeysIt, class ValsIn, class ValsOut, class Comp>
  static void run(const Policy& policy, KeysIt keys, index_t n, ValsIn vals_in, ValsOut vals_out, Comp comp) {
    omp_backend::merge_sort(policy, keys, n, vals_in, vals_out, comp);
  }
};

}  // namespace libmerge::detail
