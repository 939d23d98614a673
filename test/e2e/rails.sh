#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_rails: one transfer over two rails (tcp), and a rail that fails.
# In a network namespace of its own, lo gets two subnets, each with an
# address for the receiver and one for the sender:
#   - both rails carry data: with --rails on both sides, the receiver
#     offers its two addresses, the sender pairs its own with them by
#     subnet and its data connections come from both (-j 4: two each);
#     the tree arrives intact
#   - bad --rails values are refused (2), naming them; a sender whose
#     receiver offers no rails goes on over one, and says so
#   - one rail's addresses are removed in the middle of a 512 MiB file
#     (--encrypt: the chunks in flight are ciphertext in their slots):
#     its connections stall, fail (10 s without an acknowledgement), the
#     sender warns naming the rail and the chunks the receiver did not
#     take go over the other rail: exit 0, the file intact, nothing left
#     behind
#   - one rail's addresses removed, then, once its connections are
#     found lost and their chunks went over the other, put back: the
#     sender makes them again in the same session (the link shaped to
#     200 Mbit/s so that time is left), both sides say so, and the new
#     connections carry chunks to the end; exit 0, the file intact; the
#     receiver's metrics count the rail's 2 connections down, then all 4
#     up
#   - both rails removed (the control connection on 127.0.0.1 is left):
#     the sender fails in bounded time (4), naming each connection, and
#     nothing shows under a final name
# Without unshare -n (a container), it is skipped (77).

if [ -z "${PXFER_RAILS_NETNS:-}" ]; then
	if unshare -n ip link set lo up 2>/dev/null; then
		# shellcheck disable=SC2016
		PXFER_RAILS_NETNS=1 exec unshare -n bash -c \
			'ip link set lo up || exit 1; exec bash "$0" "$@"' "$0" "$@"
	fi
	echo "SKIP: a network namespace of its own is needed (unshare -n)"
	exit 77
fi

# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

R1=10.231.1.1 S1=10.231.1.2 R2=10.231.2.1 S2=10.231.2.2
for a in $R1 $S1 $R2 $S2; do
	ip addr add "$a/24" dev lo || skip "cannot add $a to lo"
done

src=$T/src
mkdir -p "$src/tree/sub" || fail "mkdir"
for i in $(seq 1 40); do
	head -c $((i * 7919)) /dev/urandom >"$src/tree/f$i"
	head -c $((i * 3001)) /dev/urandom >"$src/tree/sub/g$i"
done
head -c 64M /dev/urandom >"$src/tree/big"

note "both rails carry data"
dst=$T/dst.both
mkdir "$dst"
start_recv "$dst" -v --rails "$R1,$R2"
send_ok -v -j 4 --rails "$S1,$S2" "$src/tree" "$R1:$RECV_PORT"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver"
tree_equal "$src/tree" "$dst/tree"
expect_grep "rail 0: lo $S1 -> $R1, 2 data connection" "$SEND_ERR" "the first rail"
expect_grep "rail 1: lo $S2 -> $R2, 2 data connection" "$SEND_ERR" "the second rail"
for a in $S1 $S2; do
	n=$(grep -cE "data connection [0-9]+ from \[?(::ffff:)?$a\]?:[0-9]+: [1-9][0-9]* chunks" "$RECV_LOG")
	[ "$n" -eq 2 ] || {
		cat "$RECV_LOG" >&2
		fail "$n data connections from $a carried chunks, not 2"
	}
done
ok "two data connections from each of $S1 and $S2 carried chunks; the tree is intact"

