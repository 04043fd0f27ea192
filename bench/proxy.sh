#!/usr/bin/env bash
# bench/proxy.sh: throughput and tail latency of `stampede proxy` against
# nginx with the same limit_conn, both in front of the same fast upstream
# (nginx answering `return 200`), measured with wrk over loopback.
#
#   bench/proxy.sh                 # 10 s per proxy, 2 threads, 64 connections
#   DURATION=30s CONNS=128 bench/proxy.sh
#
# Prints requests/s of each, their ratio (stampede / nginx) and both p99s.
# Everything it starts is stopped when it exits.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
NGINX=${NGINX:-/usr/sbin/nginx}
UPSTREAM_PORT=${UPSTREAM_PORT:-18480}
STAMPEDE_PORT=${STAMPEDE_PORT:-18481}
NGINX_PORT=${NGINX_PORT:-18482}
LIMIT='$host=1000'

command -v wrk >/dev/null || { echo "bench/proxy.sh: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
[ -x "$NGINX" ] || { echo "bench/proxy.sh: nginx is not at $NGINX (apt-get install nginx)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

for port in "$UPSTREAM_PORT" "$STAMPEDE_PORT" "$NGINX_PORT"; do
  if port_open "$port"; then
    echo "bench/proxy.sh: 127.0.0.1:$port is already in use (set UPSTREAM_PORT, STAMPEDE_PORT, NGINX_PORT)" >&2
    exit 1
  fi
done

wait_port() {
  for _ in $(seq 200); do
    port_open "$1" && return 0
    sleep 0.05
  done
  echo "bench/proxy.sh: nothing listens on 127.0.0.1:$1 after 10s" >&2
  exit 1
}

echo "building stampede..." >&2
go build -o "$work/stampede" ./cmd/stampede

# The upstream: one nginx worker answering 200 at once.
mkdir -p "$work/upstream"
cat >"$work/upstream/nginx.conf" <<CONF
worker_processes 1;
pid nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    server {
        listen 127.0.0.1:$UPSTREAM_PORT;
        location / { return 200 "ok\n"; }
    }
}
CONF
"$NGINX" -p "$work/upstream" -c "$work/upstream/nginx.conf" -e stderr -g 'daemon off;' &
pids+=($!)

# stampede proxy, and nginx with the configuration stampede says is equivalent.
"$work/stampede" proxy --listen "127.0.0.1:$STAMPEDE_PORT" --upstream "http://127.0.0.1:$UPSTREAM_PORT" \
  --limit-conn "$LIMIT" 2>"$work/stampede.log" &
pids+=($!)
mkdir -p "$work/nginx"
"$work/stampede" proxy --listen "127.0.0.1:$NGINX_PORT" --upstream "http://127.0.0.1:$UPSTREAM_PORT" \
  --limit-conn "$LIMIT" --print-nginx >"$work/nginx/nginx.conf"
"$NGINX" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e stderr -g 'daemon off;' &
pids+=($!)

wait_port "$UPSTREAM_PORT"
wait_port "$STAMPEDE_PORT"
wait_port "$NGINX_PORT"

# run NAME PORT: one warm-up and one measured wrk run; prints "rps p99 non2xx".
run() {
  wrk -t"$THREADS" -c"$CONNS" -d2s "http://127.0.0.1:$2/" >/dev/null
  local out
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "http://127.0.0.1:$2/")
  echo "--- $1" >&2
  echo "$out" >&2
  local rps p99 bad
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' <<<"$out")
  echo "$rps $p99 ${bad:-0}"
}

read -r s_rps s_p99 s_bad < <(run "stampede proxy" "$STAMPEDE_PORT")
read -r n_rps n_p99 n_bad < <(run "nginx" "$NGINX_PORT")

echo
printf 'wrk -t%s -c%s -d%s, limit_conn %s, upstream nginx return 200, %s CPUs\n' \
  "$THREADS" "$CONNS" "$DURATION" "$LIMIT" "$(nproc)"
printf '%-16s %12s %10s %10s\n' "" "requests/s" "p99" "non-2xx"
printf '%-16s %12s %10s %10s\n' "stampede proxy" "$s_rps" "$s_p99" "$s_bad"
printf '%-16s %12s %10s %10s\n' "nginx" "$n_rps" "$n_p99" "$n_bad"
awk -v s="$s_rps" -v n="$n_rps" 'BEGIN { printf "ratio stampede/nginx: %.2f (target >= 0.80)\n", s / n }'
