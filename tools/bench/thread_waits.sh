#!/usr/bin/env bash
# thread_waits.sh — what each thread of a process waits for: samples every
# thread's state (/proc/PID/task/TID/stat) and, for a thread in D state
# (uninterruptible: I/O), its kernel stack (/proc/PID/task/TID/stack), about
# every 30 ms, then prints per thread name the share of samples in each state
# and the most frequent D-state stacks. It shows where a background thread
# waits on the disk (a device cache flush under fdatasync, page writeback, a
# discard under unlink) while the CPU is idle.
#
# Usage: tools/bench/thread_waits.sh [--pid PID --seconds N | -- CMD [ARGS...]]
#   --pid PID --seconds N  sample a running process for N seconds
#   -- CMD ARGS            run CMD (its output goes to this script's stdout),
#                          sample its threads (not its children) until it
#                          exits; exit with its status
#   --top N                print the N most frequent stacks (default 15)
# Needs root (the kernel stacks). Sampling costs a few % of one CPU.
set -u
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
pid= secs= top=15 cmd=()
while [ $# -gt 0 ]; do
  case $1 in
    --pid) pid=${2:?--pid needs a process id}; shift 2 ;;
    --seconds) secs=${2:?--seconds needs a number}; shift 2 ;;
    --top) top=${2:?--top needs a number}; shift 2 ;;
    --) shift; cmd=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "thread_waits.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ ${#cmd[@]} -gt 0 ]; then
  [ -z "$pid" ] || { echo "thread_waits.sh: give either --pid or a command, not both" >&2; exit 2; }
  "${cmd[@]}" &
  pid=$!
elif [ -z "$pid" ] || [ -z "$secs" ]; then
  echo "thread_waits.sh: need --pid PID --seconds N, or -- CMD" >&2; exit 2
elif [ ! -d "/proc/$pid" ]; then
  echo "thread_waits.sh: no process $pid" >&2; exit 2
fi
[ "$(id -u)" = 0 ] || echo "thread_waits.sh: not root: kernel stacks will be empty" >&2

raw=$(mktemp); trap 'rm -f "$raw"' EXIT
end=$(( $(date +%s) + ${secs:-1000000000} ))
while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do
  for t in /proc/"$pid"/task/*; do
    { read -r name < "$t/comm" && read -r stat < "$t/stat"; } 2>/dev/null || continue
    rest=${stat##*) }
    state=${rest%% *}
    stack=-
    if [ "$state" = D ]; then
      stack=$(awk '{sub(/\+.*/, "", $2); printf "%s ", $2}' "$t/stack" 2>/dev/null | cut -c1-300)
    fi
    printf '%s\t%s\t%s\n' "$name" "$state" "${stack:--}" >> "$raw"
  done
  sleep 0.03
done
rc=0
if [ ${#cmd[@]} -gt 0 ]; then wait "$pid"; rc=$?; fi

echo "== samples per thread name and state (R running/runnable, S sleeping, D waiting on I/O)"
awk -F'\t' '{n[$1]++; c[$1 "\t" $2]++}
  END {for (k in c) {split(k, a, "\t"); printf "%-16s %s %6d  %5.1f%%\n", a[1], a[2], c[k], 100 * c[k] / n[a[1]]}}' "$raw" |
  sort -k1,1 -k3,3nr
echo "== most frequent D-state kernel stacks (innermost first)"
awk -F'\t' '$2 == "D" {print $1 " | " $3}' "$raw" | sort | uniq -c | sort -rn | head -n "$top"
exit $rc
