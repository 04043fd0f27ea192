#!/usr/bin/env bash
# bench/compare.sh: how long `stampede compare --engine sim` takes over the
# stock-balance scenario, in alternating rounds:
#
#  - "5 points":  --sweep proxy.limit_conn.per_key=off,2,4,6,8
#  - "4x5 grid":  the same and --sweep backend.workers=4,8,12,16
#
# Each round runs the working tree's build (and BASELINE, another stampede
# binary, when given) on both sweeps, one after the other, so that a slow
# spell of the machine falls on every variant. It prints per sweep and
# build the wall and CPU (user + system) seconds, median (min-max) over
# the rounds, and with BASELINE the ratio of this build's wall time to the
# baseline's, taken within each round. Goals: 5 points < 0.5 s, the grid
# < 1.5 s (wall).
#
# Usage: bench/compare.sh                       (from anywhere in the repository)
# Env:   ROUNDS=5  BASELINE=/path/to/stampede (e.g. built from main)
#        SCENARIO=scenarios/stock-balance.yaml
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
case $ROUNDS in
'' | *[!0-9]* | 0) echo "bench/compare.sh: ROUNDS=$ROUNDS is not a positive whole number" >&2; exit 2 ;;
esac
BASELINE=${BASELINE:-}
SCENARIO=${SCENARIO:-scenarios/stock-balance.yaml}

for c in python3 /usr/bin/time go; do
  command -v "$c" >/dev/null || { echo "bench/compare.sh: $c is not installed" >&2; exit 1; }
done
if [ -n "$BASELINE" ] && [ ! -x "$BASELINE" ]; then
  echo "bench/compare.sh: BASELINE $BASELINE is not an executable" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

echo "building stampede from the working tree..." >&2
go build -o "$work/stampede" ./cmd/stampede

points="--sweep proxy.limit_conn.per_key=off,2,4,6,8"
grid="$points --sweep backend.workers=4,8,12,16"

# play BINARY SWEEPS...: prints "wall cpu" seconds of one compare. compare
# exits 3 when no point passes every SLO; any other exit but 0 is a failure.
play() {
  local bin=$1 rc=0
  shift
  rm -rf "$work/out"
  /usr/bin/time -f '%e %U %S' -o "$work/time" "$bin" compare "$SCENARIO" --engine sim "$@" \
    -o "$work/out" --no-progress >"$work/log" 2>&1 || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
    echo "bench/compare.sh: $bin compare exited $rc:" >&2
    cat "$work/log" >&2
    exit 1
  fi
  awk 'END {printf "%.2f %.2f\n", $1, $2 + $3}' "$work/time"
}

variants="stampede"
[ -n "$BASELINE" ] && variants="stampede baseline"
declare -A wall cpu
for r in $(seq "$ROUNDS"); do
  for v in $variants; do
    bin="$work/stampede"
    [ "$v" = baseline ] && bin="$BASELINE"
    for s in points grid; do
      # shellcheck disable=SC2086 # the sweeps are words
      read -r w c < <(play "$bin" ${!s})
      wall[$v.$s]="${wall[$v.$s]:-} $w"
      cpu[$v.$s]="${cpu[$v.$s]:-} $c"
      printf 'round %s  %-9s %-6s %5s s wall %5s s CPU\n' "$r" "$v" "$s" "$w" "$c" >&2
    done
  done
done

mm() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1].split()]; print("%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v)))' "$1"; }
ratio() {
  python3 - "$1" "$2" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
r = [x / y for x, y in zip(a, b) if y > 0]
print("%.2f (%.2f-%.2f)" % (statistics.median(r), min(r), max(r)) if r else "n/a")
PY
}

echo "compare --engine sim of $SCENARIO: seconds, median (min-max) over $ROUNDS rounds"
for s in points grid; do
  goal="< 0.5 s"
  [ "$s" = grid ] && goal="< 1.5 s"
  for v in $variants; do
    printf '  %-9s %-6s wall %s   CPU %s   (goal %s wall)\n' "$v" "$s" "$(mm "${wall[$v.$s]}")" "$(mm "${cpu[$v.$s]}")" "$goal"
  done
  if [ -n "$BASELINE" ]; then
    printf '  stampede/baseline %-6s wall %s\n' "$s" "$(ratio "${wall[stampede.$s]}" "${wall[baseline.$s]}")"
  fi
done
