#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_broadcast: pxfer send --each, a chain through 4 receivers, each in
# a network namespace of its own with its own address on a bridge and its
# link shaped (tc tbf); the source in a fifth. The tree: one 1 GiB file
# and 1,000 small ones (160 MiB under ThreadSanitizer), a sparse file and
# one that is all hole.
#   - all four end identical to the source, modes and mtimes included;
#     each says in its log on whose behalf it forwarded, and to whom;
#   - receiver 2 killed (SIGKILL) mid-transfer: 1, 3 and 4 complete, 2 is
#     named lost (--json, exit 1); started again, the same command
#     completes it (exit 0) and the links carry no more than its missing
#     bytes and 5% of the tree;
#   - receiver 2 stopped (SIGSTOP) mid-transfer: cut out within the idle
#     bound (--idle-timeout 4 on every node), the others complete;
#   - on loopback, a relay between receivers 1 and 2 that flips a bit of
#     a chunk: receiver 2 refuses it (its hop ends with 7, exit 1), 3
#     gets everything from 1; a PATH that is a link to a large file is
#     followed (its ranges from the file it names).
# Skips without root or network namespaces.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# bad input: exit 2 and a message naming it, before anything is sent
mkdir -p "$T/in" && echo x >"$T/in/f"
many=$(seq -s, -f '127.0.0.%g' 1 65)
for bad in "--to 127.0.0.1 --each 127.0.0.2|choose one" \
	"--sort --to 127.0.0.1|--sort goes with --each" \
	"--idle-timeout 3 --to 127.0.0.1|--idle-timeout goes with --each" \
	"--each 127.0.0.1 --idle-timeout 0|--idle-timeout takes seconds from 1" \
	"--each ,|names no receiver|no receiver" \
	"--each $many|a chain takes at most 64"; do
	args=${bad%%|*} want=${bad#*|}
	# shellcheck disable=SC2086  # the options are words
	psend $args "$T/in/f"
	expect_rc 2 "$SEND_RC" "send $args"
	expect_grep "$want" "$SEND_ERR" "send $args"
done
ok "bad --each, --sort and --idle-timeout: exit 2, each named"

[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
for tool in ip tc python3; do
	command -v $tool >/dev/null || skip "$tool is missing"
done
limit=300
N=4
RATE=800mbit
IDLE=4

# --- the nodes ---
# shellcheck source=../lib/nodes.sh
. "$(dirname "$0")/../lib/nodes.sh"
pfx=pb$(($$ % 100000))
net=$NODES_NET
GW=$net.1
nodes_start "$pfx" $RATE
node "${pfx}s" "$net.10"
for ((i = 1; i <= N; i++)); do
	node "${pfx}r$i" "$net.$((20 + i))"
done
ok "bridge $GW/24: the source at $net.10, receivers at $net.21-$((20 + N)), each link $RATE"

# sent_bytes - what every node's interface has sent, in all
sent_bytes()
{
	local n=0 x

	for x in s $(seq 1 $N); do
		[ "$x" = s ] || x=r$x
		n=$((n + $(ip netns exec "${pfx}$x" cat "/sys/class/net/${pfx}${x}n/statistics/tx_bytes")))
	done
	echo $n
}

# --- the tree ---
scratch 6144
src=$SCRATCH/src
mkdir -p "$src/small"
case $build in *tsan*) BIG_MIB=160 ;; *) BIG_MIB=1024 ;; esac
head -c $((BIG_MIB << 20)) /dev/urandom >"$src/big.dat" || fail "writing the tree"
# a sparse file, some of its ranges only a hole, and one all hole: a hop
# gets fewer bytes of such a range than its length, or none
truncate -s 24M "$src/sparse.dat" || fail "writing the tree"
truncate -s 9M "$src/hole.dat" || fail "writing the tree"
for mib in 5 17; do
	dd if=/dev/urandom of="$src/sparse.dat" bs=1M count=1 seek=$mib conv=notrunc status=none ||
		fail "writing the tree"
done
for d in $(seq 0 9); do
	mkdir -p "$src/small/d$d"
	for f in $(seq 0 99); do
		head -c $(((d * 100 + f) * 37 % 9000)) /dev/urandom >"$src/small/d$d/f$f"
	done
	chmod 750 "$src/small/d$d"
done
chmod 640 "$src/small/d3/f7"
touch -d '2020-02-02 02:02:02' "$src/small/d5/f5" "$src/small/d5"
tree_mib=$(du -sm --apparent-size "$src" | cut -f1)
ok "tree: $(find "$src" -type f | wc -l) files, $tree_mib MiB"

