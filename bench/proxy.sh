#!/usr/bin/env bash
# bench/proxy.sh: throughput, tail latency and CPU per request of
# `stampede proxy` against nginx with the same limit_conn, both in front of
# the same fast upstream (nginx answering `return 200`), measured with wrk
# over loopback, each without and with upstream keep-alive.
#
#   bench/proxy.sh                 # 3 rounds of 10 s per proxy, 2 threads, 64 connections
#   ROUNDS=5 DURATION=30s CONNS=128 KEEPALIVE=32 bench/proxy.sh
#   MODES=ka BASELINE=/path/to/stampede bench/proxy.sh   # keep-alive only, beside another build
#
# Without keep-alive ("off") every proxy opens an upstream connection per
# request, nginx's default proxy_pass. With it ("ka") stampede runs with
# --upstream-keepalive $KEEPALIVE and nginx with the configuration stampede
# exports for it (upstream { keepalive $KEEPALIVE; }, HTTP/1.1, an empty
# Connection header; nginx keeps that many per worker, stampede in all).
# Caddy and HAProxy (Debian packages, skipped with a note when missing)
# stand in front of the same upstream in the same rounds, in both modes:
# Caddy `keepalive off` or its pool with keepalive_idle_conns_per_host
# $KEEPALIVE, HAProxy `http-reuse never` with `option http-server-close` or
# its default keep-alive with `http-reuse always`; no limit (neither has
# limit_conn).
#
# Beside them it measures bench/floorproxy, the least a Go proxy can do
# per request, served by net/http ("floor net/http"), by internal/h1's lean
# server ("floor h1", the server stampede proxy runs on) and by a bare loop
# without either ("floor raw"), in both modes: what the platform costs
# before stampede adds anything. In the keep-alive mode "floor epoll" is
# the same floor without Go's netpoller and goroutines, in nginx's shape:
# one edge-triggered epoll loop per core on its own thread, which reads a
# socket only when epoll has said it holds something
# (bench/floorproxy/epoll_linux.go): how near nginx a Go proxy can come
# when it leaves the runtime's networking. It makes its system calls out of
# the scheduler's sight (RawSyscall); "floor epoll syscall" is the same
# loop making them as the runtime's networking does, which sysmon watches
# and hands off. In the keep-alive mode "stampede epoll" is stampede proxy
# --server epoll: the real proxy, limits and all, on such loops. The
# proxies take turns, a
# round at a time, so that a slow spell of the machine falls on all of
# them. It prints per proxy the median (min-max) over the rounds of
# requests/s, p99 and CPU per request (user + system time of the proxy's
# processes, from /proc, over the requests wrk counted), and the ratios of
# stampede to each peer in the same mode, median (min-max) over the
# rounds, each round's ratio taken within the round, and the same ratios
# of every peer to nginx. After the rounds, with perf installed (SYSCALLS=0
# skips it), each proxy serves one more wrk run of SYSCALL_DURATION (default
# 5s) under `perf stat -e raw_syscalls:sys_enter` over its processes' threads,
# outside the timed rounds so that perf's cost is in none of their figures:
# "syscalls/req" is that run's system calls per request.
# BASELINE, a stampede binary built from another tree (say main), runs
# beside this tree's as "stampede base" in every mode and round, and in
# the keep-alive mode as "stampede base epoll" with --server epoll too, so
# that a change is measured before and after in the same run. MODES (default
# "off ka") picks the modes.
# Everything it starts is stopped when it exits. On a machine busy with
# other connections, put UPSTREAM_PORT and PORT_BASE below the kernel's
# ephemeral ports (/proc/sys/net/ipv4/ip_local_port_range), e.g. 9480 and
# 9481: an outgoing connection may hold a port in that range.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
NGINX=${NGINX:-/usr/sbin/nginx}
UPSTREAM_PORT=${UPSTREAM_PORT:-18480}
# The proxies listen on PORT_BASE, PORT_BASE+1, ... in the order below.
PORT_BASE=${PORT_BASE:-18481}
CADDY=${CADDY:-/usr/bin/caddy}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
KEEPALIVE=${KEEPALIVE:-64}
MODES=${MODES:-off ka}
BASELINE=${BASELINE:-}
SYSCALLS=${SYSCALLS:-1}
SYSCALL_DURATION=${SYSCALL_DURATION:-5s}
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

