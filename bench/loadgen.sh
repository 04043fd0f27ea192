#!/usr/bin/env bash
# Load generator benchmark, in alternating rounds against one nginx
# `return 200` endpoint on loopback:
#
#  1. closed model, USERS users without think time, DURATION each:
#     stampede (and BASELINE when given), wrk, bombardier, hey and vegeta
#     (those found or installable)
#     in turn, ROUNDS times; prints every round's requests/s and stampede's
#     ratio to each peer, median (min-max). Goals: >= 0.5x wrk, >= 1x
#     bombardier.
#  2. open model, constant arrivals at each rate of LADDER for STEP:
#     stampede (and BASELINE, another stampede binary, when given) and
#     vegeta in turn, ROUNDS times; prints the share of the arrivals each
#     sent, its dropped arrivals (vegeta's: those it did not send within
#     the step) and send lateness p99 (vegeta's: each hit's start against
#     the first's plus seq/rate), the CPU time it used (user+sys) and the
#     connections nginx accepted from it. Goals: 20k/s held with lateness p99 < 5 ms and 0
#     dropped, 40k/s with < 20 ms.
#
# bombardier and vegeta come from the Go module proxy into a private GOBIN
# when missing (bench-only peers, not dependencies); hey from Debian's
# package when apt-get can install it; a peer that cannot be had is left
# out and said so.
#
# Usage: bench/loadgen.sh            (from anywhere in the repository)
# Env:   ROUNDS=5 DURATION=5s USERS=64 LADDER="5000 10000 20000 40000" STEP=10s
#        MODES="closed open"  BASELINE=/path/to/stampede (e.g. built from main)
#        OPEN_PEER="" plays the open model without vegeta between the rounds
#        PORT (nginx's; default the first free one of PORTS="9200 9299", the
#        lowest and highest of a block out of the ephemeral range the
#        clients' own ports come from, apart from other benchmarks' on a
#        shared machine)
set -euo pipefail

cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
USERS=${USERS:-64}
LADDER=${LADDER:-5000 10000 20000 40000}
STEP=${STEP:-10s}
MODES=${MODES:-closed open}
OPEN_PEER=${OPEN_PEER-vegeta}
BASELINE=${BASELINE:-}
NGINX=${NGINX:-/usr/sbin/nginx}

work=$(mktemp -d)
nginx_pid=""
cleanup() {
  if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then
    kill -QUIT "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

need() { command -v "$1" >/dev/null 2>&1 || { echo "loadgen.sh: $1 not found ($2)" >&2; exit 1; }; }
[ -x "$NGINX" ] || { echo "loadgen.sh: nginx not found at $NGINX (apt-get install nginx)" >&2; exit 1; }
need go "install Go 1.26"
need wrk "apt-get install wrk"
need python3 "apt-get install python3"
need curl "apt-get install curl"

# Peers.
gopeer() { # name module@version
  local p
  p=$(command -v "$1" || true)
  if [ -z "$p" ]; then
    echo "installing $2" >&2
    GOBIN="$work/bin" go install "$2" >&2 && p="$work/bin/$1"
  fi
  echo "$p"
}
bombardier=$(gopeer bombardier github.com/codesenberg/bombardier@v1.2.6 || true)
vegeta=$(gopeer vegeta github.com/tsenart/vegeta/v12@v12.13.0 || true)
hey=$(command -v hey || true)
if [ -z "$hey" ] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hey >/dev/null 2>&1 || true
  hey=$(command -v hey || true)
fi
for p in bombardier vegeta hey; do
  [ -n "${!p}" ] || echo "loadgen.sh: $p not available; left out" >&2
done

PORTS=${PORTS:-9200 9299}
# shellcheck disable=SC2086 # PORTS is two numbers
port=${PORT:-$(python3 - $PORTS <<'EOF'
import socket, sys
lo, hi = int(sys.argv[1]), int(sys.argv[2])
for p in range(lo, hi + 1):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
    print(p)
    break
EOF
)}
[ -n "$port" ] || { echo "loadgen.sh: no free port in $PORTS (set PORT or PORTS)" >&2; exit 1; }
target="http://127.0.0.1:$port"
mkdir -p "$work/nginx/logs" "$work/nginx/tmp"
# keepalive_requests is set past any run's requests, for every client
# alike: at nginx's default, 1000, each connection is closed after its
# 1000th answer, 40 a second at 40k/s, which measures the clients' dials
# more than their sends (stampede dials the replacements in the
# background; net/http clients such as vegeta when a request finds no
# connection). keepalive_timeout is past a step's length.
cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 16384; }
worker_rlimit_nofile 40000;
http {
  access_log off;
  keepalive_requests 10000000;
  keepalive_timeout 75s;
  client_body_temp_path $work/nginx/tmp;
  proxy_temp_path $work/nginx/tmp;
  fastcgi_temp_path $work/nginx/tmp;
  uwsgi_temp_path $work/nginx/tmp;
  scgi_temp_path $work/nginx/tmp;
  server {
    listen 127.0.0.1:$port backlog=4096;
    location = /nginx_status { stub_status; }
    location / { return 200 "ok\n"; }
  }
}
EOF
"$NGINX" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/logs/error.log" &
nginx_pid=$!
for _ in $(seq 50); do
  curl -fsS -o /dev/null "$target/" 2>/dev/null && break
  sleep 0.1
