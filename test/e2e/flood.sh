#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_flood: the receiver's front door under load from hosts that have no
# secret (test/helper/flooder, from 127.0.0.2 and 127.0.0.3; the sender
# is 127.0.0.1, another source):
#   - while 127.0.0.2 opens 1,000 connections a second, most of them
#     silent, some sending a HELLO one byte a second, a sender transfers
#     a small tree 20 times in a row: all 20 succeed and arrive intact;
#     and a session that was running when the flood began (a slow
#     transfer of 256 MiB, -j 4, from 127.0.0.1) completes intact
#   - 127.0.0.3 guesses the secret for 10 s on 8 connections at once: the
#     receiver checks at most 9 guesses (8 by the documented delays: 50 ms
#     after a failure, doubling up to 5 s; the others wait, unread), while
#     a sender from 127.0.0.1 does not wait at all
#   - a sender with the right secret from 127.0.0.3 gets through after
#     waiting out the last delay (5 s at most)
#   - the receiver logs the first failure at once and the rest, counted,
#     as one line when it stops: two lines for all those guesses
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

FL=$HELPERS/flooder
[ -x "$FL" ] || skip "$FL is not built"
for a in 127.0.0.2 127.0.0.3; do
	out=$("$FL" guess -b "$a" -n 0 127.0.0.1 1 2>&1) ||
		skip "no loopback address $a to flood from: $out"
done

src=$T/src
dst=$T/dst
mkdir -p "$src/sub" "$dst" || fail "mkdir"
for i in 1 2 3 4 5; do
	head -c $((i * 20000)) /dev/urandom >"$src/sub/f$i"
done
head -c 1500000 /dev/urandom >"$src/big"
mkdir -p "$T/long" "$dst/long" || fail "mkdir"
head -c $((256 << 20)) /dev/zero >"$T/long/huge" || fail "cannot write"

start_server "$dst"

note "a flood from 127.0.0.2 while 127.0.0.1 sends 20 times"
# a session that is under way when the flood begins; its sender stopped
# now and then, so that it is still running when the flood ends
"$PXFER" send -q -j 4 --bind 127.0.0.1 "$T/long/huge" "127.0.0.1:$RECV_PORT/long" \
	>/dev/null 2>"$T/long.err" &
long_pid=$!
track "$long_pid"
wait_for 20 have_part "$dst" || fail "the long session did not start"
kill -STOP "$long_pid"
"$FL" flood -b 127.0.0.2 -r 1000 -t 40 -d 20 127.0.0.1 "$RECV_PORT" \
	>"$T/flood.out" 2>&1 &
flood_pid=$!
track "$flood_pid"
sleep 2
ok=0
timer_start
for i in $(seq 1 20); do
	psend -q --bind 127.0.0.1 "$src" "127.0.0.1:$RECV_PORT"
	if [ "$SEND_RC" -eq 0 ]; then
		ok=$((ok + 1))
	else
		fail_later "send $i of 20 exited $SEND_RC: $(tail -n 1 "$SEND_ERR")"
	fi
done
secs=$(timer_secs)
kill -CONT "$long_pid"
[ "$ok" -eq 20 ] || fail "$ok of 20 sends succeeded during the flood"
ok "20 of 20 sends succeeded during the flood, in $secs s"
tree_equal "$src" "$dst/src"
wait_pid "$long_pid" 120
[ "$WAIT_RC" -eq 0 ] || { cat "$T/long.err" >&2; fail "the session under way when the flood began exited $WAIT_RC"; }
cmp -s "$T/long/huge" "$dst/long/huge" || fail "the long session's file differs"
ok "the session under way when the flood began completed intact"
recv_alive || fail "the receiver is not alive and listening after the flood"

note "10 s of guesses from 127.0.0.3, 8 at a time"
"$FL" guess -b 127.0.0.3 -c 8 -n 100000 -t 10 127.0.0.1 "$RECV_PORT" \
	>"$T/guess.out" 2>&1 &
guess_pid=$!
track "$guess_pid"
# at 6.35 s the guesser's 8th failure makes its connections wait 5 s
sleep 6.5
timer_start
send_ok -q --bind 127.0.0.1 "$src" "127.0.0.1:$RECV_PORT"
secs=$(timer_secs)
[ "${secs%.*}" -lt 3 ] ||
	fail_later "a sender from 127.0.0.1 took $secs s while 127.0.0.3 guessed"
ok "a sender from 127.0.0.1 meanwhile: sent in $secs s"
wait_pid "$guess_pid" 30
expect_rc 0 "$WAIT_RC" "the guesser"
cat "$T/guess.out"
read -r guesses checked < <(sed -n \
	's/^guesses \([0-9]*\): checked \([0-9]*\),.*/\1 \2/p' "$T/guess.out")
[ -n "$guesses" ] || fail "the guesser said nothing useful"
[ "$checked" -ge 1 ] || fail "no guess was checked at all"
[ "$checked" -le 9 ] ||
	fail "the receiver checked $checked guesses in 10 s; the delays allow 8"
ok "$guesses guesses, $checked checked"

note "the right secret from 127.0.0.3"
timer_start
send_ok -q --bind 127.0.0.3 "$src" "127.0.0.1:$RECV_PORT"
secs=$(timer_secs)
[ "${secs%.*}" -lt 8 ] ||
	fail_later "the sender from 127.0.0.3 waited $secs s; the delays are 5 s at most"
ok "sent from the guessing address in $secs s"

kill "$flood_pid" 2>/dev/null
wait "$flood_pid" 2>/dev/null
cat "$T/flood.out"
stop_recv
n=$(grep -c 'authentication failed' "$RECV_LOG")
grep 'authentication failed' "$RECV_LOG" | sed 's/^/    recv: /'
if [ "$n" -lt 1 ] || [ "$n" -gt 3 ]; then
	fail "$n lines about failed authentications in the receiver's log for $checked failures"
fi
grep -qE "127\.0\.0\.3.*authentication failed" "$RECV_LOG" ||
	fail "the log does not name 127.0.0.3"
[ "$checked" -lt 2 ] ||
	grep -qE "refused $((checked - 1)) sender\(s\) from 127\.0\.0\.3 in the last" "$RECV_LOG" ||
	fail_later "the summary does not count the other $((checked - 1)) failures"
ok "$n lines about failed authentications"
finish