if [ "$SYSCALLS" = 1 ] && ! perf stat -e raw_syscalls:sys_enter -o /dev/null -- true 2>/dev/null; then
  echo "bench/proxy.sh: perf cannot count raw_syscalls:sys_enter (apt-get install linux-perf); no syscalls/req" >&2
  SYSCALLS=0
fi

[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || { echo "bench/proxy.sh: BASELINE $BASELINE is not an executable" >&2; exit 1; }

for port in "$UPSTREAM_PORT" $(seq "$PORT_BASE" $((PORT_BASE + 19))); do
  if port_open "$port"; then
    echo "bench/proxy.sh: 127.0.0.1:$port is already in use (set UPSTREAM_PORT and PORT_BASE)" >&2
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
$(for t in client_body proxy fastcgi uwsgi scgi; do echo "    ${t}_temp_path ${t}_temp;"; done)
    server {
        listen 127.0.0.1:$UPSTREAM_PORT;
        location / { return 200 "ok\n"; }
    }
}
CONF
"$NGINX" -p "$work/upstream" -c "$work/upstream/nginx.conf" -e stderr -g 'daemon off;' &
pids+=($!)

# The proxies under test: names[i] listens on ports[i]; cpids[i] is the
# process whose CPU time (with its children's) is its cost.
names=()
ports=()
cpids=()
next_port=$PORT_BASE
# add NAME PID: the proxy just started on $next_port.
add() {
  names+=("$1"); ports+=("$next_port"); cpids+=("$2")
  next_port=$((next_port + 1))
}

for mode in $MODES; do
  ka=0
  [ "$mode" = ka ] && ka=$KEEPALIVE
  # stampede proxy, and nginx with the configuration stampede says is equivalent.
  "$work/stampede" proxy --listen "127.0.0.1:$next_port" --upstream "http://127.0.0.1:$UPSTREAM_PORT" \
    --limit-conn "$LIMIT" --upstream-keepalive "$ka" 2>"$work/stampede-$mode.log" &
  pids+=($!)
  add "stampede $mode" $!
  if [ "$mode" = ka ]; then
    # The same proxy on its epoll loops (--server epoll).
    "$work/stampede" proxy --listen "127.0.0.1:$next_port" --upstream "http://127.0.0.1:$UPSTREAM_PORT" \
      --limit-conn "$LIMIT" --upstream-keepalive "$ka" --server epoll 2>"$work/stampede-epoll-$mode.log" &
    pids+=($!)
    add "stampede epoll $mode" $!
  fi
  if [ -n "$BASELINE" ]; then
    "$BASELINE" proxy --listen "127.0.0.1:$next_port" --upstream "http://127.0.0.1:$UPSTREAM_PORT" \
      --limit-conn "$LIMIT" --upstream-keepalive "$ka" 2>"$work/baseline-$mode.log" &
    pids+=($!)
    add "stampede base $mode" $!
    if [ "$mode" = ka ]; then
      "$BASELINE" proxy --listen "127.0.0.1:$next_port" --upstream "http://127.0.0.1:$UPSTREAM_PORT" \
        --limit-conn "$LIMIT" --upstream-keepalive "$ka" --server epoll 2>"$work/baseline-epoll-$mode.log" &
      pids+=($!)
      add "stampede base epoll $mode" $!
    fi
  fi
  mkdir -p "$work/nginx-$mode"
  "$work/stampede" proxy --listen "127.0.0.1:$next_port" --upstream "http://127.0.0.1:$UPSTREAM_PORT" \
    --limit-conn "$LIMIT" --upstream-keepalive "$ka" --print-nginx >"$work/nginx-$mode/nginx.conf"
  "$NGINX" -p "$work/nginx-$mode" -c "$work/nginx-$mode/nginx.conf" -e stderr -g 'daemon off;' &
  pids+=($!)
  add "nginx $mode" $!

  for server in nethttp h1 raw; do
    "$work/floorproxy" -listen "127.0.0.1:$next_port" -upstream "127.0.0.1:$UPSTREAM_PORT" -server "$server" -keepalive "$ka" &
    pids+=($!)
    add "floor ${server/nethttp/net/http} $mode" $!
  done
  if [ "$mode" = ka ]; then
    "$work/floorproxy" -listen "127.0.0.1:$next_port" -upstream "127.0.0.1:$UPSTREAM_PORT" -server epoll -keepalive "$ka" &
    pids+=($!)
    add "floor epoll $mode" $!
    "$work/floorproxy" -listen "127.0.0.1:$next_port" -upstream "127.0.0.1:$UPSTREAM_PORT" -server epoll -raw=false -keepalive "$ka" &
    pids+=($!)
    add "floor epoll syscall $mode" $!
  fi

  if [ -x "$CADDY" ]; then
    mkdir -p "$work/caddy-$mode"
    if [ "$mode" = off ]; then
      transport='keepalive off'
    else
      transport="keepalive_idle_conns_per_host $KEEPALIVE"
    fi
    cat >"$work/caddy-$mode/Caddyfile" <<CONF
{
	admin off
	auto_https off
	log default {
		output discard
	}
}
http://127.0.0.1:$next_port {
	reverse_proxy 127.0.0.1:$UPSTREAM_PORT {
		transport http {
			$transport
		}
	}
}
CONF
    XDG_DATA_HOME="$work/caddy-$mode" XDG_CONFIG_HOME="$work/caddy-$mode" HOME="$work/caddy-$mode" \
      "$CADDY" run --adapter caddyfile --config "$work/caddy-$mode/Caddyfile" 2>"$work/caddy-$mode.log" &
    pids+=($!)
    add "caddy $mode" $!
  else
    [ "$mode" = off ] && echo "bench/proxy.sh: caddy is not at $CADDY (apt-get install caddy); left out" >&2
  fi
  if [ -x "$HAPROXY" ]; then
    if [ "$mode" = off ]; then
      reuse=$'    option http-server-close\n    http-reuse never'
    else
      reuse='    http-reuse always'
    fi
    cat >"$work/haproxy-$mode.cfg" <<CONF