done
curl -fsS -o /dev/null "$target/" || { echo "loadgen.sh: nginx did not come up" >&2; cat "$work/nginx/logs/error.log" >&2; exit 1; }
ulimit -n 40000 2>/dev/null || true

echo "building stampede" >&2
go build -o "$work/stampede" ./cmd/stampede

# bench_yaml NAME DURATION LOAD: a scenario of one tenant with load LOAD
# (the inside of a `load: {...}` mapping) on a route that does no work.
bench_yaml() {
  cat <<EOF
name: $1
duration: $2
time_scale: 1
seed: 1
backend:
  workers: 8
  routes:
    - {name: hello, path: /, service: "0s"}
tenants:
  - group: bench
    count: 1
    host: bench.example.com
    load: {$3, routes: {hello: 1}}
EOF
}
closed_yaml() { bench_yaml loadgen-closed "$DURATION" "model: closed, users: $USERS, think: 0s"; }
open_yaml() { bench_yaml loadgen-open "$STEP" "model: open, arrivals: constant, rate: $1/s, client_timeout: 2s"; }
closed_yaml >"$work/closed.yaml"

# stampede_run BINARY FILE: runs it against the target (exit 3 or 4 are
# verdicts, not failures), writes its CPU time (user+sys, s) to $work/cpu,
# and prints results.json's path.
stampede_run() {
  local out="$work/out-$RANDOM"
  /usr/bin/time -f '%U %S' -o "$work/time" "$1" run "$2" --target "$target/" --no-progress -o "$out" >"$work/stampede.log" 2>&1 || {
    rc=$?
    if [ "$rc" != 3 ] && [ "$rc" != 4 ]; then cat "$work/stampede.log" >&2; exit 1; fi
  }
  tail -1 "$work/time" | awk '{printf "%.2f", $1 + $2}' >"$work/cpu"
  echo "$out/results.json"
}

# accepts: the connections nginx has accepted so far.
accepts() { curl -fsS "$target/nginx_status" | awk 'NR == 3 {print $1}'; }

field() { # results.json python-expression
  python3 - "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
l = r.get("send_lateness_wall_ms") or {}
print(eval(sys.argv[2]))
EOF
}

# stats "a1 a2 ..." "b1 b2 ...": median (min-max) of the ratios a_i/b_i.
stats() {
  python3 - "$1" "$2" <<'EOF'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
r = [x / y for x, y in zip(a, b) if y > 0]
print("%.2f (%.2f-%.2f)" % (statistics.median(r), min(r), max(r)) if r else "n/a")
EOF
}
med() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1].split()]; print("%.0f (%.0f-%.0f)" % (statistics.median(v), min(v), max(v)))' "$1"; }

mm() { # "v1 v2 ..." DIGITS: median (min-max)
  python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1].split()]; d=int(sys.argv[2]); print("%.*f (%.*f-%.*f)" % (d, statistics.median(v), d, min(v), d, max(v)))' "$1" "$2"
}

if [[ " $MODES " == *" closed "* ]]; then
secs=${DURATION%s}
declare -A closed
tools="stampede wrk"
[ -n "$BASELINE" ] && tools="stampede baseline wrk"
[ -n "$bombardier" ] && tools="$tools bombardier"
[ -n "$hey" ] && tools="$tools hey"
[ -n "$vegeta" ] && tools="$tools vegeta"

echo "== closed model: $USERS users, no think time, $DURATION, $ROUNDS rounds" >&2
for r in $(seq "$ROUNDS"); do
  for tool in $tools; do
    case $tool in
    stampede | baseline)
      bin="$work/stampede"
      [ "$tool" = baseline ] && bin="$BASELINE"
      res=$(stampede_run "$bin" "$work/closed.yaml")
      v=$(field "$res" '"%.0f" % (t["requests"] / r["wall_duration_s"])') ;;
    wrk)
      v=$(wrk -t2 -c"$USERS" -d"$DURATION" "$target/" | awk '/Requests\/sec:/ {printf "%.0f", $2}') ;;
    bombardier)
      v=$("$bombardier" -c "$USERS" -d "$DURATION" -p r -o json "$target/" 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print("%.0f" % (sum(r[k] for k in ("req1xx","req2xx","req3xx","req4xx","req5xx","others")) / (r["timeTakenSeconds"])))') ;;
    hey)
      v=$("$hey" -c "$USERS" -z "$DURATION" "$target/" | awk '/Requests\/sec:/ {printf "%.0f", $2}') ;;
    vegeta)
      v=$(echo "GET $target/" | "$vegeta" attack -rate=0 -max-workers="$USERS" -duration="$DURATION" |
        "$vegeta" report -type=json | python3 -c 'import json,sys; print("%.0f" % json.load(sys.stdin)["rate"])') ;;
    esac
    closed[$tool]="${closed[$tool]:-} $v"
    printf 'round %s  %-10s %8s req/s\n' "$r" "$tool" "$v"
  done
