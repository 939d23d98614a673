#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_metrics: pxfer recv --metrics and --metrics-file
#   - a public address is refused unless --metrics-public (exit 2)
#   - a receiver (--max-sessions 1) sees two complete sessions, a wrong
#     secret, a sender told it is busy, a sender killed mid-file and a
#     connection that speaks no pxfer; scraped during the killed one and
#     after them all, every figure is what happened: sessions by outcome,
#     running, rails, ring memory, bytes and files, the partial store,
#     door refusals; --metrics-file holds the same at the end
#   - a forged chunk (test/helper/hostile_sender bad-checksum) is counted
#     as an integrity outcome, and, on a second receiver with
#     --idle-timeout 2, a sender stopped mid-file as an idle one
#   - only GET /metrics is answered (404, 405, 400, 431 otherwise), and
#     promtool check metrics passes on what is served
#   - a flood of connections, malformed and oversized requests on the
#     metrics port does not slow transfers much (measured against the same
#     transfers without it) nor grow the receiver's memory; the endpoint
#     answers once it ends, and behind a client that never finishes its
#     request within its 2 s deadline
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

command -v python3 >/dev/null || skip "python3 is needed to scrape"

src1=$T/src1
src2=$T/src2
dst=$T/dst
mkdir -p "$src1/sub" "$src2" "$dst" "$T/long" || fail "mkdir"
head -c 100000 /dev/urandom >"$src1/a" || fail "cannot write"
head -c 23456 /dev/urandom >"$src1/sub/b" || fail "cannot write"
head -c 777777 /dev/urandom >"$src2/c" || fail "cannot write"
bytes=$((100000 + 23456 + 777777))
huge=$((64 << 20))
head -c "$huge" /dev/zero >"$T/long/huge" || fail "cannot write"

# scrape PORT [PATH] [METHOD] - GET (or METHOD) http://127.0.0.1:PORT/PATH:
# the status on the first line, then the body
scrape()
{
	python3 - "$1" "${2:-/metrics}" "${3:-GET}" <<'EOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request(sys.argv[3], sys.argv[2])
r = c.getresponse()
print(r.status)
sys.stdout.write(r.read().decode())
EOF
}

# scrape_to FILE [PORT] - scrape the receiver's metrics (on PORT, or the
# first receiver's) into FILE (for wait_for)
# shellcheck disable=SC2317
scrape_to()
{
	scrape "${2:-$mport}" >"$1" 2>/dev/null
}

# idle_counted FILE PORT - whether the receiver on metrics PORT counted an
# idle session, scraped into FILE (for wait_for)
# shellcheck disable=SC2317
idle_counted()
{
	scrape_to "$1" "$2" && [ "$(get "$1" 'pxfer_recv_sessions_total{outcome="idle"}')" = 1 ]
}

# get FILE METRIC - the value of METRIC (with its labels) in FILE
get()
{
	awk -v m="$2" '$1 == m { print $2; f = 1 } END { if (!f) print "missing" }' "$1"
}

# want FILE METRIC VALUE - fail later unless METRIC is VALUE in FILE
want()
{
	local v

	v=$(get "$1" "$2")
	if [ "$v" = "$3" ]; then
		ok "$2 $v"
	else
		fail_later "$2 is $v, not $3 ($(basename "$1"))"
	fi
}

note "a public address needs --metrics-public"
"$PXFER" recv --dir "$dst" --metrics "0.0.0.0:$(free_port)" >"$T/pub.out" 2>&1
expect_rc 2 $? "pxfer recv --metrics 0.0.0.0:PORT"
grep -q "not a loopback address.*--metrics-public" "$T/pub.out" ||
	fail "no clear error: $(cat "$T/pub.out")"
"$PXFER" recv --dir "$dst" --metrics-public >"$T/pub.out" 2>&1
expect_rc 2 $? "pxfer recv --metrics-public alone"
ok "refused, and said why"

note "sessions of every kind, scraped during and after"
mport=$(free_port)
start_server "$dst" --json --max-sessions 1 --ring-mem 8M \
	--metrics "127.0.0.1:$mport" --metrics-file "$T/pxfer.prom"
scrape "$mport" >"$T/m0" || fail "no answer from the metrics port"
[ "$(head -n 1 "$T/m0")" = 200 ] || fail "GET /metrics: $(head -n 1 "$T/m0")"
want "$T/m0" pxfer_recv_ring_memory_budget_bytes $((8 << 20))
want "$T/m0" pxfer_recv_sessions_max 1

send_ok -q -j 2 "$src1" "$(target)"
send_ok -q -j 2 "$src2" "$(target)"
PXFER_SECRET=not-the-secret-but-long-enough-0123456789 psend -q "$src1" "$(target)"
expect_rc 3 "$SEND_RC" "a sender with the wrong secret"
# a connection that speaks no pxfer
python3 - "$RECV_PORT" <<'EOF' || fail "cannot connect to the receiver"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
try:
    s.sendall(b"\xff" * 4096)
    s.recv(4096)
except OSError:
    pass
s.close()
EOF

