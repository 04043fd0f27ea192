#!/usr/bin/env bash
# Import benchmark: writes a synthetic nginx log of LINES lines (default
# 10,000,000), counts it with `wc -l` for scale, then imports it with
# `stampede import` on one core (GOMAXPROCS=1) and prints the wall and CPU
# time, lines per second of CPU and the peak RSS (targets: >= 1,000,000
# lines/s on one core, < 200 MB).
#
# Usage: bench/import.sh            (from anywhere in the repository)
# Env:   LINES=10000000   the size of the synthetic log
#        LOG=FILE         import FILE instead (written there first if it
#                         does not exist, and kept)
#        BEFORE=REV       also import with the stampede of git revision REV,
#                         on the same file, for a before/after
#        RUNS=1           imports per binary (the figures of each are printed)
#        TIME=/usr/bin/time  GNU time, for CPU and peak RSS; without it (or
#                         with TIME=none) the shell's times and /proc are read
set -euo pipefail

cd "$(dirname "$0")/.."
LINES=${LINES:-10000000}
RUNS=${RUNS:-1}
TIME=${TIME:-/usr/bin/time}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

go build -o "$work/stampede" ./cmd/stampede
if [[ -n "${BEFORE:-}" ]]; then
  mkdir "$work/before"
  git archive "$BEFORE" | tar -x -C "$work/before"
  (cd "$work/before" && go build -o "$work/stampede-before" ./cmd/stampede)
fi
log=${LOG:-$work/access.log}
if [[ ! -e "$log" ]]; then
  go build -o "$work/genlog" ./bench/genlog
  "$work/genlog" -n "$LINES" -o "$log"
fi
format="log_format synth '\$host \$remote_addr - - [\$time_local] \"\$request\" \$status \$body_bytes_sent \$msec \$request_time \$upstream_response_time \"\$http_referer\" \"\$http_user_agent\"';"
size=$(stat -c %s "$log")

t0=$(date +%s.%N)
lines=$(wc -l <"$log")
t1=$(date +%s.%N)
wcwall=$(echo "$t1 - $t0" | bc)
echo "log: $lines lines, $((size >> 20)) MiB; wc -l: $wcwall s wall"

# measure BIN: prints "wall user sys rssKB" of one import on one core.
measure() {
  local bin=$1 out=$work/out
  mkdir -p "$out"
  if [[ -x "$TIME" ]]; then
    GOMAXPROCS=1 "$TIME" -v "$bin" import "$log" --log-format "$format" --workers 8 --no-progress -o "$out/bench.yaml" >/dev/null 2>"$work/time"
    awk -F': ' '
      /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
      /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident set size/ { r = $2 }
      END { print w, u, s, r }' "$work/time"
  else
    # No GNU time: the shell's times for CPU, /proc's high-water mark for RSS.
    local t0 t1 pid hwm=0 k h
    t0=$(date +%s.%N)
    GOMAXPROCS=1 "$bin" import "$log" --log-format "$format" --workers 8 --no-progress -o "$out/bench.yaml" >/dev/null &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
      # read, not awk: the shell's times count its children's CPU.
      while read -r k h _; do
        [[ $k == VmHWM: && $h -gt $hwm ]] && hwm=$h
      done <"/proc/$pid/status" 2>/dev/null || true
      sleep 0.05
    done
    wait "$pid"
    t1=$(date +%s.%N)
    times >"$work/times" # in this shell: a pipe would run it in another
    read -r cu cs < <(tail -1 "$work/times" | tr 'ms' '  ' | awk '{ print $1 * 60 + $2, $3 * 60 + $4 }')
    echo "$(echo "$t1 - $t0" | bc) $cu $cs $hwm"
  fi
}

report() {
  local name=$1 bin=$2 wall user sys rss cpu
  for _ in $(seq "$RUNS"); do
    read -r wall user sys rss < <(measure "$bin")
    cpu=$(echo "$user + $sys" | bc)
    printf '%s: %.0f lines/s of CPU (%s s user + %s s sys), %.2f s wall (%.1f× wc -l), peak RSS %d MiB (one core: GOMAXPROCS=1)\n' \
      "$name" "$(echo "$lines / $cpu" | bc -l)" "$user" "$sys" "$wall" "$(echo "$wall / $wcwall" | bc -l)" $((rss >> 10))
  done
}

[[ -n "${BEFORE:-}" ]] && report "before ($BEFORE)" "$work/stampede-before"
report "import" "$work/stampede"
