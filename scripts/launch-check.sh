#!/usr/bin/env bash
# Runs examples/distributed_sort as launchers run it, one process a GPU, on
# this machine's GPUs (2 or more): each process gets torchrun's RANK,
# WORLD_SIZE and LOCAL_RANK and LIBMERGE_BOOTSTRAP=tcp://127.0.0.1:PORT.
#   1. correctness and speed on 2 and 4 GPUs (as many as there are),
#      2^LOG2 keys in all, REPEAT sorts each (the time: their median);
#   2. a process killed with SIGKILL while the others sort;
#   3. a process that never starts;
#   4. a process that exits before its sort (before the header exchange).
# Every other process must end within its timeout with an error; each case
# has a hard limit of its own, so nothing hangs the runner.
#   scripts/launch-check.sh BIN [LOG2] [REPEAT]     (BIN: the distributed_sort binary)
set -uo pipefail
bin=${1:?the distributed_sort binary}
log2=${2:-30}
repeat=${3:-10}
gpus=$(nvidia-smi -L | wc -l)
export NCCL_NVLS_ENABLE=0
port=$((29500 + RANDOM % 1000))
fail=0

# start WORLD RANKS... -- ARGS: starts those ranks in the background (pids in $pids, logs in /tmp/launch-RANK.log).
start() {
  local world=$1; shift
  local ranks=()
  while [ "$1" != "--" ]; do ranks+=("$1"); shift; done
  shift
  port=$((port + 1))
  pids=()
  for r in "${ranks[@]}"; do
    RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r LIBMERGE_BOOTSTRAP=tcp://127.0.0.1:$port \
      timeout -s KILL 300 "$bin" "$@" >"/tmp/launch-$r.log" 2>&1 &
    pids+=($!)
  done
}
# finish NAME EXPECT [SKIP]: waits for $pids; EXPECT ok (all exit 0) or fail
# (every survivor nonzero); the process at index SKIP (the one killed) is not judged.
finish() {
  local name=$1 expect=$2 skip=${3:--1} codes=() t0=$SECONDS i=0
  for p in "${pids[@]}"; do wait "$p"; codes+=($?); done
  local took=$((SECONDS - t0))
  echo "== $name: exit codes ${codes[*]} after ${took} s"
  cat /tmp/launch-*.log; rm -f /tmp/launch-*.log
  for c in "${codes[@]}"; do
    i=$((i + 1))
    [ $((i - 1)) = "$skip" ] && continue
    if [ "$expect" = ok ] && [ "$c" != 0 ]; then echo "FAILED: $name"; fail=1; return; fi
    if [ "$expect" = fail ] && [ "$c" = 0 ]; then echo "FAILED: $name (a process succeeded)"; fail=1; return; fi
    if [ "$c" = 137 ]; then echo "FAILED: $name (a process hit the hard limit)"; fail=1; return; fi
  done
  echo "passed: $name"
}

for w in 2 4; do
  [ "$w" -le "$gpus" ] || continue
  start "$w" $(seq 0 $((w - 1))) -- --log2 "$log2" --repeat "$repeat" --timeout 60
  finish "$w processes, 2^$log2 keys, $repeat sorts" ok
done
w=$(( gpus < 4 ? gpus : 4 ))
start "$w" $(seq 0 $((w - 1))) -- --log2 "$log2" --repeat 1000 --timeout 20
sleep 8; pkill -KILL -P "${pids[1]}"  # the program under rank 1's timeout
finish "$w processes, rank 1 killed (SIGKILL) while sorting" fail 1
start "$w" 0 $(seq 2 $((w - 1))) -- --log2 24 --timeout 15
finish "$w processes, rank 1 never starts" fail
start "$w" $(seq 0 $((w - 1))) -- --log2 24 --timeout 15 --exit-before-sort 1
finish "$w processes, rank 1 exits before its sort" fail
exit $fail
