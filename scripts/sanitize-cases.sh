#!/usr/bin/env bash
# Runs compute-sanitizer over every test case of the given GPU test binaries,
# one process a case, JOBS cases at a time on the one GPU, each under a time
# limit: racecheck makes kernels some 100 times slower, and one process over
# a whole binary (test_cuda_merge_sort, test_cuda_sorted_search, the type
# tables) did not finish in 90 s, while most cases alone take seconds.
#
#   scripts/sanitize-cases.sh TOOL LIMIT_S JOBS BIN...
#
# Quick sizes (LIBMERGE_TEST_QUICK=1). Left out: the cases that check that
# two streams overlap (the tool serializes kernels). Each case's verdict goes
# to $OUT/TOOL-cases.txt (binary, case, rc, seconds, tab-separated; rc 124: out of time), its
# output to $OUT/TOOL-cases.log; the last line counts cases passed, failed
# and out of time.
#
# SANITIZE_SKIP=FILE leaves out the cases that passed in an earlier run's
# TOOL-cases.txt (the runs of one GPU call are limited to 10 minutes).
#
# SANITIZE_SHARDS="K case1 case2 ..." runs each named case as K processes,
# LIBMERGE_TEST_SHARD=i/K (i = 0 .. K-1), each doing every K-th check of the
# case's sweeps (cuda_test::in_shard); its verdicts read "case@i/K". (Names
# are split at spaces: a case whose name holds one cannot be sharded.)
#
# SANITIZE_GPUS=G spreads the cases over G GPUs (case i on GPU i mod G,
# through CUDA_VISIBLE_DEVICES), SANITIZE_GPUS=1,2,3 over the GPUs listed:
# under racecheck the GPU, not the host, is what the cases wait for, and 19
# at a time on one GPU ran out of time where 5 at a time finished.
set -u
TOOL=$1 LIMIT=$2 JOBS=$3
shift 3
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG"
export LIBMERGE_TEST_QUICK=1
list=$(mktemp)
for bin in "$@"; do
  [ -x "$bin" ] || continue
  # --list_content prints one case a line (suites indented), "*" when enabled.
  "$bin" --list_content 2>&1 | sed -n 's/^ *\(.*\)\*$/\1/p' |
    grep -v -e 'streams_overlap' -e 'on_two_streams' | while read -r c; do printf '%s\t%s\n' "$bin" "$c"; done
done > "$list"
# SANITIZE_SHARDS: a case named there becomes K lines "case@i/K" (before
# SANITIZE_SKIP, whose earlier verdicts name shards so).
if [ -n "${SANITIZE_SHARDS:-}" ]; then
  read -r k names <<< "$SANITIZE_SHARDS"
  case $k in '' | *[!0-9]* | 0) echo "SANITIZE_SHARDS: K must be a positive number, got '$k'" >&2; exit 2 ;; esac
  awk -F '\t' -v k="$k" -v names="$names" 'BEGIN { n = split(names, a, " "); for (j = 1; j <= n; ++j) sharded[a[j]] = 1 }
    { if ($2 in sharded) { for (i = 0; i < k + 0; ++i) printf "%s\t%s@%d/%d\n", $1, $2, i, k } else print }' \
    "$list" > "$list.sharded"
  mv "$list.sharded" "$list"
fi
# SANITIZE_SKIP: a file of "binary<TAB>case" lines (a TOOL-cases.txt of an
# earlier run) whose cases passed there and are left out here.
if [ -n "${SANITIZE_SKIP:-}" ] && [ -f "$SANITIZE_SKIP" ]; then
  awk -F '\t' 'NR == FNR { if ($3 == 0) done[$1 "\t" $2] = 1; next }
                { n = split($1, p, "/"); if (!((p[n] "\t" $2) in done)) print }' "$SANITIZE_SKIP" "$list" > "$list.todo"
  mv "$list.todo" "$list"
fi
run_case() {
  local i=$1 bin=$2 c=$3 t0=$SECONDS out shard= gpu=()
  case $c in *@*) shard=${c#*@} ;; esac
  local list=(${GPUS//,/ })
  [ -n "$GPUS" ] && gpu=(CUDA_VISIBLE_DEVICES=${list[$((i % ${#list[@]}))]})
  out=$(timeout -k 10 "$LIMIT" env "${gpu[@]}" LIBMERGE_TEST_SHARD="$shard" compute-sanitizer --tool "$TOOL" --error-exitcode 99 \
    "$bin" --run_test="${c%@*}" 2>&1)
  local rc=$?
  printf '=== %s %s rc=%d\n%s\n' "$(basename "$bin")" "$c" "$rc" "$(printf '%s\n' "$out" | tail -n 6)" >> "$LOG/$TOOL-cases.log"
  printf '%s\t%s\t%d\t%d\n' "$(basename "$bin")" "$c" "$rc" $((SECONDS - t0)) >> "$LOG/$TOOL-cases.txt"
}
export -f run_case
# (GPUS: the devices' numbers, comma-separated; empty: the default device)
GPUS=
case ${SANITIZE_GPUS:-} in
  '') ;;
  *[!0-9,]* | *,,* | ,* | *, | 0) echo "SANITIZE_GPUS: a number or a comma-separated list of GPUs, got '$SANITIZE_GPUS'" >&2; exit 2 ;;
  *,*) GPUS=$SANITIZE_GPUS ;;
  *) GPUS=$(seq -s, 0 $((SANITIZE_GPUS - 1))) ;;
esac
export TOOL LIMIT LOG GPUS
: >> "$LOG/$TOOL-cases.txt"  # (every case may have been skipped)
# (each line numbered, from 0, for its GPU)
awk '{ printf "%d\t%s\n", NR - 1, $0 }' "$list" |
  xargs -r -d '\n' -P "$JOBS" -n 1 bash -c 'IFS=$(printf "\t") read -r i b c <<< "$0"; run_case "$i" "$b" "$c"'
awk -F '\t' '{ if ($3 == 0) p++; else if ($3 == 124 || $3 == 137) t++; else f++ } END { printf "%s: %d cases passed, %d failed, %d out of time\n", ENVIRON["TOOL"], p, f, t }' \
  "$LOG/$TOOL-cases.txt" | tee -a "$LOG/$TOOL-cases.txt"
rm -f "$list"