# --- the receivers, each in its namespace, each with its own DIR ---
RPID=()
start_recv_ns()
{
	mkdir -p "$SCRATCH/d$1"
	node_recv "${pfx}r$1" "$T/recv$1.log" --dir "$SCRATCH/d$1" --idle-timeout $IDLE
	RPID[$1]=$NODE_PID
}
stop_recvs()
{
	local i

	for ((i = 1; i <= N; i++)); do
		kill -CONT "${RPID[$i]}" 2>/dev/null
		kill -TERM "${RPID[$i]}" 2>/dev/null
		wait_pid "${RPID[$i]}" 20
	done
}
fresh()
{
	local i

	for ((i = 1; i <= N; i++)); do
		rm -rf "$SCRATCH/d$i"
		start_recv_ns "$i"
	done
}
each=$(seq -s, -f "$net.%g" 21 $((20 + N)))
# logs [FILE...] - the receivers' logs and FILEs, into the test's log
logs()
{
	local f

	for f in "$T"/recv*.log "$@"; do
		echo "--- ${f##*/}:"
		tail -n 30 "$f"
	done
}
# fail_logs WHAT FILE... - fail, the logs first
fail_logs()
{
	local what=$1

	shift
	logs "$@" >&2
	fail "$what"
}
# broadcast NAME [ARGS] - the source sends the tree down the chain
broadcast()
{
	local name=$1

	shift
	timeout -k 5 $limit ip netns exec "${pfx}s" "$PXFER" send -j 2 \
		--idle-timeout $IDLE --json "$@" "$src" --each "$each" \
		>"$T/$name.json" 2>"$T/$name.err"
}
# hop_state JSON POS - the state the source's --json gives receiver POS
hop_state()
{
	python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(j["per_receiver"][int(sys.argv[2]) - 1]["state"])' "$1" "$2" 2>/dev/null || echo none
}
# dst_over I MIB - receiver I holds more than MIB MiB (files and partials)
# shellcheck disable=SC2317  # run by wait_for
dst_over()
{
	[ "$(du -sm "$SCRATCH/d$1" 2>/dev/null | cut -f1)" -gt "$2" ]
}

note "the tree to $N receivers"
fresh
t0=$(date +%s.%N)
broadcast all || fail_logs "--each to $N receivers: exit $?" "$T/all.err"
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
for ((i = 1; i <= N; i++)); do
	tree_equal "$src" "$SCRATCH/d$i/src"
	[ "$(hop_state "$T/all.json" $i)" = complete ] || fail "receiver $i not complete in the --json"
done
# each forwarding node sent the large file's chunks on from its ring as
# they came (the small files go once complete), copying none first
big_bytes=$((BIG_MIB << 20))
for ((i = 1; i < N; i++)); do
	check_grep "forwarded on its behalf to $net.$((21 + i)):7471" "$T/recv$i.log" \
		"receiver $i's log line names the hop it forwarded to"
	read -r ring copied < <(sed -n 's/.*; \([0-9]*\) bytes from the ring, \([0-9]*\) copied first).*/\1 \2/p' \
		"$T/recv$i.log" | tail -n 1)
	if [ "${ring:-0}" -lt $((big_bytes * 9 / 10)) ] || [ "${copied:-1}" -ne 0 ]; then
		fail_logs "receiver $i forwarded ${ring:-no} bytes from its ring (${copied:-?} copied): not the large file's" "$T/recv$i.log"
	fi
done
ok "$N receivers identical to the source in $secs s ($tree_mib MiB over $RATE links); each hop forwarded the large file from its ring"
stop_recvs

note "receiver 2 killed mid-transfer; then the same command again"
fresh
broadcast kill &
job=$!
track $job
wait_for 120 dst_over 2 $((BIG_MIB / 4)) || { cat "$T/kill.err" >&2; fail "receiver 2 got nothing"; }
kill -KILL "${RPID[2]}"
wait_pid $job $limit
[ "$WAIT_RC" -eq 1 ] || fail_logs "receiver 2 killed: exit $WAIT_RC, not 1" "$T/kill.err"
for i in 1 3 4; do
	tree_equal "$src" "$SCRATCH/d$i/src"
