#!/usr/bin/env bash
# Copies the GPU test, demo and benchmark executables of a build tree into
# gpu-bin/, small enough to carry to the lent GPU machine.
set -eu
BUILD=${1:-build-gpu}
rm -rf gpu-bin && mkdir -p gpu-bin
for f in test/gpu/test_cuda_errors test/gpu/test_cuda_merge test/gpu/test_cuda_large test/gpu/test_cuda_arch_mismatch \
         test/gpu/test_cuda_merge_sort test/gpu/test_cuda_element_sizes test/gpu/test_cuda_sorted_search test/gpu/test_cuda_key_types \
         test/gpu/test_cuda_types_sorts test/gpu/test_cuda_types_merge_search \
         test/gpu/test_cuda_arch_80_90_100 test/gpu/test_cuda_arch_80ptx \
         test/gpu/test_nccl_merge_sort test/gpu/test_nccl_multigpu \
         demo/libmerge_demo perf/libmerge_bench perf/libmerge_sort_bench perf/libmerge_search_bench \
         perf/libmerge_nccl_bench; do
  [ -f "$BUILD/$f" ] && cp "$BUILD/$f" gpu-bin/
done
ls -la gpu-bin