global
    maxconn 8192
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
$reuse
frontend f
    bind 127.0.0.1:$next_port
    default_backend b
backend b
    server u 127.0.0.1:$UPSTREAM_PORT
CONF
    "$HAPROXY" -db -f "$work/haproxy-$mode.cfg" 2>"$work/haproxy-$mode.log" &
    pids+=($!)
    add "haproxy $mode" $!
  else
    [ "$mode" = off ] && echo "bench/proxy.sh: haproxy is not at $HAPROXY (apt-get install haproxy); left out" >&2
  fi
done

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

# ticks PID: CPU clock ticks (user + system) of PID and its children
# (nginx's workers), threads included.
ticks() {
  local t=0 p
  for p in "$1" $(pgrep -P "$1" || true); do
    [ -r "/proc/$p/stat" ] || continue
    # Fields 14 and 15 after the command, which may hold spaces.
    t=$((t + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
  done
  echo "$t"
}
hz=$(getconf CLK_TCK)

# run I: one measured wrk run of proxy I; appends "rps p99ms non2xx cpu_us_per_request" to $work/rounds.I.
run() {
  set -- "${names[$1]}" "${ports[$1]}" "$1" "${cpids[$1]}"
  local out rps p99 bad n t0 t1 cpu
  t0=$(ticks "$4")
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "http://127.0.0.1:$2/")
  t1=$(ticks "$4")
  echo "--- $1" >&2
  echo "$out" >&2
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p99=$(ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' <<<"$out")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  cpu=$(awk -v t="$((t1 - t0))" -v hz="$hz" -v n="$n" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')
  echo "$rps $p99 ${bad:-0} $cpu" >>"$work/rounds.$3"
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

# syscalls I: one wrk run of proxy I under perf stat, counting the system
# calls of its processes (nginx's workers too); prints calls per request.
syscalls() {
  local p list out n calls
  list=${cpids[$1]}
  for p in $(pgrep -P "${cpids[$1]}" || true); do list+=",$p"; done
  out=$(perf stat -e raw_syscalls:sys_enter -x, -o "$work/perf.$1" -p "$list" -- \
    wrk -t"$THREADS" -c"$CONNS" -d"$SYSCALL_DURATION" "http://127.0.0.1:${ports[$1]}/")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  calls=$(awk -F, '$3 == "raw_syscalls:sys_enter" {print $1}' "$work/perf.$1")
  awk -v c="$calls" -v n="$n" 'BEGIN {if (c ~ /^[0-9]+$/ && n > 0) printf "%.2f", c / n; else printf "-"}'
}
sys=()
for i in "${!ports[@]}"; do
  sys[$i]=-
  if [ "$SYSCALLS" = 1 ]; then
    echo "syscalls of ${names[$i]}..." >&2
    sys[$i]=$(syscalls "$i")
  fi
done

# stat COLUMN FILE: "median (min-max)" of a column.
stat() {
  awk -v c="$1" '{print $c}' "$2" | sort -g | awk '{v[NR] = $1} END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%g (%g-%g)", m, v[1], v[NR]
  }'
}
# index_of NAME: the index of the proxy NAME, or nothing.
index_of() {
  local i
  for i in "${!names[@]}"; do
    [ "${names[$i]}" = "$1" ] && echo "$i" && return
  done
  return 0 # none: a peer that is not installed prints nothing
}
# ratio A B COLUMN: "median (min-max)" over the rounds of A's column ÷ B's, round by round.
ratio() {
  paste -d' ' <(awk -v c="$3" '{print $c}' "$work/rounds.$1") <(awk -v c="$3" '{print $c}' "$work/rounds.$2") |
    awk '{print $1 / $2}' | sort -g | awk '{v[NR] = $1} END {
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%.2f (%.2f-%.2f)", m, v[1], v[NR]
    }'
}