done
[ "$(hop_state "$T/kill.json" 2)" = lost ] || { cat "$T/kill.json" >&2; fail "receiver 2 not named lost"; }
check_grep "2\\. $net.22: lost" "$T/kill.err" "the source's word on receiver 2"
held=$(du -sm "$SCRATCH/d2" | cut -f1)
start_recv_ns 2
before=$(sent_bytes)
broadcast again || fail_logs "the same command again: exit $?" "$T/again.err"
sent=$((($(sent_bytes) - before) >> 20))
tree_equal "$src" "$SCRATCH/d2/src"
# what receiver 2 wrote but had not yet recorded in its partial's
# journal when killed (flushed every 16 MiB, docs/architecture.md) comes again
bound=$((tree_mib - held + tree_mib * 5 / 100 + 16))
[ "$sent" -le "$bound" ] ||
	fail "the run again sent $sent MiB; receiver 2 held $held MiB of $tree_mib: at most $bound"
ok "the run again completed receiver 2: the links sent $sent MiB, it held $held of $tree_mib MiB"
stop_recvs

note "receiver 2 stopped (SIGSTOP) mid-transfer"
fresh
broadcast stop &
job=$!
track $job
wait_for 120 dst_over 2 $((BIG_MIB / 4)) || { cat "$T/stop.err" >&2; fail "receiver 2 got nothing"; }
kill -STOP "${RPID[2]}"
t0=$(date +%s)
wait_pid $job $limit
took=$(($(date +%s) - t0))
kill -CONT "${RPID[2]}"
[ "$WAIT_RC" -eq 1 ] || fail_logs "receiver 2 stopped: exit $WAIT_RC, not 1" "$T/stop.err"
for i in 1 3 4; do
	tree_equal "$src" "$SCRATCH/d$i/src"
done
[ "$(hop_state "$T/stop.json" 2)" = lost ] || { cat "$T/stop.json" >&2; fail "receiver 2 not named lost"; }
check_grep "hop 2 of the chain, $net.22:7471, is cut out \\(stalled\\)" "$T/recv1.log" \
	"receiver 1 cut the stalled receiver out"
ok "receiver 2 stopped: cut out, the others complete, $took s after it stopped"
stop_recvs

note "a relay between receivers 1 and 2 flips a bit of a chunk (loopback)"
for i in 1 2 3; do
	rm -rf "$SCRATCH/l$i" && mkdir -p "$SCRATCH/l$i"
done
small=$src/small
P=()
for i in 1 2 3; do
	P[i]=$(free_port)
	"$PXFER" recv --bind 127.0.0.1 --port "${P[$i]}" --dir "$SCRATCH/l$i" \
		>"$T/lrecv$i.log" 2>&1 &
	LPID[i]=$!
	track "${LPID[$i]}"
	wait_for 10 port_listening "${P[$i]}" || fail "loopback receiver $i did not listen"
done
RECV_PORT=${P[2]}
start_relay flip -n 3
timeout -k 5 60 "$PXFER" send --json "$small" \
	--each "127.0.0.1:${P[1]},127.0.0.1:$RELAY_PORT,127.0.0.1:${P[3]}" \
	>"$T/flip.json" 2>"$T/flip.err"
rc=$?
[ $rc -eq 1 ] || { cat "$T/flip.err" >&2; fail "a flipped chunk on hop 2: exit $rc, not 1"; }
python3 - "$T/flip.json" <<'PY' || { cat "$T/flip.json" >&2; fail "hop 2 not failed with 7"; }
import json, sys
j = json.load(open(sys.argv[1]))
r = j["per_receiver"]
assert r[0]["state"] == "complete" and r[2]["state"] == "complete", r
assert r[1]["state"] == "failed" and r[1]["code"] == 7, r
PY
tree_equal "$small" "$SCRATCH/l1/small"
tree_equal "$small" "$SCRATCH/l3/small"
check_grep "integrity" "$T/lrecv2.log" "receiver 2's word on the flipped chunk"
ok "receiver 2 refused the flipped chunk (7); receiver 3 got everything from receiver 1"
# a PATH that is a link is followed, as for one receiver, and the file
# it names is cut into ranges all the same
head -c $((40 << 20)) /dev/urandom >"$SCRATCH/mid.dat"
ln -s "$SCRATCH/mid.dat" "$SCRATCH/midlink"
timeout -k 5 60 "$PXFER" send -q "$SCRATCH/midlink" \
	--each "127.0.0.1:${P[1]},127.0.0.1:${P[3]}" 2>"$T/link.err" ||
	fail_logs "a PATH that is a link to a large file: exit $?" "$T/link.err"
for i in 1 3; do
	cmp -s "$SCRATCH/mid.dat" "$SCRATCH/l$i/midlink" ||
		fail "receiver $i: the file a PATH linked to differs"
done
ok "a PATH that is a link to a 40 MiB file: both receivers have the file"
for i in 1 2 3; do
	kill -TERM "${LPID[$i]}" 2>/dev/null
	wait_pid "${LPID[$i]}" 20
done
stop_relay
finish
