// libmerge._cpu: the OpenMP backend for Python (libmerge/__init__.py checks
// the arguments and picks the dtype tag; ops.hpp says what each call does).
// Every array is a C-contiguous 1-D CPU array whose elements match the tag.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "ops.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using array = nb::ndarray<nb::c_contig, nb::device::cpu>;
using positions = nb::ndarray<std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

namespace {

// An array's length, once it is 1-D and holds elements of the tag's size.
lmpy::i64 length(const array& x, int tag, const char* name) {
  if (x.ndim() != 1) {
    throw std::invalid_argument(std::string("libmerge: ") + name + " must be 1-D, got " + std::to_string(x.ndim()) +
                                " dimensions");
  }
  if (static_cast<std::size_t>(x.itemsize()) != lmpy::tag_bytes(tag)) {
    throw std::invalid_argument(std::string("libmerge: ") + name + "'s elements have " +
                                std::to_string(x.itemsize()) + " bytes, its dtype " +
                                std::to_string(lmpy::tag_bytes(tag)));
  }
  return static_cast<lmpy::i64>(x.shape(0));
}

lmpy::i64* data_or_null(std::optional<positions>& p) { return p ? p->data() : nullptr; }

}  // namespace

NB_MODULE(_cpu, m) {
  m.doc() = "libmerge's OpenMP backend (use the functions of the libmerge package)";
  const auto release = nb::call_guard<nb::gil_scoped_release>();
  m.def("sort", [](int tag, bool desc, array keys) { lmpy::sort(tag, desc, keys.data(), length(keys, tag, "a")); },
        release);
  m.def("argsort", [](int tag, bool desc, array keys, positions indices) {
    lmpy::argsort(tag, desc, keys.data(), length(keys, tag, "a"), indices.data());
  }, release);
  m.def("sorted_until", [](int tag, bool desc, array keys) {
    return lmpy::sorted_until(tag, desc, keys.data(), length(keys, tag, "a"));
  }, release);
  m.def("merge", [](int tag, bool desc, array a, array b, array out, std::optional<positions> pos) {
    lmpy::merge(tag, desc, a.data(), length(a, tag, "a"), b.data(), length(b, tag, "b"), out.data(),
                data_or_null(pos));
  }, "tag"_a, "desc"_a, "a"_a, "b"_a, "out"_a, "pos"_a.none(), release);
  m.def("multiway_merge", [](int tag, bool desc, std::vector<array> arrays, array out, std::optional<positions> pos) {
    std::vector<const void*> firsts;
    std::vector<lmpy::i64> lengths;
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      firsts.push_back(arrays[i].data());
      lengths.push_back(length(arrays[i], tag, ("arrays[" + std::to_string(i) + "]").c_str()));
    }
    lmpy::multiway_merge(tag, desc, firsts.data(), lengths.data(), static_cast<lmpy::i64>(arrays.size()),
                         out.data(), data_or_null(pos));
  }, "tag"_a, "desc"_a, "arrays"_a, "out"_a, "pos"_a.none(), release);
  m.def("sorted_search", [](int tag, bool desc, bool upper, int form, array a, array b, positions a_out,
                            std::optional<positions> b_out) {
    lmpy::sorted_search(tag, desc, upper, form, a.data(), length(a, tag, "a"), b.data(), length(b, tag, "b"),
                        a_out.data(), data_or_null(b_out));
  }, "tag"_a, "desc"_a, "upper"_a, "form"_a, "a"_a, "b"_a, "a_out"_a, "b_out"_a.none(), release);
  m.def("equality_count", [](int tag, bool desc, array a, array b, positions counts) {
    lmpy::equality_count(tag, desc, a.data(), length(a, tag, "a"), b.data(), length(b, tag, "b"), counts.data());
  }, release);
}
