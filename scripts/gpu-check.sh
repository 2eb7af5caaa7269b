#!/usr/bin/env bash
# Runs prebuilt GPU binaries on a machine with a GPU: the gpu tests, then
# compute-sanitizer (memcheck, racecheck) over them, then the benchmark.
#
#   scripts/gpu-check.sh [BIN_DIR] [steps...]
#       steps: tests large memcheck racecheck bench sortbench sorttune
#              searchbench searchtune demo (default: all but the tune steps)
#
# Logs go to $OUT (or ./gpu-logs): tests.log, memcheck.log, racecheck.log,
# bench.txt, bench.json, demo.txt and summary.txt (a line per step with its
# exit code and time).
set -u
BIN=${1:-gpu-bin}
shift || true
STEPS=${*:-tests large memcheck racecheck bench sortbench searchbench demo}
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"

step() {  # step <log file> <name> <timeout s> <command...>
  local file=$1 name=$2 limit=$3
  shift 3
  echo "=== $name: $*" >> "$LOG/$file"
  local t0=$SECONDS
  timeout "$limit" "$@" >> "$LOG/$file" 2>&1
  local rc=$?
  echo "$name rc=$rc ($((SECONDS - t0)) s)" | tee -a "$LOG/summary.txt"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >> "$LOG/summary.txt" 2>&1

for s in $STEPS; do
  case $s in
    tests)
      step tests.log errors 300 "$BIN/test_cuda_errors" --log_level=test_suite
      step tests.log arch_mismatch 120 "$BIN/test_cuda_arch_mismatch" --log_level=message
      for t in "$BIN"/test_cuda_arch_*; do
        [ "$(basename "$t")" = test_cuda_arch_mismatch ] || step tests.log "$(basename "$t")" 180 "$t" --log_level=message
      done
      step tests.log merge 900 "$BIN/test_cuda_merge" --log_level=test_suite
      step tests.log merge_sort 900 "$BIN/test_cuda_merge_sort" --log_level=test_suite
      step tests.log element_sizes 300 "$BIN/test_cuda_element_sizes" --log_level=test_suite
      step tests.log sorted_search 900 "$BIN/test_cuda_sorted_search" --log_level=test_suite
      step tests.log key_types 300 "$BIN/test_cuda_key_types" --log_level=test_suite
      step tests.log types_sorts 600 "$BIN/test_cuda_types_sorts" --log_level=test_suite
      step tests.log types_merge_search 600 "$BIN/test_cuda_types_merge_search" --log_level=test_suite
      ;;
    large)
      step tests.log large 900 "$BIN/test_cuda_large" --log_level=message
      ;;
    memcheck|racecheck)
      # Quick mode keeps every test case but drops the largest sizes. The
      # stream-overlap case is left out: the tool serializes kernels, which is
      # exactly what that case checks does not happen.
      # test_cuda_errors makes CUDA calls fail on purpose (an allocator that
      # cannot allocate); the tool would count those, so API errors are left
      # to the test's own checks there.
      step "$s.log" "$s-errors" 300 compute-sanitizer --tool "$s" --report-api-errors no --error-exitcode 99 \
        "$BIN/test_cuda_errors"
      step "$s.log" "$s-merge" 560 env LIBMERGE_TEST_QUICK=1 compute-sanitizer --tool "$s" --error-exitcode 99 \
        "$BIN/test_cuda_merge" --run_test='!merge_is_asynchronous_and_streams_overlap'
      # racecheck runs each kernel some 100 times slower: over the sort it
      # takes the cases that reach every kernel (block sort, 2- and 4-way
      # passes, a skipped pass, the one-kernel sort, wide elements).
      sort_cases='!sorts_on_two_streams'
      [ "$s" = racecheck ] && sort_cases='sort_tuned_boxes,sort_greater,sort_after_a_skipped_pass,sort_one_kernel_class,sort_wide_structs'
      step "$s.log" "$s-merge_sort" 560 env LIBMERGE_TEST_QUICK=1 compute-sanitizer --tool "$s" --error-exitcode 99 \
        "$BIN/test_cuda_merge_sort" --run_test="$sort_cases"
      step "$s.log" "$s-sorted_search" 560 env LIBMERGE_TEST_QUICK=1 compute-sanitizer --tool "$s" --error-exitcode 99 \
        "$BIN/test_cuda_sorted_search" --run_test='!sorted_search_is_asynchronous_and_streams_overlap'
      for t in element_sizes key_types types_sorts types_merge_search; do
        [ -x "$BIN/test_cuda_$t" ] && step "$s.log" "$s-$t" 560 env LIBMERGE_TEST_QUICK=1 compute-sanitizer --tool "$s" \
          --error-exitcode 99 "$BIN/test_cuda_$t"
      done
      ;;
    bench)
      step bench.txt bench 900 "$BIN/libmerge_bench" --gpu --json "$LOG/bench.json"
      ;;
    sortbench)
      step sortbench.txt sortbench 900 "$BIN/libmerge_sort_bench" --json "$LOG/sortbench.json"
      ;;
    sorttune)
      step sorttune.txt sorttune 600 "$BIN/libmerge_sort_bench" --tune --json "$LOG/sorttune.json"
      ;;
    searchbench)
      step searchbench.txt searchbench 600 "$BIN/libmerge_search_bench" --json "$LOG/searchbench.json"
      ;;
    searchtune)
      step searchtune.txt searchtune 400 "$BIN/libmerge_search_bench" --tune --json "$LOG/searchtune.json"
      ;;
    demo)
      step demo.txt demo 120 "$BIN/libmerge_demo"
      ;;
  esac
done
cat "$LOG/summary.txt"
