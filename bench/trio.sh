#!/usr/bin/env bash
# bench/trio.sh: the CPU time one request costs the live engine's built-in
# trio (generator -> limiting proxy -> fake backend, in one process), before
# and after, in alternating rounds.
#
#   bench/trio.sh                          # BEFORE=5c733c5, 3 rounds at 500 requests/s
#   BEFORE=<ref> ROUNDS=5 RATE=2000 bench/trio.sh
#
# "before" is `stampede run` built from BEFORE, by default 5c733c5: the tree
# from before the in-memory transport and the lean HTTP/1.1 server and client,
# whose trio ran over loopback TCP through net/http's server and
# http.Transport. "after" is the working tree's, once over its default
# in-memory transport and once with --transport tcp.
#
# Each plays the same open load (50 sites, Poisson arrivals at RATE requests
# per second of wall time in all, time_scale 1, a route that does no work)
# twice per round: for SHORT and for LONG. The CPU time of a run (user +
# system, of the whole process) over its requests would charge start-up and
# the report to the requests; the difference between the two runs cancels
# them, so a variant's cost per request is
#   (cpu(LONG) - cpu(SHORT)) / (requests(LONG) - requests(SHORT)).
# The variants take turns within a round, so that a slow spell of the
# machine falls on all of them. It prints per variant the median (min-max)
# over the rounds, and the ratio of each "after" to "before", taken within
# each round.
set -euo pipefail
cd "$(dirname "$0")/.."

BEFORE=${BEFORE:-5c733c5}
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-500}
SHORT=${SHORT:-4s}
LONG=${LONG:-14s}

for c in python3 /usr/bin/time git; do
  command -v "$c" >/dev/null || { echo "bench/trio.sh: $c is not installed" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

echo "building stampede at $BEFORE and from the working tree..." >&2
mkdir -p "$work/before-src"
git archive "$BEFORE" | tar -x -C "$work/before-src"
(cd "$work/before-src" && go build -o "$work/before" ./cmd/stampede)
go build -o "$work/after" ./cmd/stampede

# scenario DURATION: the trio's load, written to $work/trio-DURATION.yaml.
scenario() {
  cat >"$work/trio-$1.yaml" <<YAML
name: trio
duration: $1
time_scale: 1
seed: 1
backend:
  workers: 64
  routes:
    - {name: page, path: /app, service: "constant:0s"}
tenants:
  - group: sites
    count: 50
    host: site{i}.example.com
    load: {model: open, arrivals: poisson, rate: $(python3 -c "print($RATE / 50)")/s, routes: {page: 1}, client_timeout: 10s}
YAML
}
scenario "$SHORT"
scenario "$LONG"

# play BINARY DURATION ARGS...: prints "cpu_seconds requests" of one run.
play() {
  local bin=$1 d=$2 out="$work/out"
  shift 2
  rm -rf "$out"
  /usr/bin/time -f '%U %S' -o "$work/time" "$bin" run "$work/trio-$d.yaml" --no-progress -o "$out" "$@" >"$work/run.log" 2>&1 || {
    echo "bench/trio.sh: $bin run failed:" >&2
    cat "$work/run.log" >&2
    exit 1
  }
  python3 - "$work/time" "$out/results.json" <<'EOF'
import json, sys
u, s = open(sys.argv[1]).read().split()[-2:]
t = json.load(open(sys.argv[2]))["totals"]
if t["ok"] != t["requests"]:
    sys.exit("bench/trio.sh: %d of %d requests were not answered 200" % (t["requests"] - t["ok"], t["requests"]))
print(float(u) + float(s), t["requests"])
EOF
}

# cost BINARY ARGS...: prints the CPU microseconds per request of one round.
cost() {
  local bin=$1
  shift
  read -r c1 n1 < <(play "$bin" "$SHORT" "$@")
  read -r c2 n2 < <(play "$bin" "$LONG" "$@")
  python3 -c "print('%.1f' % (($c2 - $c1) / ($n2 - $n1) * 1e6))"
}

names=("before (tcp, net/http)" "after, memory" "after, tcp")
declare -a res=("" "" "")
declare -a ratio=("" "")
for r in $(seq "$ROUNDS"); do
  b=$(cost "$work/before")
  m=$(cost "$work/after" --transport memory)
  t=$(cost "$work/after" --transport tcp)
  echo "round $r ($(cut -d' ' -f1-3 /proc/loadavg) load): before $b, after memory $m, after tcp $t cpu-µs/req" >&2
  res[0]+=" $b"; res[1]+=" $m"; res[2]+=" $t"
  ratio[0]+=" $(python3 -c "print('%.3f' % ($m / $b))")"
  ratio[1]+=" $(python3 -c "print('%.3f' % ($t / $b))")"
done

med() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[2].split()]; d=int(sys.argv[1]); print("%.*f (%.*f-%.*f)" % (d, statistics.median(v), d, min(v), d, max(v)))' "$1" "$2"; }
echo "trio at $RATE requests/s, CPU µs per request, median (min-max) over $ROUNDS rounds:"
for i in 0 1 2; do
  printf '  %-24s %s\n' "${names[$i]}" "$(med 1 "${res[$i]}")"
done
printf '  %-24s %s\n' "after memory / before" "$(med 3 "${ratio[0]}")"
printf '  %-24s %s\n' "after tcp / before" "$(med 3 "${ratio[1]}")"
