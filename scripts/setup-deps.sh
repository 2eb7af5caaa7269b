#!/usr/bin/env bash
# Installs what the build needs and a fresh Debian 12 machine lacks: CMake,
# g++, make, Boost.Test's headers (libboost-test-dev), and Python 3 with CA
# certificates (the README's table check; scripts/fetch-cccl.py), its venv
# module and headers (the Python package's test). Does nothing
# when all are present. nvcc is optional: with it, the CUDA targets are built too.
set -euo pipefail
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
[ -f /usr/include/boost/test/included/unit_test.hpp ] || need+=(libboost-test-dev)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# The Python package's test (scripts/python-test.sh): a virtual environment
# and Python's headers, for nanobind.
python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
  >/dev/null 2>&1 || need+=(python3-dev)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup-deps: installing ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
