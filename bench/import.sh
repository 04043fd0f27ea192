#!/usr/bin/env bash
# Import benchmark: writes a synthetic nginx log of LINES lines (default
# 10,000,000), counts it with `wc -l` for scale, then imports it with
# `stampede import` and prints the wall and CPU time, lines per second and
# the peak RSS (targets: >= 1,000,000 lines/s on one core, < 200 MB).
#
# Usage: bench/import.sh            (from anywhere in the repository)
# Env:   LINES=10000000 to change the size.
set -euo pipefail

cd "$(dirname "$0")/.."
LINES=${LINES:-10000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

go build -o "$work/stampede" ./cmd/stampede
go build -o "$work/genlog" ./bench/genlog
"$work/genlog" -n "$LINES" -o "$work/access.log"
format="log_format synth '\$host \$remote_addr - - [\$time_local] \"\$request\" \$status \$body_bytes_sent \$msec \$request_time \$upstream_response_time \"\$http_referer\" \"\$http_user_agent\"';"
size=$(stat -c %s "$work/access.log")
echo "log: $LINES lines, $((size >> 20)) MiB"

t0=$(date +%s.%N)
wc -l "$work/access.log" >/dev/null
t1=$(date +%s.%N)
echo "wc -l: $(echo "$t1 - $t0" | bc) s"

GOMAXPROCS=1 /usr/bin/time -f '%e s wall, %U s user, %S s sys, %M KB max RSS' \
  "$work/stampede" import "$work/access.log" --log-format "$format" --workers 8 --no-progress -o "$work/bench.yaml" >/dev/null 2>"$work/time"
cat "$work/time"
read -r wall _ _ user _ _ sys _ _ rss _ < "$work/time"
echo "import: $(echo "$LINES / $wall" | bc) lines/s wall, $(echo "$LINES / ($user + $sys)" | bc) lines/s of CPU, peak RSS $((rss >> 10)) MiB (one core: GOMAXPROCS=1)"
