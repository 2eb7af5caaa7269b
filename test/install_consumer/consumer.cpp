// Sorts, merges and searches through the public header; exits non-zero if a
// result is wrong.
#include <libmerge/libmerge.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
  namespace lm = libmerge;
  std::vector<int> keys = {5, 3, 9, 1, 3, 7};
  std::vector<int> expected = keys;
  std::stable_sort(expected.begin(), expected.end());
  lm::merge_sort(lm::serial, keys.begin(), keys.end());

  std::vector<int> a = {1, 4, 6}, b = {2, 4, 5}, out(6);
  lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin());

  std::vector<long long> bounds(3);
  lm::sorted_search<lm::bounds::lower>(lm::serial, a.begin(), a.end(), b.begin(), b.end(), bounds.begin());

  const bool ok = keys == expected && out == std::vector<int>{1, 2, 4, 4, 5, 6} &&
                  bounds == std::vector<long long>{0, 1, 3};
  std::printf("libmerge consumer: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