# a long session, stopped once its file is under way
bg_send -q -j 2 --bind 127.0.0.1 "$T/long/huge" "$(target)/long"
long_pid=$SEND_PID
step_until 30 "$long_pid" have_part "$dst" || fail "the long session did not start"
# its place is taken: the next sender is told the receiver is busy
psend -q --wait 0 "$src1" "$(target)/busy"
expect_rc 6 "$SEND_RC" "a sender while --max-sessions 1 runs"
scrape "$mport" >"$T/m1"
want "$T/m1" pxfer_recv_sessions_running 1
want "$T/m1" 'pxfer_recv_rails{state="up"}' 2
want "$T/m1" pxfer_recv_ring_memory_bytes $((8 << 20))
want "$T/m1" 'pxfer_recv_sessions_total{outcome="complete"}' 2
want "$T/m1" 'pxfer_recv_sessions_total{outcome="busy"}' 1
kill -KILL "$long_pid"
wait_for 20 sessions_over 2 || fail "the killed sender's session did not end"

scrape "$mport" >"$T/m2"
want "$T/m2" 'pxfer_recv_sessions_total{outcome="complete"}' 2
want "$T/m2" 'pxfer_recv_sessions_total{outcome="failed"}' 1
want "$T/m2" 'pxfer_recv_sessions_total{outcome="refused"}' 1
want "$T/m2" 'pxfer_recv_sessions_total{outcome="busy"}' 1
want "$T/m2" 'pxfer_recv_sessions_total{outcome="idle"}' 0
want "$T/m2" 'pxfer_recv_sessions_total{outcome="integrity"}' 0
want "$T/m2" pxfer_recv_sessions_running 0
want "$T/m2" pxfer_recv_auth_failures_total 1
want "$T/m2" 'pxfer_recv_door_refusals_total{reason="protocol"}' 1
want "$T/m2" 'pxfer_recv_bytes_total{transport="tcp"}' "$bytes"
want "$T/m2" 'pxfer_recv_files_total{transport="tcp"}' 3
want "$T/m2" 'pxfer_recv_rails{state="up"}' 0
want "$T/m2" 'pxfer_recv_rails{state="down"}' 0
want "$T/m2" pxfer_recv_ring_memory_bytes 0
# what arrived of the killed sender's file is kept for a resume
want "$T/m2" pxfer_recv_partial_files 1
want "$T/m2" pxfer_recv_partial_bytes "$huge"
bad=$(grep -v -e '^#' -e '^pxfer_build_info' "$T/m2" | grep '="[^"]*[^a-z_"]')
[ -z "$bad" ] || fail_later "a label value outside the fixed names: $bad"

note "a chunk that fails its check: an integrity outcome"
n=$(recv_sessions)
"$HELPERS/hostile_sender" 127.0.0.1 "$RECV_PORT" bad-checksum >"$T/hs.out" 2>&1 ||
	fail "hostile_sender could not play bad-checksum: $(cat "$T/hs.out")"
wait_for 20 sessions_over "$n" || fail "the forged session did not end"
scrape "$mport" >"$T/m2i"
want "$T/m2i" 'pxfer_recv_sessions_total{outcome="integrity"}' 1
want "$T/m2i" 'pxfer_recv_sessions_total{outcome="failed"}' 1

note "a sender that stops moving: an idle outcome (another receiver, --idle-timeout 2)"
idst=$T/idle
mkdir -p "$idst" || fail "mkdir"
iport=$(free_port)
import=$(free_port)
"$PXFER" recv --dir "$idst" --port "$iport" --idle-timeout 2 -q \
	--metrics "127.0.0.1:$import" >"$T/idle.log" 2>&1 &
ipid=$!
track "$ipid"
wait_for 10 scrape_to "$T/mi0" "$import" || fail "the second receiver's metrics did not come up"
bg_send -q -j 1 "$T/long/huge" "127.0.0.1:$iport/idle"
step_until 30 "$SEND_PID" have_part "$idst" || fail "the idle session did not start"
# stopped (SIGSTOP): no chunk, no PING; the receiver gives up after 2 s
wait_for 30 idle_counted "$T/mi1" "$import"
want "$T/mi1" 'pxfer_recv_sessions_total{outcome="idle"}' 1
want "$T/mi1" 'pxfer_recv_sessions_total{outcome="failed"}' 0
kill -KILL "$SEND_PID" 2>/dev/null
wait_pid "$SEND_PID" 10
kill -TERM "$ipid" 2>/dev/null
wait_pid "$ipid" 10

note "only GET /metrics"
[ "$(scrape "$mport" / | sed -n 1p)" = 404 ] || fail_later "GET / was not 404"
[ "$(scrape "$mport" /metrics POST | sed -n 1p)" = 405 ] || fail_later "POST was not 405"
status=$(python3 - "$mport" <<'EOF'
import socket, sys
def ask(data):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
    try:
        s.sendall(data)
    except OSError:
        pass
    r = s.recv(100).split(b" ")
    s.close()
    return r[1].decode() if len(r) > 1 else "none"
print(ask(b"GET /metrics\r\n\r\n"), ask(b"\x00\x01 junk junk junk\r\n\r\n"),
      ask(b"GET /metrics HTTP/1.1\r\n" + b"X: " + b"a" * 9000 + b"\r\n\r\n"))
EOF
)
if [ "$status" = "400 400 431" ]; then
	ok "404, 405, 400 and 431 as they should"
