// The Modern GPU demonstrations (seeds/000 and seeds/003) on libmerge, printed
// the way Modern GPU prints them. Each runs on the policy's backend when that
// backend implements the algorithm, otherwise on lm::serial, and says so.
// Shared by the demo program and by the test that holds its output to the
// seeds' printouts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include <libmerge/libmerge.hpp>

#include "seed_data.hpp"

#if LIBMERGE_HAS_CUDA
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#endif

namespace demo {

namespace lm = libmerge;

// Containers on the side of memory a policy's backend reads.
template <class Policy, class = void>
struct memory_of {
  template <class T>
  using vector = std::vector<T>;
  template <class T>
  static std::vector<T> to_host(const std::vector<T>& v) {
    return v;
  }
};

#if LIBMERGE_HAS_CUDA
template <class Policy>
struct memory_of<Policy, std::enable_if_t<std::is_same_v<typename Policy::backend_tag, lm::backend::cuda>>> {
  template <class T>
  using vector = thrust::device_vector<T>;
  template <class T>
  static std::vector<T> to_host(const thrust::device_vector<T>& v) {
    std::vector<T> h(v.size());
    thrust::copy(v.begin(), v.end(), h.begin());
    return h;
  }
};
#endif

template <class Container>
std::vector<int> as_ints(const Container& c) {
  return std::vector<int>(c.begin(), c.end());
}

// "%5d: " then ten "%4d" columns per line, like Modern GPU's PrintArray.
inline void print_array(std::ostream& os, const std::vector<int>& v) {
  char buf[32];
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i % 10 == 0) {
      std::snprintf(buf, sizeof buf, "%5zu: ", i);
      os << buf;
    }
    std::snprintf(buf, sizeof buf, "%4d", v[i]);
    os << buf << (i % 10 == 9 || i + 1 == v.size() ? "\n" : "");
  }
}

// index_match results: '*' before a matched index (bit 31 set), as Modern
// GPU's FormatOpMaskBit("%c%3d") prints them.
inline void print_index_match(std::ostream& os, const std::vector<std::uint32_t>& v) {
  char buf[32];
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i % 10 == 0) {
      std::snprintf(buf, sizeof buf, "%5zu: ", i);
      os << buf;
    }
    const bool match = (v[i] & 0x80000000u) != 0;
    std::snprintf(buf, sizeof buf, " %c%3u", match ? '*' : ' ', v[i] & 0x7fffffffu);
    os << buf << (i % 10 == 9 || i + 1 == v.size() ? "\n" : "");
  }
}

template <class Algorithm, class Policy>
inline constexpr bool runs_on = lm::is_available<Algorithm, Policy>;

// The policy a demonstration runs with: the requested one, or lm::serial for
// an algorithm its backend does not implement yet (with a note).
template <class Algorithm, class Policy, class F>
void with_policy(std::ostream& os, const Policy& policy, const char* what, F&& f) {
  if constexpr (runs_on<Algorithm, Policy>) {
    f(policy);
  } else {
    os << "(" << what << " is not in this backend yet: it runs on the serial backend)\n";
    f(lm::serial);
  }
}

template <class Policy>
void demo_sort_keys(std::ostream& os, const Policy& policy) {
  with_policy<lm::algo::merge_sort>(os, policy, "merge_sort", [&](const auto& p) {
    using mem = memory_of<std::decay_t<decltype(p)>>;
    typename mem::template vector<int> data(seed_data::sort_keys_input.begin(), seed_data::sort_keys_input.end());
    os << "\n\nSORT KEYS DEMONSTRATION:\n\nInput:\n";
    print_array(os, as_ints(mem::to_host(data)));
    lm::merge_sort(p, data.begin(), data.end(), lm::less<int>());
    os << "\nSorted output:\n";
    print_array(os, as_ints(mem::to_host(data)));
  });
}