done

echo
echo "closed model, $USERS users: requests/s median (min-max) over $ROUNDS rounds"
for tool in $tools; do printf '  %-10s %s\n' "$tool" "$(med "${closed[$tool]}")"; done
for tool in $tools; do
  [ "$tool" = stampede ] && continue
  goal=""
  [ "$tool" = baseline ] && goal="   (this build against BASELINE)"
  [ "$tool" = wrk ] && goal="   (goal >= 0.5)"
  [ "$tool" = bombardier ] && goal="   (goal >= 1)"
  printf '  stampede/%-10s %s%s\n' "$tool" "$(stats "${closed[stampede]}" "${closed[$tool]}")" "$goal"
done

fi

if [[ " $MODES " == *" open "* ]]; then
step=${STEP%s}
open_tools="stampede"
[ -n "$BASELINE" ] && open_tools="$open_tools baseline"
[ -n "$vegeta" ] && [ -n "$OPEN_PEER" ] && open_tools="$open_tools vegeta"
echo "== open model, constant arrivals, $STEP per rate, $ROUNDS rounds: $open_tools" >&2
declare -A sent late drop cpu conns
for rate in $LADDER; do
  open_yaml "$rate" >"$work/open-$rate.yaml"
  want=$(python3 -c "print($rate * $step)")
  for r in $(seq "$ROUNDS"); do
    for tool in $open_tools; do
      k="$tool,$rate"
      a0=$(accepts)
      case $tool in
      stampede | baseline)
        bin="$work/stampede"
        [ "$tool" = baseline ] && bin="$BASELINE"
        res=$(stampede_run "$bin" "$work/open-$rate.yaml")
        s=$(field "$res" '"%.1f" % (100.0 * (t["requests"] - t["dropped"]) / '"$want"')')
        p=$(field "$res" '"%.2f" % l.get("p99", float("nan"))')
        d=$(field "$res" 't["dropped"]')
        late[$k]="${late[$k]:-} $p"
        drop[$k]="${drop[$k]:-} $d"
        extra="dropped $d, send lateness p99 $p ms, " ;;
      vegeta)
        /usr/bin/time -f '%U %S' -o "$work/time" sh -c "echo 'GET $target/' | '$vegeta' attack -rate=$rate/s -duration=$STEP -timeout=2s >'$work/vegeta.bin'"
        tail -1 "$work/time" | awk '{printf "%.2f", $1 + $2}' >"$work/cpu"
        s=$("$vegeta" report -type=json <"$work/vegeta.bin" | python3 -c "import json,sys; r=json.load(sys.stdin); print('%.1f' % (100.0 * r['requests'] / $want))")
        # vegeta's lateness: each hit's start against its intended time,
        # the first hit's plus seq/rate; arrivals it never sent in the
        # step count as dropped.
        read -r d p < <("$vegeta" encode -to csv <"$work/vegeta.bin" | python3 -c "
import csv, sys
rows = [(int(r[8]), int(r[0])) for r in csv.reader(sys.stdin)]
t0 = min(rows)[1]
late = sorted(ts - (t0 + seq * 1e9 / $rate) for seq, ts in rows)
p99 = late[min(len(late) - 1, int(0.99 * len(late)))] / 1e6 if late else float('nan')
print(max($want - len(rows), 0), '%.2f' % p99)")
        late[$k]="${late[$k]:-} $p"
        drop[$k]="${drop[$k]:-} $d"
        extra="dropped $d (not sent in the step), send lateness p99 $p ms, " ;;
      esac
      c=$(cat "$work/cpu")
      n=$(($(accepts) - a0 - 1)) # less the status request's own
      sent[$k]="${sent[$k]:-} $s"
      cpu[$k]="${cpu[$k]:-} $c"
      conns[$k]="${conns[$k]:-} $n"
      printf 'round %s  %6s/s  %-9s sent %s%%, %sCPU %s s, %s connections\n' "$r" "$rate" "$tool" "$s" "$extra" "$c" "$n"
    done
  done
done
echo
echo "open model: median (min-max) over $ROUNDS rounds"
for rate in $LADDER; do
  for tool in $open_tools; do
    k="$tool,$rate"
    printf '  %6s/s  %-9s sent %s%%' "$rate" "$tool" "$(mm "${sent[$k]}" 1)"
    printf ', dropped %s, lateness p99 %s ms' "$(mm "${drop[$k]}" 0)" "$(mm "${late[$k]}" 2)"
    printf ', CPU %s s, connections %s\n' "$(mm "${cpu[$k]}" 2)" "$(mm "${conns[$k]}" 0)"
  done
done
echo "  goals: 20000/s with lateness p99 < 5 ms and 0 dropped; 40000/s with < 20 ms"
fi
