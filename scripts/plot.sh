#!/usr/bin/env bash
# Plots benchmark JSON into docs/images (installs Debian's python3-matplotlib
# if needed; uses the system python, which is the one that package serves).
# The JSON says which benchmark wrote it: libmerge_search_bench (sections
# "search", "crossover"), libmerge_sort_bench (rows with a "shape"), else
# libmerge_bench (perf/plot.py).
#   scripts/plot.sh RESULTS.json [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! /usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-matplotlib
fi
script=perf/plot.py
if grep -q '"section": "\(search\|crossover\)"' "$1"; then
  script=perf/plot_search.py
elif grep -q '"shape"' "$1"; then
  script=perf/plot_sort.py
fi
/usr/bin/python3 "$script" "$1" "${2:-docs/images}"
