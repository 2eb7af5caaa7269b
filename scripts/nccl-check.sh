#!/usr/bin/env bash
# Runs the sort across GPUs on a machine with NCCL and one or more GPUs, from
# prebuilt binaries (scripts/stage-gpu-bin.sh copies them into gpu-bin/):
# the multi-GPU tests through real NCCL, the one-GPU tests (loopback ranks),
# and the benchmark. NVLink multicast stays off.
#
#   scripts/nccl-check.sh [BIN_DIR] [steps...]
#       steps: topo multigpu loopback memcheck racecheck bench
#       (default: all)
#
# Logs go to $OUT (or ./gpu-logs): nccl-tests.log, nccl-sanitizer.log,
# nccl-bench.txt (one thread drives every GPU), nccl-bench-threads.txt (a
# thread a GPU) and a line per step in summary.txt. Each step has a hard time limit: a hang ends as a
# failed step, never as a hung machine.
set -u
BIN=${1:-gpu-bin}
shift || true
STEPS=${*:-topo multigpu loopback memcheck racecheck bench}
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"
export NCCL_NVLS_ENABLE=0

step() {  # step <log file> <name> <timeout s> <command...>
  local file=$1 name=$2 limit=$3
  shift 3
  echo "=== $name: $*" >> "$LOG/$file"
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" >> "$LOG/$file" 2>&1
  local rc=$?
  echo "$name rc=$rc ($((SECONDS - t0)) s)" | tee -a "$LOG/summary.txt"
}

for s in $STEPS; do
  case $s in
    topo) step summary.txt topo 30 nvidia-smi topo -m ;;
    multigpu) step nccl-tests.log multigpu 400 "$BIN/test_nccl_multigpu" --log_level=message ;;
    loopback) step nccl-tests.log loopback 300 "$BIN/test_nccl_merge_sort" --log_level=test_suite ;;
    # The sanitizers over the distributed steps (loopback ranks on one GPU,
    # quick sizes); NCCL's own kernels are not theirs to check.
    memcheck) step nccl-sanitizer.log memcheck 300 env LIBMERGE_TEST_QUICK=1 compute-sanitizer --tool memcheck \
                --error-exitcode 99 "$BIN/test_nccl_merge_sort" \
                --run_test=loopback_random_shards,loopback_shards_off_16_byte_boundaries,loopback_host_pointer_on_one_rank,loopback_two_runs_a_rank,loopback_early_round ;;
    racecheck) step nccl-sanitizer.log racecheck 300 env LIBMERGE_TEST_QUICK=1 compute-sanitizer --tool racecheck \
                 --error-exitcode 99 "$BIN/test_nccl_merge_sort" --run_test=loopback_random_shards ;;
    bench)
      step nccl-bench.txt bench 300 "$BIN/libmerge_nccl_bench" --max-log2 "${NCCL_BENCH_MAX_LOG2:-30}"
      step nccl-bench-threads.txt bench-threads 300 "$BIN/libmerge_nccl_bench" --threads \
        --max-log2 "${NCCL_BENCH_MAX_LOG2:-30}" ;;
    *) echo "unknown step $s" ;;
  esac
done