note "bad --rails, and a receiver that offers none"
psend --rails 10.231.1.2/24 "$src/tree" "$R1:1"
expect_rc 2 "$SEND_RC" "--rails with a prefix"
expect_grep "not a numeric IPv4 or IPv6 address" "$SEND_ERR" "--rails with a prefix"
psend --rails "$S1,,$S2" "$src/tree" "$R1:1"
expect_rc 2 "$SEND_RC" "--rails with an empty item"
psend --rails "$S1," "$src/tree" "$R1:1"
expect_rc 2 "$SEND_RC" "--rails ending in a comma"
dst=$T/dst.none
mkdir "$dst"
start_recv "$dst"
psend --rails 10.231.9.9 "$src/tree" "$R1:$RECV_PORT"
expect_rc 2 "$SEND_RC" "--rails with an address this host does not have"
expect_grep "no interface of this host has the address 10.231.9.9" "$SEND_ERR" "unknown address"
send_ok -j 2 --rails "$S1,$S2" "$src/tree" "$R1:$RECV_PORT"
wait_recv
tree_equal "$src/tree" "$dst/tree"
expect_grep "offers no addresses for data" "$SEND_ERR" "a receiver without rails"
ok "refused with 2; over one rail when none is offered: $(grep -m 1 warning "$SEND_ERR")"

note "one rail fails in the middle of a 512 MiB file"
head -c 512M /dev/urandom >"$src/huge" || fail "cannot write the test file"
dst=$T/dst.fail
mkdir "$dst"
start_recv "$dst" -v --rails "$R1,$R2"
timer_start
bg_send -v -j 4 --retries 0 --encrypt --rails "$S1,$S2" "$src/huge" "$R1:$RECV_PORT"
wait_for 30 have_part "$dst" || fail "nothing arrived within 30 s"
# (the subnet's first address takes the others with it)
ip addr del "$R2/24" dev lo
ip addr del "$S2/24" dev lo 2>/dev/null
wait_pid "$SEND_PID" 120
send_rc=$WAIT_RC
wait_recv
if [ "$send_rc" -ne 0 ]; then
	cat "$SEND_ERR" "$RECV_LOG" >&2
	fail "the sender exited $send_rc after one rail failed, not 0"
fi
expect_grep "data connection [0-9] \(lo $S2 -> $R2\) failed: .*go again over the 2 left" \
	"$SEND_ERR" "the warning naming the rail"
cmp -s "$src/huge" "$dst/huge" || fail "the file that crossed the failover differs"
no_part_files "$dst"
[ "$(partials "$dst")" -eq 0 ] || fail "partial state left: $(partials "$dst") files"
grep -qE "from \[?(::ffff:)?$S1\]?:[0-9]+: [1-9][0-9]* chunks$" "$RECV_LOG" ||
	fail "the rail left carried nothing"
ok "exit 0 in $(timer_secs) s, intact: $(grep -m 1 'failed:' "$SEND_ERR")"

# rails_metric STATE - the receiver's pxfer_recv_rails{state="STATE"}
rails_metric()
{
	python3 - "$mport" "$1" <<'EOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
c.request("GET", "/metrics")
for line in c.getresponse().read().decode().splitlines():
    if line.startswith('pxfer_recv_rails{state="%s"} ' % sys.argv[2]):
        print(line.split()[1])
EOF
}

# rails_are DOWN UP - whether the receiver counts DOWN connections down
# and UP up (for wait_for)
# shellcheck disable=SC2317
rails_are()
{
	[ "$(rails_metric down)" = "$1" ] && [ "$(rails_metric up)" = "$2" ]
}

# backs N - whether the sender said N connections are back (for wait_for)
# shellcheck disable=SC2317
backs()
{
	[ "$(grep -c "is back: it carries data again" "$SEND_ERR")" -ge "$1" ]
}

note "a rail that comes back carries data again, in the same session"
# the link at 200 Mbit/s, so the file takes about 20 s: the rail is
# found lost after 10 s, and comes back with time left to carry data
tc qdisc add dev lo root tbf rate 200mbit burst 256kb latency 100ms ||
	skip "cannot shape lo with tc (sch_tbf)"