else
	fail_later "malformed and oversized requests got: $status, not 400 400 431"
fi
if command -v promtool >/dev/null; then
	if tail -n +2 "$T/m2" | promtool check metrics >"$T/promtool.out" 2>&1; then
		ok "promtool check metrics passes"
	else
		fail_later "promtool check metrics: $(cat "$T/promtool.out")"
	fi
fi

note "a flood on the metrics port while files arrive"
# sends N - send the 64 MiB file N times, each to a new place (removed
# after it): the seconds they took in all in $secs
sends()
{
	local ms=0 i t

	for ((i = 0; i < $1; i++)); do
		mkdir -p "$dst/t" || fail "mkdir"
		timer_start
		send_ok -q -j 2 "$T/long/huge" "$(target)/t"
		t=$(timer_secs)
		ms=$((ms + 10#${t%.*} * 1000 + 10#${t#*.} * 10))
		cmp -s "$T/long/huge" "$dst/t/huge" || fail "the file sent differs"
		rm -rf "$dst/t"
	done
	secs=$(printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10)))
}
rss()
{
	awk '/^VmRSS/ { print $2 }' "/proc/$RECV_PID/status"
}
sends 4
t0=$secs
rss0=$(rss)
python3 - "$mport" 15 >"$T/flood.out" 2>&1 <<'EOF' &
# for SECONDS: four threads open connections and close them at once, or
# send oversized, malformed or good requests, over and over
import socket, sys, threading, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + secs
fast = [b"", b"GET /metrics HTTP/1.1\r\n\r\n", b"\xff" * 6000,
        b"BREW /pot HTTP/1.1\r\n\r\n", b"GET " + b"/" * 5000 + b" HTTP/1.1\r\n\r\n"]
made = [0]
def run_fast(k):
    i = k
    while time.time() < end:
        i += 1
        data = fast[i % len(fast)]
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            made[0] += 1
            if data:
                s.sendall(data)
                s.settimeout(1)
                s.recv(100)
            s.close()
        except OSError:
            pass
t = [threading.Thread(target=run_fast, args=(k,)) for k in range(4)]
[x.start() for x in t]
[x.join() for x in t]
print("connections", made[0])
EOF
flood_pid=$!
track "$flood_pid"
sleep 1
sends 4
t1=$secs
still=0
kill -0 "$flood_pid" 2>/dev/null && still=1
rss1=$(rss)
wait "$flood_pid"
cat "$T/flood.out"
[ "$still" = 1 ] || fail_later "the flood ended before the transfers did: nothing measured"
# 4 x 64 MiB on loopback: the flood may take CPU from a loaded 2-core
# machine, but never holds a transfer; one stalled on the endpoint would
# take its 2 s deadline per request, over and over
if awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b > 4 * a + 3) }'; then
	fail_later "the transfers took $t1 s during the flood, $t0 s without"
else
	ok "the transfers took $t1 s during the flood, $t0 s without"
fi
if [ $((rss1 - rss0)) -gt 16384 ]; then
	fail_later "the receiver's memory grew from $rss0 to $rss1 KiB during the flood"
else
	ok "the receiver's memory: $rss0 KiB before the flood, $rss1 KiB during it"
fi
wait_for 5 scrape_to "$T/m3" ||
	fail "the metrics port does not answer after the flood"
want "$T/m3" 'pxfer_recv_sessions_total{outcome="complete"}' 10

note "a client that never finishes its request holds the endpoint 2 s at most"
python3 - "$mport" <<'EOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x")
time.sleep(10)
EOF
track $!
sleep 0.3
timer_start
scrape "$mport" >"$T/m4" || fail_later "no scrape behind a slow client"
secs=$(timer_secs)
[ "${secs%.*}" -lt 4 ] || fail_later "a scrape behind a slow client took $secs s"
ok "a scrape behind a slow client took $secs s"

note "--metrics-file at exit"
stop_recv
expect_rc 130 "$WAIT_RC" "the receiver stopped"
[ -f "$T/pxfer.prom.tmp" ] && fail_later "the temporary file was left behind"
want "$T/pxfer.prom" 'pxfer_recv_sessions_total{outcome="complete"}' 10
want "$T/pxfer.prom" 'pxfer_recv_sessions_total{outcome="failed"}' 1
want "$T/pxfer.prom" 'pxfer_recv_bytes_total{transport="tcp"}' $((bytes + 8 * huge))
if ! command -v promtool >/dev/null; then
	[ "$_failed_later" -gt 0 ] && finish
	skip "promtool (Debian's prometheus package) is not installed: the rest passed, the format was not checked"
fi
promtool check metrics <"$T/pxfer.prom" >"$T/promtool.out" 2>&1 ||
	fail_later "promtool check metrics on the file: $(cat "$T/promtool.out")"
finish