template <class Policy>
void demo_sort_pairs(std::ostream& os, const Policy& policy) {
  with_policy<lm::algo::merge_sort>(os, policy, "merge_sort_by_key", [&](const auto& p) {
    using mem = memory_of<std::decay_t<decltype(p)>>;
    const auto& in = seed_data::sort_pairs_keys_input;
    typename mem::template vector<int> keys(in.begin(), in.end());
    std::vector<int> ascending(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) ascending[i] = static_cast<int>(i);
    typename mem::template vector<int> values(ascending.begin(), ascending.end());
    // Modern GPU's demo labels this block "Input keys:"; its printed page shows "Input:".
    os << "\n\nSORT PAIRS DEMONSTRATION:\n\nInput:\n";
    print_array(os, as_ints(mem::to_host(keys)));
    lm::merge_sort_by_key(p, keys.begin(), keys.end(), values.begin(), lm::less<int>());
    os << "\nSorted keys:\n";
    print_array(os, as_ints(mem::to_host(keys)));
    os << "\nSorted values:\n";
    print_array(os, as_ints(mem::to_host(values)));
  });
}

// Not in the seeds: merges the two arrays of the second search demonstration.
template <class Policy>
void demo_merge(std::ostream& os, const Policy& policy) {
  with_policy<lm::algo::merge>(os, policy, "merge", [&](const auto& p) {
    using mem = memory_of<std::decay_t<decltype(p)>>;
    const auto& a_in = seed_data::search2_a;
    const auto& b_in = seed_data::search2_b;
    typename mem::template vector<int> a(a_in.begin(), a_in.end()), b(b_in.begin(), b_in.end());
    typename mem::template vector<int> out(a_in.size() + b_in.size());
    os << "\n\nMERGE DEMONSTRATION:\n\nA array:\n";
    print_array(os, as_ints(mem::to_host(a)));
    os << "\nB array:\n";
    print_array(os, as_ints(mem::to_host(b)));
    lm::merge(p, a.begin(), a.end(), b.begin(), b.end(), out.begin());
    os << "\nMerged output:\n";
    print_array(os, as_ints(mem::to_host(out)));
  });
}

template <class Policy>
void demo_sorted_search(std::ostream& os, const Policy& policy) {
  with_policy<lm::algo::sorted_search>(os, policy, "sorted_search", [&](const auto& p) {
    using mem = memory_of<std::decay_t<decltype(p)>>;
    const auto& h_in = seed_data::search_haystack;
    const auto& n_in = seed_data::search_needles;
    typename mem::template vector<int> haystack(h_in.begin(), h_in.end()), needles(n_in.begin(), n_in.end());
    os << "\n\nSORTED SEARCH DEMONSTRATION:\n\nHaystack array:\n";
    print_array(os, as_ints(mem::to_host(haystack)));
    os << "\nNeedles array:\n";
    print_array(os, as_ints(mem::to_host(needles)));
    typename mem::template vector<int> bounds(needles.size());
    lm::sorted_search<lm::bounds::lower>(p, needles.begin(), needles.end(), haystack.begin(), haystack.end(),
                                         bounds.begin());
    os << "\nLower bound array:\n";
    print_array(os, as_ints(mem::to_host(bounds)));
  });
}

template <class Policy>
void demo_sorted_search2(std::ostream& os, const Policy& policy) {
  with_policy<lm::algo::sorted_search>(os, policy, "sorted_search", [&](const auto& p) {
    using mem = memory_of<std::decay_t<decltype(p)>>;
    const auto& a_in = seed_data::search2_a;
    const auto& b_in = seed_data::search2_b;
    typename mem::template vector<int> a(a_in.begin(), a_in.end()), b(b_in.begin(), b_in.end());
    typename mem::template vector<std::uint32_t> a_idx(a_in.size()), b_idx(b_in.size());
    os << "\n\nSORTED SEARCH DEMONSTRATION (2):\n\nA array:\n";
    print_array(os, as_ints(mem::to_host(a)));
    os << "\nB array:\n";
    print_array(os, as_ints(mem::to_host(b)));
    lm::sorted_search<lm::bounds::lower, lm::search_type::index_match, lm::search_type::index_match>(
        p, a.begin(), a.end(), b.begin(), b.end(), a_idx.begin(), b_idx.begin());
    os << "\nLower bound of A into B (* for match):\n";
    print_index_match(os, mem::to_host(a_idx));
    os << "\nUpper bound of B into A (* for match):\n";
    print_index_match(os, mem::to_host(b_idx));
  });
}

template <class Policy>
void run_demonstrations(std::ostream& os, const Policy& policy) {
  demo_sort_keys(os, policy);
  demo_sort_pairs(os, policy);
  demo_merge(os, policy);
  demo_sorted_search(os, policy);
  demo_sorted_search2(os, policy);
}

}  // namespace demo
