// What every benchmark's JSON says about the run itself: the date, the
// compiler and the peers' versions, so that scripts/readme_tables.py can name
// them beside each ratio instead of a reader guessing which CUB was beaten.
#pragma once

#include <ctime>
#include <fstream>
#include <string>

namespace bench_meta {

// The run's date, UTC, ISO 8601 (YYYY-MM-DD).
inline std::string iso_date() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &utc);
  return buf;
}

// The host compiler, which also names the standard library the std:: and
// __gnu_parallel peers come from.
inline std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("g++ ") + __VERSION__;
#else
  return "unknown";
#endif
}

// The CPU's model name (Linux), for the CPU backends' tables.
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// CUB_VERSION / THRUST_VERSION (MMMmmmpp) as "M.m.p".
inline std::string cccl_version(long v) {
  return std::to_string(v / 100000) + "." + std::to_string(v / 100 % 1000) + "." + std::to_string(v % 100);
}

}  // namespace bench_meta