ip addr add "$R2/24" dev lo
ip addr add "$S2/24" dev lo
dst=$T/dst.back
mkdir "$dst"
mport=$(free_port)
start_recv "$dst" -v --rails "$R1,$R2" --metrics "127.0.0.1:$mport"
timer_start
bg_send -v -j 4 --retries 0 --encrypt --rails "$S1,$S2" "$src/huge" "$R1:$RECV_PORT"
wait_for 30 have_part "$dst" || fail "nothing arrived within 30 s"
sleep 1
ip addr del "$R2/24" dev lo
ip addr del "$S2/24" dev lo 2>/dev/null
wait_for 40 grep -q "failed: .*go again over" "$SEND_ERR" ||
	fail "no failover within 40 s: $(cat "$SEND_ERR")"
lost_at=$(timer_secs)
# the receiver's metrics: the rail's two connections down
wait_for 20 rails_are 2 2 ||
	fail_later "the metrics did not show the rail's 2 connections down: $(rails_metric down) down, $(rails_metric up) up"
ip addr add "$R2/24" dev lo
ip addr add "$S2/24" dev lo
# ... and up again once they are back
wait_for 60 backs 2 || fail_later "the rail's connections did not come back within 60 s"
wait_for 20 rails_are 0 4 ||
	fail_later "the metrics did not show 4 connections up once the rail came back: $(rails_metric down) down, $(rails_metric up) up"
wait_pid "$SEND_PID" 120
send_rc=$WAIT_RC
wait_recv
tc qdisc del dev lo root
if [ "$send_rc" -ne 0 ]; then
	cat "$SEND_ERR" "$RECV_LOG" >&2
	fail "the sender exited $send_rc after a rail came back, not 0"
fi
cmp -s "$src/huge" "$dst/huge" || fail "the file that crossed the rail's return differs"
no_part_files "$dst"
n=$(grep -cE "data connection [0-9] \(lo $S2 -> $R2\) is back: it carries data again" "$SEND_ERR")
[ "$n" -eq 2 ] || {
	cat "$SEND_ERR" >&2
	fail "$n of the rail's 2 data connections came back, by the sender's log"
}
# the receiver (-q -v) names each old connection as it is replaced, and
# the new ones carried chunks, and ended with the session
n=$(grep -cE "data connection [0-9] from \[?(::ffff:)?$S2\]?:[0-9]+: [0-9]+ chunks, then lost$" "$RECV_LOG")
[ "$n" -eq 2 ] || {
	cat "$RECV_LOG" >&2
	fail "$n of the rail's 2 data connections were replaced, by the receiver's log"
}
n=$(grep -cE "data connection [0-9] from \[?(::ffff:)?$S2\]?:[0-9]+: [1-9][0-9]* chunks$" "$RECV_LOG")
[ "$n" -eq 2 ] || {
	cat "$RECV_LOG" >&2
	fail "$n of the rail's new data connections carried chunks, not 2"
}
ok "lost at $lost_at s, back and carrying chunks; exit 0 in $(timer_secs) s, intact"

note "both rails fail: a clear error in bounded time"
dst=$T/dst.both-fail
mkdir "$dst"
start_recv "$dst" --rails "$R1,$R2"
timer_start
bg_send -j 2 --retries 0 --rails "$S1,$S2" "$src/huge" "127.0.0.1:$RECV_PORT"
wait_for 30 have_part "$dst" || fail "nothing arrived within 30 s"
for a in $R1 $S1 $R2 $S2; do
	ip addr del "$a/24" dev lo 2>/dev/null
done
wait_pid "$SEND_PID" 90
secs=$(timer_secs)
[ "$WAIT_RC" -ne 124 ] || fail "the sender was still there 90 s after both rails failed"
expect_rc 4 "$WAIT_RC" "sender that lost both rails"
expect_grep "lost every data connection to the receiver .*0 \(lo $S1 -> $R1\).*1 \(lo $S2 -> $R2\)" \
	"$SEND_ERR" "the error naming each rail"
stop_recv
[ -z "$(finals "$dst")" ] || fail "final names exist after both rails failed: $(finals "$dst")"
ok "exit 4 in $secs s: $(grep -m 1 error "$SEND_ERR")"

finish
