// lm::serial: run on the calling thread with the serial reference backend.
#pragma once

#include "../libmerge/detail/checked.hpp"
#include "../libmerge/detail/config.hpp"

namespace libmerge {

struct serial_policy {
  using backend_tag = backend::serial;
  // Every call's preconditions checked first (libmerge/detail/checked.hpp).
  constexpr checked_policy<serial_policy> checked() const { return checked_policy<serial_policy>(*this); }
};

// The policy object users pass: lm::merge_sort(lm::serial, first, last).
inline constexpr serial_policy serial{};

}  // namespace libmerge
