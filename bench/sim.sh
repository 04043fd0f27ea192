#!/usr/bin/env bash
# bench/sim.sh: how the simulator's speed and memory scale with the fleet,
# from sim's BenchmarkSimScale (the 10-minute stock-balance scenario with
# its other sites grown to 250 ... 250,000 tenants on its 8 workers, into a
# counter, "count", and into a report.Recorder, "recorder") and
# BenchmarkSimScaleWorkers (2,500 ... 100,000 tenants with the workers
# grown with them, 8 per 250, "workers/count" and "workers/recorder").
#
# The test binary is built once and run ROUNDS times, every size in every
# round, so that a slow spell of the machine falls on all sizes. It prints
# per size the median (min-max) over the rounds of simulated requests per
# wall second and per CPU second, events per request and per CPU second,
# and the heap a tenant holds; then per series the spread, the largest
# median of req/cpu-s over the smallest, against the goal of 1.5x. The
# events per request say which regime a size is in (see BenchmarkSimScale):
# where they differ, so does the work a request is, and events/cpu-s is
# the cost that must stay flat.
#
# Usage: bench/sim.sh          (from anywhere in the repository)
# Env:   ROUNDS=3 BENCHTIME=2x
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
case $ROUNDS in
'' | *[!0-9]* | 0) echo "bench/sim.sh: ROUNDS=$ROUNDS is not a positive whole number" >&2; exit 2 ;;
esac
BENCHTIME=${BENCHTIME:-2x}
command -v python3 >/dev/null || { echo "bench/sim.sh: python3 is not installed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

echo "building sim's test binary..." >&2
go test -c -o "$work/sim.test" ./sim/
for r in $(seq "$ROUNDS"); do
  echo "round $r of $ROUNDS ($(cut -d' ' -f1-3 /proc/loadavg) load)..." >&2
  (cd sim && "$work/sim.test" -test.run '^$' -test.bench '^BenchmarkSimScale(Workers)?$' \
    -test.benchtime "$BENCHTIME") >>"$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
done

python3 - "$work/out" <<'PY'
import collections, re, statistics, sys

runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"BenchmarkSimScale(Workers)?/(?:(\w+)/)?tenants=(\d+)(?:-\d+)?\s+\d+\s+(.*)", line)
    if not m:
        continue
    series = ("workers/" if m.group(1) else "") + m.group(2)
    fields = m.group(4).split()
    metrics = {fields[i + 1]: float(fields[i]) for i in range(0, len(fields) - 1, 2)}
    runs[(series, int(m.group(3)))].append(metrics)
if not runs:
    sys.exit("bench/sim.sh: no benchmark lines in the output")

def mm(v, fmt):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(v), min(v), max(v))

print("simulator scaling: median (min-max) over the rounds")
print("%-16s %8s %-26s %-26s %-10s %-26s %s" % ("series", "tenants", "req/s", "req/cpu-s", "events/req", "events/cpu-s", "B/tenant"))
med = collections.defaultdict(dict)
for (series, n) in sorted(runs, key=lambda k: (["count", "recorder", "workers/count", "workers/recorder"].index(k[0]), k[1])):
    rs = runs[(series, n)]
    col = lambda k: [r[k] for r in rs]
    med[series][n] = (statistics.median(col("req/cpu-s")), statistics.median(col("events/cpu-s")))
    print("%-16s %8d %-26s %-26s %-10.2f %-26s %.0f" % (series, n, mm(col("req/s"), "%.0f"), mm(col("req/cpu-s"), "%.0f"),
          statistics.median(col("events/req")), mm(col("events/cpu-s"), "%.0f"), statistics.median(col("B/tenant"))))
print()
print("spread, the largest median over the smallest (goal: req/cpu-s within 1.5x)")
for series, by in med.items():
    req = [v[0] for v in by.values()]
    ev = [v[1] for v in by.values()]
    print("  %-16s req/cpu-s %.2fx   events/cpu-s %.2fx" % (series, max(req) / min(req), max(ev) / min(ev)))
PY
