#!/usr/bin/env bash
# Plots benchmark JSON into docs/images (installs Debian's python3-matplotlib
# if needed; uses the system python, which is the one that package serves).
#   scripts/plot.sh RESULTS.json [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! /usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-matplotlib
fi
/usr/bin/python3 perf/plot.py "$1" "${2:-docs/images}"