echo
printf 'wrk -t%s -c%s -d%s, %s rounds, limit_conn %s, keepalive %s, upstream nginx return 200, %s CPUs\n' \
  "$THREADS" "$CONNS" "$DURATION" "$ROUNDS" "$LIMIT" "$KEEPALIVE" "$(nproc)"
printf 'median (min-max) over the rounds\n'
printf '%-26s %-28s %-22s %-8s %-22s %s\n' "proxy" "requests/s" "p99 ms" "non-2xx" "CPU µs/request" "syscalls/req"
for i in "${!ports[@]}"; do
  f="$work/rounds.$i"
  printf '%-26s %-28s %-22s %-8s %-22s %s\n' "${names[$i]}" "$(stat 1 "$f")" "$(stat 2 "$f")" \
    "$(awk '{s += $3} END {print s}' "$f")" "$(stat 4 "$f")" "${sys[$i]}"
done
echo
printf '%-34s %-24s %s\n' "ratio, same mode" "requests/s" "CPU per request"
for mode in $MODES; do
  s=$(index_of "stampede $mode")
  for peer in "stampede epoll" "stampede base" nginx caddy haproxy "floor net/http" "floor h1" "floor raw" "floor epoll" "floor epoll syscall"; do
    o=$(index_of "$peer $mode")
    [ -n "$o" ] || continue
    printf '%-34s %-24s %s\n' "stampede/$peer ($mode)" "$(ratio "$s" "$o" 1)" "$(ratio "$s" "$o" 4)"
  done
done
# The epoll servers of the two builds, beside each other.
e=$(index_of "stampede epoll ka")
b=$(index_of "stampede base epoll ka")
if [ -n "$e" ] && [ -n "$b" ]; then
  printf '%-34s %-24s %s\n' "stampede epoll/base epoll (ka)" "$(ratio "$e" "$b" 1)" "$(ratio "$e" "$b" 4)"
fi
for mode in $MODES; do
  g=$(index_of "nginx $mode")
  for peer in "stampede epoll" "stampede base" "stampede base epoll" caddy haproxy "floor net/http" "floor h1" "floor raw" "floor epoll" "floor epoll syscall"; do
    o=$(index_of "$peer $mode")
    [ -n "$o" ] || continue
    printf '%-34s %-24s %s\n' "$peer/nginx ($mode)" "$(ratio "$o" "$g" 1)" "$(ratio "$o" "$g" 4)"
  done
done
printf 'goals: stampede/nginx (ka) requests/s >= 0.80 (stampede epoll/nginx with --server epoll); stampede/caddy >= 1.00\n'
