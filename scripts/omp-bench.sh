#!/usr/bin/env bash
# The OpenMP benchmark in one command: lm::omp::par against __gnu_parallel,
# Thrust's OpenMP system and a parallel std::lower_bound loop, with lm::serial,
# std:: and the CUDA backend alongside (perf/bench_omp.cpp says what runs).
#
#   bash scripts/omp-bench.sh OUT_DIR [BUILD_DIR] [driver options...]
#
# BUILD_DIR (default: build) is a CMake build of this tree (configured here if
# it is not one yet); the driver is brought up to date there first. Writes OUT_DIR/omp-bench.txt (tables),
# omp-bench.json (every measurement), omp-bench.log (progress) and, when
# matplotlib is installed, omp-scaling.png and omp-sizes.png. The default plan
# takes about 5 minutes on 16 cores and stops starting new measurements after
# --max-seconds (300); trim it with e.g. --sizes 1e6,1e7,1e8 --threads 1,4,16.
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: bash scripts/omp-bench.sh OUT_DIR [BUILD_DIR] [driver options...]" >&2
  exit 2
fi
out=$1
build=${2:-build}
shift $(( $# >= 2 ? 2 : 1 ))
cd "$(dirname "$0")/.."
source scripts/env.sh
# Configure when BUILD_DIR is not a build yet; (re)build the driver either way
# (a no-op when it is up to date).
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --target libmerge_omp_bench -j"$JOBS"
mkdir -p "$out"
"$build/perf/libmerge_omp_bench" --out "$out" "$@" 2> >(tee "$out/omp-bench.log" >&2)
python=python3
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1 && python=/usr/bin/python3
if "$python" -c 'import matplotlib' >/dev/null 2>&1; then
  "$python" perf/plot_omp.py "$out/omp-bench.json" "$out"
else
  echo "omp-bench: no matplotlib, no plots (Debian: apt-get install python3-matplotlib, then" \
       "python3 perf/plot_omp.py $out/omp-bench.json $out)" >&2
fi
