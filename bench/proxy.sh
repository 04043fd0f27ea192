#!/usr/bin/env bash
# bench/proxy.sh: throughput and tail latency of `stampede proxy` against
# nginx with the same limit_conn, both in front of the same fast upstream
# (nginx answering `return 200`), measured with wrk over loopback.
#
#   bench/proxy.sh                 # 3 rounds of 10 s per proxy, 2 threads, 64 connections
#   ROUNDS=5 DURATION=30s CONNS=128 bench/proxy.sh
#
# Caddy and HAProxy (Debian packages, skipped with a note when missing) stand
# in front of the same upstream in the same rounds, each configured as
# nginx's default proxy_pass is: a new upstream connection per request (Caddy
# `keepalive off`, HAProxy `http-reuse never` with `option
# http-server-close`), no limit (neither has limit_conn).
#
# Beside them it measures bench/floorproxy, the least a Go proxy can do
# per request, served by net/http ("go floor, net/http") and by a bare loop
# without net/http's server ("go floor, raw"): what the platform costs
# before stampede adds anything. The proxies take turns, a round at a time,
# so that a slow spell of the machine falls on all of them; the medians of
# the rounds are printed: requests/s, p99, and each one's ratio to nginx.
# Everything it starts is stopped when it exits.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
NGINX=${NGINX:-/usr/sbin/nginx}
UPSTREAM_PORT=${UPSTREAM_PORT:-18480}
STAMPEDE_PORT=${STAMPEDE_PORT:-18481}
NGINX_PORT=${NGINX_PORT:-18482}
FLOOR_PORT=${FLOOR_PORT:-18483}
RAW_PORT=${RAW_PORT:-18484}
CADDY_PORT=${CADDY_PORT:-18485}
HAPROXY_PORT=${HAPROXY_PORT:-18486}
CADDY=${CADDY:-/usr/bin/caddy}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
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

for port in "$UPSTREAM_PORT" "$STAMPEDE_PORT" "$NGINX_PORT" "$FLOOR_PORT" "$RAW_PORT" "$CADDY_PORT" "$HAPROXY_PORT"; do
  if port_open "$port"; then
    echo "bench/proxy.sh: 127.0.0.1:$port is already in use (set UPSTREAM_PORT, STAMPEDE_PORT, NGINX_PORT, FLOOR_PORT, RAW_PORT, CADDY_PORT, HAPROXY_PORT)" >&2
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
go build -o "$work/floorproxy" ./bench/floorproxy

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

"$work/floorproxy" -listen "127.0.0.1:$FLOOR_PORT" -upstream "127.0.0.1:$UPSTREAM_PORT" -server nethttp &
pids+=($!)
"$work/floorproxy" -listen "127.0.0.1:$RAW_PORT" -upstream "127.0.0.1:$UPSTREAM_PORT" -server raw &
pids+=($!)

names=("stampede proxy" "nginx" "go floor, net/http" "go floor, raw")
ports=("$STAMPEDE_PORT" "$NGINX_PORT" "$FLOOR_PORT" "$RAW_PORT")

if [ -x "$CADDY" ]; then
  mkdir -p "$work/caddy"
  cat >"$work/caddy/Caddyfile" <<CONF
{
	admin off
	auto_https off
	log default {
		output discard
	}
}
http://127.0.0.1:$CADDY_PORT {
	reverse_proxy 127.0.0.1:$UPSTREAM_PORT {
		transport http {
			keepalive off
		}
	}
}
CONF
  XDG_DATA_HOME="$work/caddy" XDG_CONFIG_HOME="$work/caddy" HOME="$work/caddy" \
    "$CADDY" run --adapter caddyfile --config "$work/caddy/Caddyfile" 2>"$work/caddy.log" &
  pids+=($!)
  names+=("caddy"); ports+=("$CADDY_PORT")
else
  echo "bench/proxy.sh: caddy is not at $CADDY (apt-get install caddy); left out" >&2
fi
if [ -x "$HAPROXY" ]; then
  cat >"$work/haproxy.cfg" <<CONF
global
    maxconn 8192
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    option http-server-close
    http-reuse never
frontend f
    bind 127.0.0.1:$HAPROXY_PORT
    default_backend b
backend b
    server u 127.0.0.1:$UPSTREAM_PORT
CONF
  "$HAPROXY" -db -f "$work/haproxy.cfg" 2>"$work/haproxy.log" &
  pids+=($!)
  names+=("haproxy"); ports+=("$HAPROXY_PORT")
else
  echo "bench/proxy.sh: haproxy is not at $HAPROXY (apt-get install haproxy); left out" >&2
fi

for port in "${ports[@]}" "$UPSTREAM_PORT"; do
  wait_port "$port"
done

# ms VALUE: wrk's latency ("812.00us", "10.29ms", "1.02s") in milliseconds.
ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /m$/) n *= 60000; else if (v ~ /s$/) n *= 1000
    printf "%.2f", n
  }'
}

# run I: one measured wrk run of proxy I; appends "rps p99ms non2xx" to $work/rounds.I.
run() {
  set -- "${names[$1]}" "${ports[$1]}" "$1"
  local out rps p99 bad
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "http://127.0.0.1:$2/")
  echo "--- $1" >&2
  echo "$out" >&2
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p99=$(ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' <<<"$out")
  echo "$rps $p99 ${bad:-0}" >>"$work/rounds.$3"
}

for i in "${!ports[@]}"; do
  wrk -t"$THREADS" -c"$CONNS" -d2s "http://127.0.0.1:${ports[$i]}/" >/dev/null # warm-up
done
for round in $(seq "$ROUNDS"); do
  echo "round $round of $ROUNDS..." >&2
  for i in "${!ports[@]}"; do
    run "$i"
  done
done

# median COLUMN FILE
median() { awk -v c="$1" '{print $c}' "$2" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo
printf 'wrk -t%s -c%s -d%s, %s rounds, limit_conn %s, upstream nginx return 200, %s CPUs\n' \
  "$THREADS" "$CONNS" "$DURATION" "$ROUNDS" "$LIMIT" "$(nproc)"
n_rps=$(median 1 "$work/rounds.1")
printf '%-20s %12s %10s %10s %10s   %s\n' "median of rounds" "requests/s" "p99 ms" "non-2xx" "/ nginx" "requests/s of each round"
for i in "${!ports[@]}"; do
  f="$work/rounds.$i"
  rps=$(median 1 "$f")
  printf '%-20s %12s %10s %10s %10s   %s\n' "${names[$i]}" "$rps" "$(median 2 "$f")" \
    "$(awk '{s += $3} END {print s}' "$f")" "$(awk -v s="$rps" -v n="$n_rps" 'BEGIN {printf "%.2f", s / n}')" \
    "$(awk '{printf "%s ", $1}' "$f")"
done
awk -v s="$(median 1 "$work/rounds.0")" -v n="$n_rps" -v f="$(median 1 "$work/rounds.2")" \
  'BEGIN { printf "ratio stampede/nginx: %.2f (target >= 0.80); stampede/go floor (net/http): %.2f\n", s / n, s / f }'
for i in "${!names[@]}"; do
  case "${names[$i]}" in
  caddy | haproxy)
    awk -v s="$(median 1 "$work/rounds.0")" -v o="$(median 1 "$work/rounds.$i")" -v name="${names[$i]}" \
      'BEGIN { printf "ratio stampede/%s: %.2f\n", name, s / o }'
    ;;
  esac
done
