#!/usr/bin/env bash
# Load generator benchmark: drives one fast nginx `return 200` endpoint on
# loopback with stampede (closed model, 64 users, no think time), vegeta,
# hey and wrk, 10 s each, and prints each one's requests/s and stampede's
# ratio to the others (the target is stampede >= vegeta). Then plays
# 1,000,000 requests with stampede and prints its peak RSS (target < 150 MB).
#
# Usage: bench/loadgen.sh            (from anywhere in the repository)
# Env:   DURATION=10s USERS=64 TOTAL=1000000 to change the sizes.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
USERS=${USERS:-64}
TOTAL=${TOTAL:-1000000}
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
need hey "apt-get install hey"
need wrk "apt-get install wrk"
need python3 "apt-get install python3"
if [ ! -x /usr/bin/time ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends time >/dev/null
fi

# A free loopback port for nginx.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
target="http://127.0.0.1:$port"

mkdir -p "$work/nginx/logs"
cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 4096; }
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
    listen 127.0.0.1:$port;
    location / { return 200 "ok\n"; }
  }
}
EOF
"$NGINX" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/logs/error.log" &
nginx_pid=$!
for _ in $(seq 50); do
  curl -fsS -o /dev/null "$target/" 2>/dev/null && break
  python3 -c 'import time; time.sleep(0.1)'
done
curl -fsS -o /dev/null "$target/" || { echo "loadgen.sh: nginx did not come up" >&2; cat "$work/nginx/logs/error.log" >&2; exit 1; }

echo "building stampede" >&2
go build -o "$work/stampede" ./cmd/stampede

# vegeta from the Go module proxy into a private GOBIN when it is missing.
vegeta=$(command -v vegeta || true)
if [ -z "$vegeta" ]; then
  echo "installing vegeta v12.13.0" >&2
  GOBIN="$work/bin" go install github.com/tsenart/vegeta/v12@v12.13.0
  vegeta="$work/bin/vegeta"
fi

# scenario writes a closed-model scenario: USERS users with no think time,
# each doing $2 iterations (0: until the duration $1 ends).
scenario() {
  cat <<EOF
# Benchmark: ${USERS} closed-model users with no think time against --target.
name: loadgen-bench
duration: $1
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
    load: {model: closed, users: ${USERS}, think: 0s, iterations: $2, routes: {hello: 1}}
EOF
}

# rps reads results.json: requests per second of wall time.
rps() {
  python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("%.0f" % (r["totals"]["requests"] / r["wall_duration_s"]))
EOF
}

secs=${DURATION%s}

echo "== stampede: $USERS closed users, no think time, $DURATION" >&2
scenario "$DURATION" 0 >"$work/bench.yaml"
"$work/stampede" run "$work/bench.yaml" --target "$target/" --no-progress -o "$work/out-rate" >"$work/stampede.log" 2>&1 || {
  cat "$work/stampede.log" >&2; exit 1; }
stampede_rps=$(rps "$work/out-rate/results.json")

echo "== vegeta: -rate=0 -max-workers=$USERS -duration=$DURATION" >&2
echo "GET $target/" | "$vegeta" attack -rate=0 -max-workers="$USERS" -duration="$DURATION" >"$work/vegeta.bin"
vegeta_rps=$("$vegeta" report -type=json <"$work/vegeta.bin" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.0f" % r["rate"])')

echo "== hey: -c $USERS -z $DURATION" >&2
hey_rps=$(hey -c "$USERS" -z "$DURATION" "$target/" | awk '/Requests\/sec:/ {printf "%.0f", $2}')

echo "== wrk: -t2 -c$USERS -d$DURATION" >&2
wrk_rps=$(wrk -t2 -c"$USERS" -d"$DURATION" "$target/" | awk '/Requests\/sec:/ {printf "%.0f", $2}')

ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
echo
printf '%-10s %10s\n' tool 'requests/s'
printf '%-10s %10s\n' stampede "$stampede_rps" vegeta "$vegeta_rps" hey "$hey_rps" wrk "$wrk_rps"
echo
echo "stampede/vegeta $(ratio "$stampede_rps" "$vegeta_rps")   (target >= 1)"
echo "stampede/hey    $(ratio "$stampede_rps" "$hey_rps")"
echo "stampede/wrk    $(ratio "$stampede_rps" "$wrk_rps")"

echo >&2
echo "== stampede: $TOTAL requests, peak RSS" >&2
per_user=$(( (TOTAL + USERS - 1) / USERS ))
scenario 1h "$per_user" >"$work/million.yaml"
/usr/bin/time -v "$work/stampede" run "$work/million.yaml" --target "$target/" --no-progress -o "$work/out-million" \
  >"$work/million.log" 2>"$work/million.time" || { cat "$work/million.log" "$work/million.time" >&2; exit 1; }
rss_kb=$(awk -F': *' '/Maximum resident set size/ {print $2}' "$work/million.time")
million_requests=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["requests"])' "$work/out-million/results.json")
million_rps=$(rps "$work/out-million/results.json")
echo
echo "stampede $million_requests requests at $million_rps requests/s: peak RSS $(( rss_kb / 1024 )) MB (target < 150 MB)"
