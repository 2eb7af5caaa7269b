// lm::sorted_search and lm::sorted_equality_count: argument checks, then the
// policy's backend. Modern GPU's vectorized sorted search (seeds/003; bounds and
// search_type: search_tags.hpp). Preconditions as merge's.
#pragma once

#include <type_traits>
#include <utility>

#include "detail/checked.hpp"
#include "detail/config.hpp"
#include "functional.hpp"
#include "search_tags.hpp"

namespace libmerge {

namespace detail {
// An output the search type writes must hold the largest bound (the other
// side's length), and for index_match the flag bit too.
template <search_type Type, class OutIt>
void check_search_output(index_t other_length, const char* out_name) {
  if constexpr (writes_output(Type)) {
    if constexpr (Type == search_type::match && std::is_same_v<output_value_t<OutIt>, bool>) {
      return;  // 0/1 flags: a bool output is fine
    } else {
      check_output_range<OutIt>(writes_index(Type) ? other_length : 1, Type == search_type::index_match,
                                "sorted_search", out_name);
    }
  }
}
// The lengths of A and B, once the ranges and the outputs the search types
// write are checked.
template <search_type TypeA, search_type TypeB, class AOut, class BOut, class AIt, class BIt>
std::pair<index_t, index_t> checked_search_lengths(AIt a_first, AIt a_last, BIt b_first, BIt b_last) {
  const index_t na = checked_length(a_first, a_last, "sorted_search", "a_first", "a_last");
  const index_t nb = checked_length(b_first, b_last, "sorted_search", "b_first", "b_last");
  check_search_output<TypeA, AOut>(nb, "a_out");
  check_search_output<TypeB, BOut>(na, "b_out");
  return {na, nb};
}
// The outputs a search writes must not overlap the inputs or each other.
template <search_type TypeA, search_type TypeB, class AIt, class BIt, class AOut, class BOut>
void check_search_disjoint(AIt a_first, index_t na, BIt b_first, index_t nb, AOut a_out, BOut b_out,
                           const match_counts* counts_out) {
  byte_range ra{"a_out"}, rb{"b_out"};
  if constexpr (writes_output(TypeA)) ra = range_of("a_out", a_out, na);
  if constexpr (writes_output(TypeB)) rb = range_of("b_out", b_out, nb);
  check_disjoint("sorted_search", {ra, rb, range_of("counts_out", counts_out, counts_out ? 1 : 0)},
                 {range_of("a_first", a_first, na), range_of("b_first", b_first, nb)});
}

// A backend whose counts live in its own memory (a GPU) says so with
// `static constexpr bool counts_in_place = true` and a run_to(..., counts_out,
// comp) that writes them there; the others return them from run().
template <class Impl, class = void>
inline constexpr bool writes_counts_in_place = false;
template <class Impl>
inline constexpr bool writes_counts_in_place<Impl, std::void_t<decltype(Impl::counts_in_place)>> =
    Impl::counts_in_place;
}  // namespace detail

// The general form: Bounds picks lower/upper, TypeA and TypeB what each side
// writes; returns the match counts. An output whose type is none is never
// touched (nullptr is fine). To return the counts a device backend waits for
// its stream; the form below does not.
template <bounds Bounds, search_type TypeA, search_type TypeB, class Policy, class AIt, class BIt,
          class AOut, class BOut, class Comp = less<>, class = detail::require_policy<Policy>>
match_counts sorted_search(const Policy& policy, AIt a_first, AIt a_last, BIt b_first, BIt b_last,
                           AOut a_out, BOut b_out, Comp comp = Comp()) {
  const auto [na, nb] = detail::checked_search_lengths<TypeA, TypeB, AOut, BOut>(a_first, a_last, b_first, b_last);
  if (na + nb == 0) return {};
  detail::check_search_disjoint<TypeA, TypeB>(a_first, na, b_first, nb, a_out, b_out, nullptr);
  const auto& exec = detail::resolve_policy(policy);
  detail::check_sorted_inputs(exec, a_first, na, b_first, nb, comp, "sorted_search", "[a_first, a_last)",
                              "[b_first, b_last)");
  return detail::impl_for<algo::sorted_search, Policy>::template run<Bounds, TypeA, TypeB>(
      exec, a_first, na, b_first, nb, a_out, b_out, comp);
}

// The same, writing the counts to *counts_out: on a device backend
// counts_out is device-accessible memory, written in stream order, and the
// call never waits.
template <bounds Bounds, search_type TypeA, search_type TypeB, class Policy, class AIt, class BIt,
          class AOut, class BOut, class Comp = less<>, class = detail::require_policy<Policy>>
void sorted_search(const Policy& policy, AIt a_first, AIt a_last, BIt b_first, BIt b_last, AOut a_out,
                   BOut b_out, match_counts* counts_out, Comp comp = Comp()) {
  const auto [na, nb] = detail::checked_search_lengths<TypeA, TypeB, AOut, BOut>(a_first, a_last, b_first, b_last);
  if (counts_out == nullptr) detail::throw_invalid("sorted_search", "counts_out is a null pointer");
  detail::check_search_disjoint<TypeA, TypeB>(a_first, na, b_first, nb, a_out, b_out, counts_out);
  const auto& exec = detail::resolve_policy(policy);
  detail::check_sorted_inputs(exec, a_first, na, b_first, nb, comp, "sorted_search", "[a_first, a_last)",
                              "[b_first, b_last)");
  using impl = detail::impl_for<algo::sorted_search, Policy>;
  if constexpr (detail::writes_counts_in_place<impl>) {
    impl::template run_to<Bounds, TypeA, TypeB>(exec, a_first, na, b_first, nb, a_out, b_out, counts_out, comp);
  } else {
    *counts_out = na + nb == 0 ? match_counts{}
                               : impl::template run<Bounds, TypeA, TypeB>(exec, a_first, na, b_first, nb, a_out,
                                                                          b_out, comp);
  }
}

// The common form: <Bounds, index, none>. Returns the end of a_out.
template <bounds Bounds, class Policy, class AIt, class BIt, class AOut, class Comp = less<>, class = detail::require_policy<Policy>>
AOut sorted_search(const Policy& policy, AIt a_first, AIt a_last, BIt b_first, BIt b_last, AOut a_out,
                   Comp comp = Comp()) {
  sorted_search<Bounds, search_type::index, search_type::none>(policy, a_first, a_last, b_first,
                                                               b_last, a_out, nullptr, comp);
  return a_out + (a_last - a_first);
}

// For each element of A, how many elements of B are equal to it (the width of
// its equal range in B). The count type must hold |B|.
template <class Policy, class AIt, class BIt, class CountsOut, class Comp = less<>, class = detail::require_policy<Policy>>
CountsOut sorted_equality_count(const Policy& policy, AIt a_first, AIt a_last, BIt b_first,
                                BIt b_last, CountsOut counts_out, Comp comp = Comp()) {
  const index_t na =
      detail::checked_length(a_first, a_last, "sorted_equality_count", "a_first", "a_last");
  const index_t nb =
      detail::checked_length(b_first, b_last, "sorted_equality_count", "b_first", "b_last");
  detail::check_output_range<CountsOut>(nb, false, "sorted_equality_count", "counts_out");
  if (na == 0) return counts_out;
  detail::check_disjoint("sorted_equality_count", {detail::range_of("counts_out", counts_out, na)},
                         {detail::range_of("a_first", a_first, na), detail::range_of("b_first", b_first, nb)});
  const auto& exec = detail::resolve_policy(policy);
  detail::check_sorted_inputs(exec, a_first, na, b_first, nb, comp, "sorted_equality_count", "[a_first, a_last)",
                              "[b_first, b_last)");
  detail::impl_for<algo::sorted_equality_count, Policy>::run(exec, a_first, na, b_first, nb, counts_out,
                                                             comp);
  return counts_out + na;
}

}  // namespace libmerge
