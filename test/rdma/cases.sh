#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rdma_suite: pxfer end to end over real verbs, inside ONE boot of the
# Soft-RoCE test VM (test/rdma/suite.sh runs it through test/vm/run).
# The receiver listens on the server side (rxe0, 10.77.0.1), the sender
# binds the client side (rxe1, 10.77.0.2).
#
#   tree
#      a tree (nested dirs, empty dir, empty file, symlinks, sparse file,
#      UTF-8 names, modes 0600/0755/0444/0700, set mtimes, chunk-boundary
#      sizes) and a 30 MiB file over --transport rdma with -j 1, 2 and 4:
#      bytes, modes and mtimes equal each time
#   auto
#      --transport auto picks rdma between the rxe addresses and tcp for
#      127.0.0.1, and both transfers are intact
#   receiver-killed
#      the receiver is SIGKILLed mid-transfer (80 MiB file, -j 1): the
#      sender (--retries 0) exits 4 within 60 s with a clear message;
#      every file with its final name is whole
#   resume
#      200 small files and one of 256 MiB; the sender and the receiver
#      are SIGKILLed in turn, 5 times, at different points, and after each
#      kill the same command is run again (the receiver started again on
#      its port and DIR): what arrived is kept, and of what the receiver's
#      partial holds, measured from its DIR, the next run sends again at
#      most a chunk per worker and 5% (and, after a killed receiver, the
#      16 MiB batch its journal may lack); the sixth run completes, bytes,
#      modes and mtimes equal, having sent at most what was missing, a
#      chunk per worker and 5%, and skipped the files that were complete
#   link-retry
#      the link drops every packet mid-transfer (netem loss 100% both
#      ways) until the sender gives the session up (rxe retransmits
#      without end, so that is pxfer's keepalive, after 60 s), then
#      carries again: the sender (--retries 6 --retry-wait 2) completes in
#      the same run, in 2 sessions or more, served by the same receiver;
#      tree and 80 MiB intact
#   port-down
#      the client's veth goes down mid-transfer (80 MiB, -j 1): the port
#      event fails the sender's connections (--retries 0) within 30 s,
#      with an error naming the connection and -v naming the device and
#      port; the receiver's port loses its carrier and it ends within
#      30 s; the big file has no final name; the link comes back up
#   link-down
#      the client's veth goes down mid-transfer: the sender (--retries 0)
#      fails clearly within 60 s, the receiver ends by itself within 90 s
#      of the link loss; after "rxe-link up" a new transfer works (run
#      last)
#   lossy-link
#      tc netem loss 2%, then corruption 1%, both directions: rxe
#      retransmits (counted) and the transfer completes intact
#   memlock
#      a receiver, then a sender, run as nobody with a memlock limit of
#      1024 KiB (below what one connection registers) and 16384 KiB
#      (enough for the connection, not for the rings): each fails with
#      the memlock message and its remedy, exit 5, nothing written; the
#      receiver warned when it started that its sessions' rings do not fit
#   slow-receiver
#      a receiver with 1 MiB of rings, stopped 300 ms of every 400 ms
#      (SIGSTOP/SIGCONT) during a 30 MiB transfer in 64 KiB chunks:
#      intact, no RNR counter of either device moves, and the sender's
#      -v report shows K <= B outstanding work requests, and the credit
#      bound B within the send queue's depth D, for every data connection
#   wrong-secret
#      a wrong secret over rdma: exit 3 and nothing written
#   deep-rings
#      both sides start with the smallest completion queue their shared
#      receive queue allows (PXFER_RDMA_CQ_MIN=1) and deep rings (-j 2,
#      64 KiB chunks, 256 slots each): the sender says it grew the queue,
#      and 30 MiB arrive intact; -j 4 in 16 KiB chunks, where the default
#      --ring-mem would make more slots than the shared receive queue
#      holds: the receiver offers 224 each, and the file arrives intact
#   device-gid
#      --device and --gid-index instead of --bind on both sides: the
#      transfer is intact and -v names that device and GID index on each
#      side; a device that does not exist, a GID index that does not, and
#      --device with --transport tcp each exit 2 with a message naming
#      the problem, nothing written
#   two-devices
#      one receiver on the wildcard address and two senders at once, one
#      with --device rxe1 to 10.77.0.1, one with --device rxe3 to
#      10.78.0.1 (the second veth pair), 30 MiB each: both intact, each
#      pair's client end sent them, and the receiver's -v log shows it
#      used a context on rxe0 and one on rxe2
#   rails
#      one transfer over both rails: a receiver --device rxe0,rxe2 and a
#      sender -j 4 --device rxe1,rxe3 (80 MiB): intact, two data
#      connections on each rail and each client veth sent 20 MiB or more;
#      then the second rail's link taken down in the middle: the sender
#      warns naming the rail and finishes over the first (exit 0,
#      intact); the link back up, the next transfer uses both rails
#      again; both links down: the sender fails within 60 s and nothing
#      has its final name
#   rails-back
#      the same two rails, 160 MiB, data connection 0 given up after 5
#      chunks as if it broke (PXFER_TEST_LOSE_AFTER: rxe cannot connect
#      again over a link that went down and came back, see link_restore):
#      the sender makes it again in the same session, both sides say it
#      is back, the receiver names the old one (at most 5 chunks taken)
#      and the new one (its own ring window) carries chunks to the end;
#      exit 0, intact
#   scaleout
#      a job of 2 sender ranks (mpirun --oversubscribe -np 2) to 2
#      receivers, one on each server device (rxe0, rxe2), sharing one
#      destination: the tree and a 160 MiB file cut in 64 MiB ranges,
#      over rdma: intact, both receivers' logs name rdma sessions, the
#      --json names 2 ranks that both sent units
#   chain
#      pxfer send --each to 2 receivers, one on each server device (rxe0,
#      rxe2), each with a destination of its own: the tree and a 160 MiB
#      file, the first receiver forwarding to the second, every hop over
#      rdma, the large file's chunks from the ring they arrived in with
#      none copied first: both copies intact, the first's log names the hop it
#      forwarded to, the second's an rdma session from it, the --json
#      both receivers complete
#   many
#      4 senders at once to one receiver (the tree and 30 MiB each, to a
#      destination of its own): all intact, 4 session lines in its log;
#      SIGTERM then ends the idle receiver with exit 130
#   srq-drain
#      a peer without the secret (test/helper/hostile_rdma) connects as a data
#      connection and sends empty messages, each using up one of the
#      receiver's shared receives, until 200 were taken (the queue holds
#      128 between sessions): the receiver must put them back, so that a
#      sender then gets through (-j 2, intact); and that with a half-open
#      connect (hostile_rdma -H: accepted, never established) held
#      meanwhile, the sender's handshake within --timeout 5 (an accept
#      that waited for the half-open one would take 15 s)
#   ring-forge
#      while a sender (-j 2) is stopped mid-transfer, a peer without the
#      secret takes each live ring's address and key from the receiver's
#      -v log and writes into it from its own connections (test/helper/
#      hostile_rdma -w), with and without immediate data: no write lands
#      (remote access error), the session then completes intact, and every
#      shared receive the writes used up was put back
#   protect
#      --encrypt (AES-256-GCM, then ChaCha20-Poly1305) and --integrity
#      checksum over rdma: the tree and 30 MiB intact, the receiver's log
#      names the protection; recv --require-encrypt refuses a plain
#      sender (exit 1, "encrypt" in its message), nothing written
#   doctor
#      pxfer doctor on the client: to the server, exit 0 with every rxe
#      port ACTIVE, their RoCE v2 GIDs and the client's rail to the
#      server; as nobody with a memlock limit of 64 KiB, exit 1 with the
#      memlock problem and its fix; --gid-index of a GID the peer cannot
#      use (link-local IPv6), exit 1 naming the client's RoCE v2 index;
#      the client's veth down, exit 1 naming rxe1 port 1 and
#      'ip link set veth1 up', then up again and ACTIVE before the suite
#      goes on
#
# Usage (inside the VM): test/rdma/cases.sh [-v] [CASE...]
#   CASE   names of the cases to run (default: all)
#   -v     print the logs of passed checks too
# PXFER_BUILD selects the binaries (default build/san); with
# PXFER_RDMA_LOGS=DIR every log is copied to DIR at the end.
#
# Output: one "ok - ..." or "not ok - ..." line per check, "#" lines of
# detail, and a summary. Exit status 0 only if every check passed.

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

# port-down and link-down last: they take the link down, which can upset
# the rxe driver
ALL_CASES="tree auto receiver-killed two-devices scaleout chain lossy-link memlock slow-receiver wrong-secret deep-rings device-gid many srq-drain ring-forge protect resume link-retry doctor rails rails-back port-down link-down"
cases=()
while [ $# -gt 0 ]; do
	case $1 in
	-v) VERBOSE=1 ;;
	-h|--help) sed -n '/^# rdma_suite:/,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "rdma_suite: unknown option '$1'" >&2; exit 2 ;;
	*) case " $ALL_CASES " in
	   *" $1 "*) cases+=("$1") ;;
	   *) echo "rdma_suite: no case '$1' (cases: $ALL_CASES)" >&2; exit 2 ;;
	   esac ;;
	esac
	shift
done
[ ${#cases[@]} -gt 0 ] || read -ra cases <<<"$ALL_CASES"
# how long the sender and the receiver may take to notice the link loss:
# the sender's QPs give up after 7 retries of ~268 ms; a receiver that
# only waits learns it from its idle timeout (60 s without a word)
D_SEND_BOUND=${D_SEND_BOUND:-60}
D_RECV_BOUND=${D_RECV_BOUND:-90}

if [ -z "${PXFER_RXE_VM:-}" ]; then
	echo "rdma_suite: runs inside the test VM: test/vm/run -- $0 $*" >&2
	exit 2
fi
if [ ! -x "$PXFER" ]; then
	echo "not ok - $PXFER is not built (make SAN=1)"
	exit 1
fi

W=$(mktemp -d /tmp/rdma-suite.XXXXXX)
chmod 755 "$W"		# the unprivileged cases read and write below it
LOGS=$W/logs
DATA=$W/data
mkdir -p "$LOGS" "$DATA"
LINK_DOWN=0
NETEM=0
SUITE_T0=$(now_ms)

# the logs go to the host after each case: a VM that is stopped (a kernel
# hang, test/vm/run) leaves those of the cases that finished
save_logs()
{
	if [ -n "${PXFER_RDMA_LOGS:-}" ]; then
		mkdir -p "$PXFER_RDMA_LOGS" && cp -r "$LOGS/." "$PXFER_RDMA_LOGS/" 2>/dev/null
	fi
}

cleanup()
{
	kill_leftovers
	[ "$NETEM" = 1 ] && rxe-netem both clear >/dev/null 2>&1
	[ "$LINK_DOWN" = 1 ] && rxe-link up both >/dev/null 2>&1
	save_logs
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- test data (made once) ------------------------------------------------------

gen_data()
{
	timeout 300 python3 - "$DATA" <<'EOF'
import os, random, sys

root = sys.argv[1]
rnd = random.Random(20240521)
MiB = 1 << 20
tree = os.path.join(root, "tree")
dirs = set()

def when():
    # a past time with nanoseconds, so that mtimes are really carried over
    return rnd.randrange(978307200, 1700000000) * 10**9 + rnd.randrange(10**9)

def put(rel, data, mode):
    p = os.path.join(tree, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
    os.chmod(p, mode)
    t = when()
    os.utime(p, ns=(t, t))

modes = [0o600, 0o755, 0o444, 0o644]
for i in range(320):
    rel = "d%d/s%d/f%03d.bin" % (i % 10, (i // 10) % 3, i)
    size = rnd.choice([0, 1, 100, 4095, 4096, 4097] + [rnd.randrange(1, 24576)] * 6)
    put(rel, rnd.randbytes(size), modes[i % 4])
put("deep/a/b/c/d/e/f/g/leaf.txt", b"at the bottom\n", 0o644)
put("chunk/one-less", rnd.randbytes(MiB - 1), 0o644)
put("chunk/exact", rnd.randbytes(MiB), 0o600)
put("chunk/one-more", rnd.randbytes(MiB + 1), 0o755)
put("empty", b"", 0o644)
put("donn\u00e9es-\u00fc-\u65e5\u672c\u8a9e-\U0001f680.txt", "h\u00e9 \u2713\n".encode(), 0o644)
put("r\u00e9pertoire-\u00df/fichier-\u00e9t\u00e9", b"utf-8 directory\n", 0o444)
put("private/secret.txt", b"0700 directory\n", 0o600)
os.makedirs(os.path.join(tree, "empty-dir"))
os.makedirs(os.path.join(tree, "x/y/empty-leaf"))

# a sparse file: 4 MiB with three islands of data
p = os.path.join(tree, "sparse.img")
with open(p, "wb") as f:
    f.truncate(4 * MiB)
    for off, data in ((0, b"head"), (2 * MiB + 5, b"middle"), (4 * MiB - 4, b"tail")):
        f.seek(off)
        f.write(data)
os.chmod(p, 0o644)
t = when()
os.utime(p, ns=(t, t))

for name, target in (("link-file", "d0/s0/f000.bin"), ("link-dir", "d1")):
    p = os.path.join(tree, name)
    os.symlink(target, p)
    t = when()
    os.utime(p, ns=(t, t), follow_symlinks=False)

# directories last, deepest first, so their mtimes stay as set
for d, subdirs, files in sorted(os.walk(tree), key=lambda e: -e[0].count("/")):
    os.chmod(d, 0o700 if d.endswith("/private") else 0o755)
    t = when()
    os.utime(d, ns=(t, t))

def blob(name, size, mode=0o644):
    p = os.path.join(root, name)
    with open(p, "wb") as f:
        left = size
        while left:
            n = min(left, 4 * MiB)
            f.write(rnd.randbytes(n))
            left -= n
    os.chmod(p, mode)
    t = when()
    os.utime(p, ns=(t, t))

blob("big", 30 * MiB)
blob("kill", 80 * MiB)
blob("medium", 3 * MiB, 0o640)

# world-readable files for the unprivileged cases
pub = os.path.join(root, "pub")
os.makedirs(pub)
for i in range(3):
    with open(os.path.join(pub, "p%d" % i), "wb") as f:
        f.write(rnd.randbytes(64 * 1024))
    os.chmod(os.path.join(pub, "p%d" % i), 0o644)
os.chmod(pub, 0o755)
EOF
}

# ---- helpers for the cases ------------------------------------------------------

# recv_done LIMIT - wait for the receiver (LIMIT s, 5 s when the sender
# failed: a --once receiver may wait for a transfer that never comes)
recv_done()
{
	if [ "${SEND_RC:-0}" -ne 0 ]; then
		wait_pid "$RECV_PID" 5
	else
		wait_pid "$RECV_PID" "$1"
	fi
	RECV_RC=$WAIT_RC
	echo "# exit $RECV_RC" >>"$RECV_LOG"
}

# grep_log REGEX FILE LOG - 0 if FILE has a line matching REGEX (extended,
# case-insensitive); else say so in LOG
grep_log()
{
	grep -qiE -- "$1" "$2" && return 0
	echo "no line matching '$1' in ${2##*/}" >>"$3"
	return 1
}

# error_line FILE - the first line of FILE that reports an error
error_line()
{
	grep -m 1 -iE '^(error|pxfer: error|warning)|error:' "$1" | tr -d '\r' | cut -c 1-220
}

# summary_rate FILE - the "(N MiB/s)" of the sender's summary
summary_rate()
{
	sed -n 's/.* in \([0-9.]* s\) (\([^)]*\)).*/\1, \2/p' "$1" | head -n 1
}

# wr_report FILE LOG - the sender's per-connection lines "N chunks, at
# most K work requests outstanding (credit bound B, send queue depth D)":
# 0 if there is at least one and K <= B <= D < 64 in all (the queue is
# sized from the receiver's slots, 8 in the slow-receiver case, not for the largest
# ring); WR_LINES, WR_SUMMARY describe them
wr_report()
{
	local line re='data connection to [^ ]*: ([0-9]+) chunks, at most ([0-9]+) work requests outstanding \(credit bound ([0-9]+), send queue depth ([0-9]+)' bad=0

	WR_LINES=0
	WR_SUMMARY=
	while IFS= read -r line; do
		[[ $line == *"work requests outstanding"* ]] || continue
		if [[ $line =~ $re ]]; then
			WR_LINES=$((WR_LINES + 1))
			WR_SUMMARY+="${BASH_REMATCH[1]} chunks: K=${BASH_REMATCH[2]} B=${BASH_REMATCH[3]} D=${BASH_REMATCH[4]}; "
			if [ "${BASH_REMATCH[2]}" -gt "${BASH_REMATCH[3]}" ]; then
				echo "more work requests outstanding than the credit bound: $line" >>"$2"
				bad=1
			fi
			if [ "${BASH_REMATCH[3]}" -gt "${BASH_REMATCH[4]}" ]; then
				echo "the credit bound exceeds the send queue: $line" >>"$2"
				bad=1
			fi
			if [ "${BASH_REMATCH[4]}" -ge 64 ]; then
				echo "the send queue is not sized by the receiver's slots: $line" >>"$2"
				bad=1
			fi
		else
			echo "cannot read the credit bound and queue depth in: $line" >>"$2"
			bad=1
		fi
	done < <(tr -d '\r' <"$1")
	WR_SUMMARY=${WR_SUMMARY%; }
	if [ "$WR_LINES" -eq 0 ]; then
		echo "no 'at most K work requests outstanding (credit bound B ...)' line in ${1##*/}" >>"$2"
		bad=1
	fi
	return $bad
}

# dir_empty DIR - nothing at all below DIR
dir_empty()
{
	[ -z "$(find "$1" -mindepth 1 -print -quit)" ]
}

# ---- tree: end to end over rdma --------------------------------------------------------

case_tree()
{
	local j dst log rc entries

	entries=$(cd "$DATA/tree" && find . | wc -l)
	for j in 1 2 4; do
		dst=$W/tree$j
		log=$LOGS/tree$j.check.log
		rc=0
		mkdir -p "$dst"
		: >"$log"
		if ! start_recv "tree$j" "$dst" --transport rdma --bind "$SRV_ADDR"; then
			fail "tree: -j $j: the receiver did not start" "$RECV_LOG"
			kill_leftovers
			continue
		fi
		rdma_send "tree$j" 240 -v -j "$j" "$DATA/tree" "$DATA/big" "$SRV_ADDR:$RECV_PORT"
		recv_done 30
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
		grep_log " over rdma" "$SEND_LOG" "$log" || rc=1
		grep_log "through device $CLI_DEV port 1, GID index ${PXFER_RXE_CLIENT_GID:-[0-9]+} \(RoCE v2" \
			"$SEND_LOG" "$log" || rc=1
		grep_log "through device $SRV_DEV port 1, GID index ${PXFER_RXE_SERVER_GID:-[0-9]+} \(RoCE v2, ::ffff:$SRV_ADDR\)" \
			"$RECV_LOG" "$log" || rc=1
		if [ "$j" -gt 1 ]; then
			[ "$(grep -c 'accepted a data connection' "$RECV_LOG")" -eq "$j" ] ||
				{ echo "the receiver did not accept $j data connections" >>"$log"; rc=1; }
		fi
		same_tree "$DATA/tree" "$dst/tree" "$log" || rc=1
		same_file "$DATA/big" "$dst/big" "$log" || rc=1
		check $rc "tree: -j $j: tree ($entries entries) and 30 MiB over rdma; bytes, modes, mtimes equal ($SEND_SECS s; $(summary_rate "$SEND_LOG"))" \
			"$log" "$SEND_LOG" "$RECV_LOG"
		kill_leftovers
		rm -rf "$dst"
	done
}

# ---- auto: transport auto ----------------------------------------------------------------

case_auto()
{
	local dst log rc

	# between the rxe addresses: rdma
	dst=$W/b1
	log=$LOGS/auto1.check.log
	rc=0
	mkdir -p "$dst"
	: >"$log"
	if start_recv auto1 "$dst" --bind "$SRV_ADDR"; then
		grep_log "\(rdma\)" "$RECV_LOG" "$log" || rc=1
		run_send auto1 120 -v -j 2 --transport auto --bind "$CLI_ADDR" \
			"$DATA/tree" "$SRV_ADDR:$RECV_PORT"
		recv_done 30
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
		grep_log "transport auto: .*, so rdma" "$SEND_LOG" "$log" || rc=1
		grep_log "sent .* over rdma" "$SEND_LOG" "$log" || rc=1
		same_tree "$DATA/tree" "$dst/tree" "$log" || rc=1
	else
		rc=1
	fi
	check $rc "auto: auto between the rxe addresses picks rdma: \"$(grep -m 1 -o 'transport auto: .*' "$SEND_LOG" 2>/dev/null)\"; tree intact" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"

	# to 127.0.0.1: no RDMA device routes there, so tcp
	dst=$W/b2
	log=$LOGS/auto2.check.log
	rc=0
	mkdir -p "$dst"
	: >"$log"
	if start_recv auto2 "$dst"; then
		run_send auto2 120 -v -j 2 --transport auto "$DATA/tree" "127.0.0.1:$RECV_PORT"
		recv_done 30
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
		grep_log "transport auto: .*, so tcp" "$SEND_LOG" "$log" || rc=1
		grep_log "sent .* over tcp" "$SEND_LOG" "$log" || rc=1
		same_tree "$DATA/tree" "$dst/tree" "$log" || rc=1
	else
		rc=1
	fi
	check $rc "auto: auto to 127.0.0.1 picks tcp: \"$(grep -m 1 -o 'transport auto: .*' "$SEND_LOG" 2>/dev/null)\"; tree intact" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# ---- receiver-killed: the receiver is killed ----------------------------------------------------------

case_receiver_killed()
{
	local dst=$W/receiver-killed log=$LOGS/receiver-killed.check.log rc=0 msg

	mkdir -p "$dst"
	: >"$log"
	if ! start_recv receiver-killed "$dst" --transport rdma --bind "$SRV_ADDR"; then
		fail "receiver-killed: the receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	# the tree first (those files complete), then 80 MiB; the kill comes
	# when about 8 MiB of the big file have crossed the veth. The case is
	# about the failure: --retries 0 (with the default 5 the sender would
	# knock for a minute at a receiver that is gone)
	wire_mark
	bg_send c -v -j 1 --retries 0 --transport rdma --bind "$CLI_ADDR" "$DATA/tree" "$DATA/kill" \
		"$SRV_ADDR:$RECV_PORT"
	if ! wait_for 90 wire_at_least $((TREE_BYTES + (8 << 20))); then
		fail "receiver-killed: the 80 MiB file did not start arriving within 90 s" "$SEND_LOG" "$RECV_LOG"
		kill_leftovers
		rm -rf "$dst"
		return
	fi
	kill -KILL "$RECV_PID"
	note "receiver-killed: killed the receiver after $WIRE_BYTES bytes on the wire, $(part_bytes "$dst") bytes of the 80 MiB file written"
	wait_pid "$SEND_PID" 60
	echo "# exit $WAIT_RC after $WAIT_SECS s" >>"$SEND_LOG"
	echo "sender exit $WAIT_RC, $WAIT_SECS s after the kill" >>"$log"
	[ "$WAIT_RC" -eq 4 ] || rc=1
	msg=$(error_line "$SEND_LOG")
	grep_log "error: .*(receiver|connection|peer)" "$SEND_LOG" "$log" || rc=1
	check $rc "receiver-killed: receiver killed: the sender exits $WAIT_RC after $WAIT_SECS s (bound 60 s): \"$msg\"" \
		"$log" "$SEND_LOG" "$RECV_LOG"

	rc=0
	: >"$log"
	finals_intact "$DATA" "$dst" "$log" || rc=1
	[ -e "$dst/kill" ] && { echo "'kill' has its final name" >>"$log"; rc=1; }
	check $rc "receiver-killed: receiver killed: the $FINALS files with a final name are complete and equal; 'kill' has none" "$log"
	kill_leftovers
	rm -rf "$dst"
}

# ---- two-devices: one receiver, a device context for each rail --------------------------------

# two_devices_rails - what the rdma transport says of the rails: one per
# rxe device, each with its address and /24, up; the rail of an address;
# the source address of each of two devices
two_devices_rails()
{
	local log=$LOGS/two-devices-rails.check.log hr=$build/test/helper/rails_rdma rc=0 d a

	: >"$log"
	{ "$hr" local && "$hr" query "$SRV_ADDR2" 10.99.0.1 &&
	  "$hr" sources "$CLI_DEV,$CLI_DEV2:1"; } >"$log.out" 2>&1 || rc=1
	cat "$log.out" >>"$log"
	for d in "$SRV_DEV=$SRV_ADDR" "$CLI_DEV=$CLI_ADDR" "$SRV_DEV2=$SRV_ADDR2" "$CLI_DEV2=$CLI_ADDR2"; do
		a=${d#*=}
		[ "$(grep -c "^rail $a/24 dev ${d%%=*} port 1 numa -\{0,1\}[0-9]* up 1\$" "$log.out")" -ge 1 ] ||
			{ echo "no rail $a/24 on ${d%%=*} port 1, up" >>"$log"; rc=1; }
	done
	grep -q '^none 10.99.0.1$' "$log.out" || { echo "10.99.0.1 is not 'none'" >>"$log"; rc=1; }
	grep -q "^# $CLI_DEV port 1: $CLI_ADDR, $CLI_DEV2 port 1: $CLI_ADDR2\$" "$log.out" ||
		{ echo "the sources of $CLI_DEV,$CLI_DEV2:1 are not $CLI_ADDR, $CLI_ADDR2" >>"$log"; rc=1; }
	check $rc "two-devices: the rdma rails: one per rxe device with its address, /24, up; the rail of $SRV_ADDR2; the sources of $CLI_DEV and $CLI_DEV2" "$log"
}

case_two_devices()
{
	local dst=$W/two-devices log=$LOGS/two-devices.check.log rc=0 k pid1 pid2
	local tx1 tx2 sent1 sent2 mib=$((30 << 20))

	mkdir -p "$dst"
	: >"$log"
	two_devices_rails
	# no --bind: the wildcard address takes connect requests from every
	# device, and each device the process uses gets a context of its own
	if ! start_server two-devices "$dst" --transport rdma; then
		fail "two-devices: the receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	tx1=$(if_bytes "$CLI_IF" tx)
	tx2=$(if_bytes "$CLI_IF2" tx)
	bg_send two-devices1 -v -j 2 --transport rdma --device "$CLI_DEV" \
		"$DATA/big" "$SRV_ADDR:$RECV_PORT/d1"
	pid1=$SEND_PID
	bg_send two-devices2 -v -j 2 --transport rdma --device "$CLI_DEV2" \
		"$DATA/big" "$SRV_ADDR2:$RECV_PORT/d2"
	pid2=$SEND_PID
	for k in 1 2; do
		if [ "$k" = 1 ]; then wait_pid "$pid1" 120; else wait_pid "$pid2" 120; fi
		echo "sender $k exit $WAIT_RC after $WAIT_SECS s" >>"$log"
		[ "$WAIT_RC" -eq 0 ] || rc=1
		grep_log " over rdma" "$LOGS/two-devices$k.send.log" "$log" || rc=1
		same_file "$DATA/big" "$dst/d$k/big" "$log" || rc=1
	done
	sent1=$(($(if_bytes "$CLI_IF" tx) - tx1))
	sent2=$(($(if_bytes "$CLI_IF2" tx) - tx2))
	echo "$CLI_IF sent $sent1 bytes, $CLI_IF2 sent $sent2 bytes" >>"$log"
	if [ "$sent1" -lt "$mib" ] || [ "$sent2" -lt "$mib" ]; then
		echo "a client interface sent less than the 30 MiB it carried" >>"$log"
		rc=1
	fi
	grep_log "through device $CLI_DEV port 1" "$LOGS/two-devices1.send.log" "$log" || rc=1
	grep_log "through device $CLI_DEV2 port 1" "$LOGS/two-devices2.send.log" "$log" || rc=1
	grep_log "through device $SRV_DEV port 1" "$RECV_LOG" "$log" || rc=1
	grep_log "through device $SRV_DEV2 port 1" "$RECV_LOG" "$log" || rc=1
	grep_log "$SRV_DEV: device context ready" "$RECV_LOG" "$log" || rc=1
	grep_log "$SRV_DEV2: device context ready" "$RECV_LOG" "$log" || rc=1
	kill -TERM "$RECV_PID" 2>/dev/null
	recv_done 20
	[ "$RECV_RC" -eq 130 ] || { echo "receiver exit $RECV_RC after SIGTERM, not 130" >>"$log"; rc=1; }
	check $rc "two-devices: one receiver, a sender on $CLI_DEV and one on $CLI_DEV2 at once: both intact, $CLI_IF and $CLI_IF2 sent $((sent1 >> 20)) and $((sent2 >> 20)) MiB" \
		"$log" "$RECV_LOG" "$LOGS/two-devices1.send.log" "$LOGS/two-devices2.send.log"
	kill_leftovers
	rm -rf "$dst"
}

# ---- rails: one transfer over both rails, and a rail that fails ------------------------

# rails_send NAME LOG ARGS... - a two-rail transfer of $DATA/kill (-j 4
# over rxe1 and rxe3, to a receiver offering rxe0 and rxe2) in the
# background; sets RAIL_TX1/RAIL_TX2 to the client veths' counters now
rails_send()
{
	local name=$1 log=$2

	shift 2
	RAIL_TX1=$(if_bytes "$CLI_IF" tx)
	RAIL_TX2=$(if_bytes "$CLI_IF2" tx)
	bg_send "$name" -v -j 4 --retries 0 --transport rdma \
		--device "$CLI_DEV,$CLI_DEV2" "$@" "$DATA/kill" "$SRV_ADDR:$RECV_PORT"
}

# rails_both_moved LOG MIB - 0 when each client veth sent MIB MiB or more
# since rails_send
rails_both_moved()
{
	local s1 s2

	s1=$(($(if_bytes "$CLI_IF" tx) - RAIL_TX1))
	s2=$(($(if_bytes "$CLI_IF2" tx) - RAIL_TX2))
	echo "$CLI_IF sent $((s1 >> 20)) MiB, $CLI_IF2 $((s2 >> 20)) MiB" >>"$1"
	[ "$s1" -ge $(($2 << 20)) ] && [ "$s2" -ge $(($2 << 20)) ]
}

case_rails()
{
	local dst=$W/rails log=$LOGS/rails.check.log rc=0 tdown

	mkdir -p "$dst"
	: >"$log"
	# both rails carry data
	if ! start_server rails "$dst" --transport rdma --device "$SRV_DEV,$SRV_DEV2"; then
		fail "rails: the receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	rails_send rails1 "$log"
	wait_pid "$SEND_PID" 120
	echo "sender exit $WAIT_RC after $WAIT_SECS s" >>"$log"
	[ "$WAIT_RC" -eq 0 ] || rc=1
	same_file "$DATA/kill" "$dst/kill" "$log" || rc=1
	grep_log "rail 0: $CLI_DEV:1 $CLI_ADDR -> $SRV_ADDR, 2 data connection" "$SEND_LOG" "$log" || rc=1
	grep_log "rail 1: $CLI_DEV2:1 $CLI_ADDR2 -> $SRV_ADDR2, 2 data connection" "$SEND_LOG" "$log" || rc=1
	rails_both_moved "$log" 20 || rc=1
	check $rc "rails: -j 4 over $CLI_DEV and $CLI_DEV2: intact, both rails carried data ($(tail -n 1 "$log"))" \
		"$log" "$SEND_LOG" "$RECV_LOG"

	# the second rail's link goes down in the middle: the first finishes
	rc=0
	rm -f "$dst/kill"
	wire_mark
	rails_send rails2 "$log"
	if ! wait_for 90 wire_at_least $((8 << 20)); then
		fail "rails: the file did not start arriving within 90 s" "$SEND_LOG" "$RECV_LOG"
		kill_leftovers
		return
	fi
	tdown=$(now_ms)
	ip link set dev "$CLI_IF2" down >>"$log" 2>&1
	note "rails: took $CLI_IF2 down after $WIRE_BYTES bytes on the wire"
	wait_pid "$SEND_PID" 120
	echo "sender exit $WAIT_RC, $WAIT_SECS s after the second rail went down" >>"$log"
	[ "$WAIT_RC" -eq 0 ] || rc=1
	same_file "$DATA/kill" "$dst/kill" "$log" || rc=1
	grep_log "warning: data connection [0-9] \\($CLI_DEV2:1 $CLI_ADDR2 -> $SRV_ADDR2\\) failed: .*go again over the" \
		"$SEND_LOG" "$log" || rc=1
	[ -z "$(find "$dst" -name '.pxfer-*.part')" ] || { echo "temporary files left" >>"$log"; rc=1; }
	check $rc "rails: $CLI_IF2 down mid-transfer: the sender exits $WAIT_RC after $(secs_since "$tdown") s, intact over $CLI_DEV: \"$(grep -m 1 'failed:' "$SEND_LOG")\"" \
		"$log" "$SEND_LOG" "$RECV_LOG"

	# the rail comes back: the next transfer uses it again
	rc=0
	kill -TERM "$RECV_PID" 2>/dev/null
	recv_done 20
	kill_leftovers
	rxe-link up both2 >>"$log" 2>&1
	# (the rxe driver may leave rdma_cm dead on a device whose link went
	# down under a connection: see link_restore; no process may hold the
	# devices while they are made again)
	if ! rdma_cm_works "$SRV_ADDR2" "$CLI_ADDR2"; then
		note "rails: rdma_cm (rping) fails over the second rail after its link came back: the rxe driver, not pxfer; recreating $SRV_DEV2 and $CLI_DEV2"
		rxe_recreate "$SRV_DEV2" "$SRV_IF2" "$CLI_DEV2" "$CLI_IF2" >>"$log" 2>&1 ||
			note "rails: recreating the second rail's rxe devices failed"
	fi
	rm -f "$dst/kill"
	if ! start_server rails "$dst" --transport rdma --device "$SRV_DEV,$SRV_DEV2"; then
		fail "rails: the receiver did not start again" "$RECV_LOG"
		kill_leftovers
		return
	fi
	rails_send rails3 "$log"
	wait_pid "$SEND_PID" 120
	[ "$WAIT_RC" -eq 0 ] || rc=1
	same_file "$DATA/kill" "$dst/kill" "$log" || rc=1
	rails_both_moved "$log" 20 || rc=1
	check $rc "rails: $CLI_IF2 back up: the next transfer carries data over both rails again ($(tail -n 1 "$log"))" \
		"$log" "$SEND_LOG"

	# both rails down: a clear error in bounded time, nothing final-named
	rc=0
	rm -f "$dst/kill"
	wire_mark
	rails_send rails4 "$log"
	if wait_for 90 wire_at_least $((8 << 20)); then
		tdown=$(now_ms)
		LINK_DOWN=1
		ip link set dev "$CLI_IF" down >>"$log" 2>&1
		ip link set dev "$CLI_IF2" down >>"$log" 2>&1
		wait_pid "$SEND_PID" 60
		echo "sender exit $WAIT_RC, $WAIT_SECS s after both rails went down" >>"$log"
		[ "$WAIT_RC" -ne 0 ] && [ "$WAIT_RC" -ne 124 ] || rc=1
		grep_log "error: " "$SEND_LOG" "$log" || rc=1
		[ -e "$dst/kill" ] && { echo "'kill' has its final name" >>"$log"; rc=1; }
		check $rc "rails: both rails down: the sender exits $WAIT_RC after $(secs_since "$tdown") s (bound 60 s): \"$(error_line "$SEND_LOG")\"; 'kill' has no final name" \
			"$log" "$SEND_LOG"
	else
		fail "rails: the last file did not start arriving within 90 s" "$SEND_LOG" "$RECV_LOG"
	fi
	kill -TERM "$RECV_PID" 2>/dev/null
	recv_done 20
	kill_leftovers
	rxe-link up both2 >>"$log" 2>&1
	rdma_cm_works "$SRV_ADDR2" "$CLI_ADDR2" ||
		rxe_recreate "$SRV_DEV2" "$SRV_IF2" "$CLI_DEV2" "$CLI_IF2" >>"$log" 2>&1
	link_restore rails "$tdown" "$log"
	rm -rf "$dst"
}

# ---- rails-back: a lost data connection made again, in the same session -------------------

case_rails_back()
{
	local dst=$W/rails-back src=$W/back log=$LOGS/rails-back.check.log rc=0 n send_rc

	mkdir -p "$dst" "$src"
	: >"$log"
	[ -f "$src/big" ] || head -c $((160 << 20)) /dev/urandom >"$src/big"
	if ! start_server rails-back "$dst" --transport rdma --device "$SRV_DEV,$SRV_DEV2"; then
		fail "rails-back: the receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	# rxe cannot make connections again on a link that went down and
	# came back (see link_restore): data connection 0 is given up after
	# 20 chunks instead, as if it broke (a test's switch)
	SEND_WRAP=(env PXFER_TEST_LOSE_AFTER=5)
	bg_send rails-back -v -j 4 --retries 0 --transport rdma \
		--device "$CLI_DEV,$CLI_DEV2" "$src/big" "$SRV_ADDR:$RECV_PORT"
	SEND_WRAP=()
	wait_pid "$SEND_PID" 180
	send_rc=$WAIT_RC
	echo "sender exit $send_rc after $WAIT_SECS s" >>"$log"
	[ "$send_rc" -eq 0 ] || rc=1
	same_file "$src/big" "$dst/big" "$log" || rc=1
	grep_log "warning: data connection 0 \\($CLI_DEV:1 $CLI_ADDR -> $SRV_ADDR\\) failed: .*go again over the 3 left" \
		"$SEND_LOG" "$log" || rc=1
	grep_log "data connection 0 \\($CLI_DEV:1 $CLI_ADDR -> $SRV_ADDR\\) is back: it carries data again" \
		"$SEND_LOG" "$log" || rc=1
	kill -TERM "$RECV_PID" 2>/dev/null
	recv_done 20
	# the receiver's -v log: the old connection (at most the 5 chunks
	# sent on it taken: those in flight were flushed) replaced, and the
	# new one (a new memory window on a new queue pair) carried chunks to
	# the end
	grep_log "data connection 0 from $CLI_ADDR:[0-9]*: [0-5] chunks, then lost" "$RECV_LOG" "$log" || rc=1
	grep_log "data connection 0 from $CLI_ADDR:[0-9]* is back: it carries data again" "$RECV_LOG" "$log" || rc=1
	n=$(grep -cE "data connection 0 from $CLI_ADDR:[0-9]+: [1-9][0-9]* chunks$" "$RECV_LOG")
	echo "$n new connection(s) 0 that carried chunks" >>"$log"
	[ "$n" -eq 1 ] || rc=1
	[ "$(grep -c "a window bound to its queue pair" "$RECV_LOG")" -eq 5 ] || {
		echo "not 5 rings with a window each (4 connections and the new one)" >>"$log"
		rc=1
	}
	check $rc "rails-back: data connection 0 given up after 5 chunks: made again in the same session, carried chunks to the end; exit $send_rc, intact" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# ---- after a link loss ---------------------------------------------------------------------

# link_restore CASE T0 LOG [recreate] - bring the first pair's links up
# again (down since now_ms printed T0), and make sure rdma_cm works over
# them; with "recreate", recreate the rxe devices without asking rping
# first
link_restore()
{
	local name=$1 t0=$2 log=$3 how=${4:-}

	rxe-link up both >>"$log" 2>&1 && LINK_DOWN=0
	note "$name: $CLI_IF up again $(secs_since "$t0") s after it went down"
	# rxe in 6.1 can leave a device's rdma_cm (MAD) traffic dead after a
	# process exits while its link is down (see docs/testing.md); tell
	# that apart from pxfer with rping, and recreate the devices if so
	if [ "$how" = recreate ]; then
		note "$name: a process gave its connections up while its link was down, which leaves rdma_cm dead on rxe 6.1: recreating $SRV_DEV and $CLI_DEV"
	elif ! rdma_cm_works; then
		note "$name: rdma_cm itself (rping) fails after the link came back: the rxe driver, not pxfer; recreating $SRV_DEV and $CLI_DEV"
	else
		return 0
	fi
	rxe_recreate >>"$log" 2>&1 || note "$name: recreating the rxe devices failed: $(tail -n 3 "$log" | tr '\n' ' ')"
	rdma_cm_works || note "$name: rdma_cm still fails (rping) after recreating the devices"
}

# ---- port-down: the port goes down under the connections -----------------------------------

case_port_down()
{
	local dst=$W/port-down log=$LOGS/port-down.check.log rc=0 msg tdown rsecs

	mkdir -p "$dst"
	: >"$log"
	if ! start_recv port-down "$dst" --transport rdma --bind "$SRV_ADDR"; then
		fail "port-down: the receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	wire_mark
	bg_send port-down -v -j 1 --retries 0 --transport rdma --bind "$CLI_ADDR" \
		"$DATA/kill" "$SRV_ADDR:$RECV_PORT"
	if ! wait_for 90 wire_at_least $((4 << 20)); then
		fail "port-down: the 80 MiB file did not start arriving within 90 s" "$SEND_LOG" "$RECV_LOG"
		kill_leftovers
		rm -rf "$dst"
		return
	fi
	# ip itself, not rxe-link: a script takes seconds to start here
	tdown=$(now_ms)
	LINK_DOWN=1
	ip link set dev "$CLI_IF" down >>"$log" 2>&1
	note "port-down: took $CLI_IF down after $WIRE_BYTES bytes on the wire"
	wait_pid "$SEND_PID" 30
	echo "# exit $WAIT_RC after $WAIT_SECS s" >>"$SEND_LOG"
	echo "sender exit $WAIT_RC, $WAIT_SECS s after the link went down" >>"$log"
	[ "$WAIT_RC" -ne 0 ] && [ "$WAIT_RC" -ne 124 ] || rc=1
	msg=$(error_line "$SEND_LOG")
	# the port event, with -v, and an error that names the connection
	grep_log "rdma: $CLI_DEV port 1 went down" "$SEND_LOG" "$log" || rc=1
	grep_log "error: .*connection .*$SRV_ADDR" "$SEND_LOG" "$log" || rc=1
	# and the rail says so
	"$build/test/helper/rails_rdma" query "$CLI_ADDR" >>"$log" 2>&1
	grep_log "^rail $CLI_ADDR/24 dev $CLI_DEV port 1 .* up 0\$" "$log" "$log" || rc=1
	check $rc "port-down: port down: the sender exits $WAIT_RC after $WAIT_SECS s (bound 30 s): \"$msg\"" \
		"$log" "$SEND_LOG"

	# the server's end lost its carrier: its port went down too
	rc=0
	wait_pid "$RECV_PID" $((30 - ($(now_ms) - tdown) / 1000))
	rsecs=$(secs_since "$tdown")
	echo "# exit $WAIT_RC ($rsecs s after the link went down)" >>"$RECV_LOG"
	[ "$WAIT_RC" -ne 124 ] ||
		{ echo "the receiver still ran $rsecs s after the link went down; killed" >>"$log"; rc=1; }
	grep_log "rdma: $SRV_DEV port 1 went down" "$RECV_LOG" "$log" || rc=1
	finals_intact "$DATA" "$dst" "$log" || rc=1
	[ -e "$dst/kill" ] && { echo "'kill' has its final name" >>"$log"; rc=1; }
	check $rc "port-down: port down: the receiver ends $rsecs s after the link loss (bound 30 s), 'kill' has no final name: \"$(error_line "$RECV_LOG")\"" \
		"$log" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
	# the sender ended while its link was down: rping would only time out
	link_restore port-down "$tdown" "$log" recreate
}

# ---- link-down: the link goes down ----------------------------------------------------------------

case_link_down()
{
	local dst=$W/link-down log=$LOGS/link-down.check.log rc=0 msg tdown rsecs

	mkdir -p "$dst"
	: >"$log"
	if ! start_recv link-down "$dst" --transport rdma --bind "$SRV_ADDR"; then
		fail "link-down: the receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	wire_mark
	# about the failure, as in receiver-killed: --retries 0
	bg_send d -v -j 2 --retries 0 --transport rdma --bind "$CLI_ADDR" "$DATA/tree" "$DATA/kill" \
		"$SRV_ADDR:$RECV_PORT"
	if ! wait_for 90 wire_at_least $((TREE_BYTES + (4 << 20))); then
		fail "link-down: the 80 MiB file did not start arriving within 90 s" "$SEND_LOG" "$RECV_LOG"
		kill_leftovers
		rm -rf "$dst"
		return
	fi
	# the client end goes down (admin down: its routes go too); the
	# server end loses its carrier. ip itself, not rxe-link: a script
	# takes seconds to start here while the transfer goes on
	tdown=$(now_ms)
	LINK_DOWN=1
	ip link set dev "$CLI_IF" down >>"$log" 2>&1
	note "link-down: took $CLI_IF down after $WIRE_BYTES bytes on the wire, $(part_bytes "$dst") bytes of the 80 MiB file written"
	wait_pid "$SEND_PID" "$D_SEND_BOUND"
	echo "# exit $WAIT_RC after $WAIT_SECS s" >>"$SEND_LOG"
	echo "sender exit $WAIT_RC, $WAIT_SECS s after the link went down" >>"$log"
	[ "$WAIT_RC" -ne 0 ] && [ "$WAIT_RC" -ne 124 ] || rc=1
	msg=$(error_line "$SEND_LOG")
	# an error that says why: the network or interface down (the port
	# event), the peer gone, a timeout
	grep_log "error: .*(network is down|interface is down|gone|unreachable|closed the connection|timed out|no word)" \
		"$SEND_LOG" "$log" || rc=1
	check $rc "link-down: link down: the sender exits $WAIT_RC after $WAIT_SECS s (bound $D_SEND_BOUND s): \"$msg\"" \
		"$log" "$SEND_LOG"

	# the link stays down: the receiver has to notice by itself
	wait_pid "$RECV_PID" $((D_RECV_BOUND - ($(now_ms) - tdown) / 1000))
	rsecs=$(secs_since "$tdown")
	echo "# exit $WAIT_RC ($rsecs s after the link went down)" >>"$RECV_LOG"
	rc=0
	if [ "$WAIT_RC" -eq 124 ]; then
		echo "the receiver still ran $rsecs s after the link went down" \
			"(its sender was gone); killed" >>"$log"
		rc=1
	fi
	check $rc "link-down: link down: the receiver ends by itself within $D_RECV_BOUND s of the link loss (exit $WAIT_RC after $rsecs s: \"$(error_line "$RECV_LOG")\")" \
		"$log" "$RECV_LOG"
	if [ "$WAIT_RC" -ne 124 ]; then
		rc=0
		have_part "$dst" && { echo "temporary files left: $(find "$dst" -name '.pxfer-*.part')" >>"$log"; rc=1; }
		check $rc "link-down: link down: the receiver removed its temporary files" "$log"
	fi
	rc=0
	: >"$log"
	finals_intact "$DATA" "$dst" "$log" || rc=1
	[ -e "$dst/kill" ] && { echo "'kill' has its final name" >>"$log"; rc=1; }
	check $rc "link-down: link down: the $FINALS files with a final name are complete and equal" "$log"
	kill_leftovers
	rm -rf "$dst"

	link_restore link-down "$tdown" "$log"

	# a new transfer over the restored link
	dst=$W/d2
	log=$LOGS/link-down2.check.log
	rc=0
	mkdir -p "$dst"
	: >"$log"
	if start_recv link-down2 "$dst" --transport rdma --bind "$SRV_ADDR"; then
		rdma_send link-down2 120 -v -j 2 "$DATA/tree" "$DATA/medium" "$SRV_ADDR:$RECV_PORT"
		recv_done 30
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
		same_tree "$DATA/tree" "$dst/tree" "$log" || rc=1
		same_file "$DATA/medium" "$dst/medium" "$log" || rc=1
	else
		rc=1
	fi
	check $rc "link-down: after the link is back up, a new transfer over rdma is intact ($SEND_SECS s)" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# ---- resume: runs killed one after another, each taken up by the next ------------------

# resume_data SRC MIB - a tree for resume: a file of MIB MiB and 200 small
# ones (none over 1 MiB, so only the big one has a partial), modes and
# mtimes set
resume_data()
{
	mkdir -p "$1/small" || return 1
	head -c $(($2 << 20)) /dev/urandom >"$1/big" || return 1
	chmod 640 "$1/big"
	touch -d '@1600000000.123456789' "$1/big"
	timeout 120 python3 - "$1/small" <<'PY'
import os, random, sys

rnd = random.Random(20261126)
for i in range(200):
    p = os.path.join(sys.argv[1], "s%03d" % i)
    with open(p, "wb") as f:
        f.write(rnd.randbytes(rnd.randrange(0, 65536)))
    os.chmod(p, (0o600, 0o644, 0o755, 0o444)[i % 4])
    t = rnd.randrange(978307200, 1700000000) * 10**9 + rnd.randrange(10**9)
    os.utime(p, ns=(t, t))
PY
}

# resume_state SRC DST LOG - what the receiver holds of SRC, which arrives
# as DST/(the name of SRC), measured from DST alone: HELD, the bytes of
# the partial files in DST/.pxfer/partial that equal their source at the
# same offset (in 64 KiB blocks; what the receiver wrote, whether or not
# its journal says so yet); COMPLETE, the files under their final name
# with the bytes, size and mtime of their source (which the sender
# skips); MISSING, the bytes of the other files less HELD. 1 (and why in
# LOG) when a partial belongs to no file of SRC that is missing
resume_state()
{
	local out

	out=$(timeout 120 python3 - "$1" "$2" <<'PY'
import os, sys

src, dst = sys.argv[1:3]
rel = os.path.basename(src.rstrip("/"))
B = 1 << 16

def same(a, b):
    sa, sb = os.stat(a), os.stat(b)
    if sa.st_size != sb.st_size or sa.st_mtime_ns != sb.st_mtime_ns:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True

def held(a, part):
    n = 0
    with open(a, "rb") as fa, open(part, "rb") as fp:
        while True:
            x, y = fa.read(B), fp.read(B)
            if not x:
                return n
            if x == y:
                n += len(x)

missing = complete = have = 0
paths = {}
for d, _, files in os.walk(src):
    for name in files:
        p = os.path.join(d, name)
        r = os.path.relpath(p, src)
        final = os.path.join(dst, rel, r)
        if os.path.isfile(final) and same(p, final):
            complete += 1
            continue
        missing += os.path.getsize(p)
        paths[(rel + "/" + r).encode()] = p

def named(jnl):
    """the path (below DIR) journal jnl names: the names are keyed with
    the receiver's secret, the header says (the path's length a
    big-endian u16 at offset 6, the path at 40)"""
    try:
        with open(jnl, "rb") as j:
            h = j.read(40)
            return j.read(int.from_bytes(h[6:8], "big")) if len(h) == 40 else b""
    except OSError:
        return b""

stray = []
pdir = os.path.join(dst, ".pxfer", "partial")
for name in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
    if not name.endswith(".part"):
        continue
    p = paths.get(named(os.path.join(pdir, name[:-5] + ".jnl")))
    if p is None:
        stray.append(name)
        continue
    have += held(p, os.path.join(pdir, name))
print(missing - have, have, complete, " ".join(stray) or "-")
PY
) || { echo "resume_state: the python script failed" >>"$3"; return 1; }
	read -r MISSING HELD COMPLETE STRAY <<<"$out"
	[ -n "$COMPLETE" ] || { echo "resume_state: no result ('$out')" >>"$3"; return 1; }
	[ "$STRAY" = - ] && return 0
	echo "partial files of no missing file of $1: $STRAY" >>"$3"
	return 1
}

# sessions_ended - how many sessions the receiver's log says ended
sessions_ended()
{
	grep -cE ' from .* over rdma in [0-9.]+ s' "$RECV_LOG"
}

# session_ended N - for wait_for: the receiver logged more than N ends
session_ended()
{
	[ "$(sessions_ended)" -gt "$1" ] || ! alive "$RECV_PID"
}

# resumed_by FILE - the bytes a sender's -v log says the receiver held
# from before, in all files
resumed_by()
{
	sed -n 's/.*: the receiver holds \([0-9]*\) bytes of it from before; sending the rest$/\1/p' "$1" |
		awk '{ s += $1 } END { print s + 0 }'
}

# The same command is run 6 times; the sender, then the receiver, is
# killed in the first 5, when AT MiB more have crossed the link. For each
# run: what the receiver holds before it is measured from its DIR alone
# (resume_state), and the run must take it up: it resends at most a chunk
# per worker and 5% of the tree (SLACK) of the bytes the receiver's
# partial already holds (its -v log says how many it was offered). After
# a killed receiver, also the batch of records its journal did not have
# yet: they are written once 16 MiB are pending (docs/architecture.md,
# "Partial files"), more than 5% of this tree, where the loopback kill
# matrix (test/e2e/resume.sh) has a tree large enough for 5% to cover
# them. A run whose receiver is killed says what it sent: beyond what it
# resent and what arrived, at most its rings' worth was lost with the
# receiver. The last run, after a killed sender, completes and sends at
# most what was missing and SLACK.
case_resume()
{
	local src=$DATA/resume dst=$W/resume log=$LOGS/resume.check.log rc
	local mib=${RESUME_MIB:-256} total slack ring batch k who mark ended before held
	local complete resumed resent sent lost args bound after=
	local -a at=(3 40 30 50 25) whom=(sender receiver sender receiver sender)

	mkdir -p "$dst"
	: >"$log"
	if ! resume_data "$src" "$mib" >>"$log" 2>&1; then
		fail "resume: the test data could not be made" "$log"
		return
	fi
	total=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	# what a run may send again: a chunk per worker, and 5%
	slack=$((2 * (1 << 20) + total / 20))
	# what a killed receiver may take with it of what was sent: its rings
	# (2 workers x 16 slots of 1 MiB, with the default --ring-mem)
	ring=$((32 << 20))
	# the records a killed receiver's journal may lack: a batch
	batch=$((16 << 20))
	if ! start_server resume "$dst" --transport rdma --bind "$SRV_ADDR"; then
		fail "resume: the receiver did not start" "$RECV_LOG"
		return
	fi
	# the same command each time: the small files first, so that some
	# are complete when a run is killed; --retries 0, so that a run
	# whose receiver is killed ends, and the next is run by hand
	args=(--json -v -j 2 --chunk-size 1M --retries 0 --transport rdma
	      --bind "$CLI_ADDR" "$src/small" "$src/big" "$SRV_ADDR:$RECV_PORT/resume")
	if ! resume_state "$src" "$dst" "$log"; then
		fail "resume: what the receiver holds cannot be measured" "$log"
		return
	fi
	for k in 1 2 3 4 5 6; do
		rc=0
		: >"$log"
		before=$MISSING held=$HELD complete=$COMPLETE
		who=${whom[k - 1]:-}
		ended=$(sessions_ended)
		wire_mark
		if [ "$k" -lt 6 ]; then
			bg_send "resume$k" "${args[@]}"
			if ! wait_for 120 wire_at_least $((at[k - 1] << 20)); then
				fail "resume: run $k: ${at[k - 1]} MiB did not cross within 120 s" "$SEND_LOG" "$RECV_LOG"
				return
			fi
			if ! alive "$SEND_PID"; then
				fail "resume: run $k ended before it could be killed" "$SEND_LOG" "$RECV_LOG"
				return
			fi
			mark="$((WIRE_BYTES >> 20)) MiB on the wire"
		else
			run_send resume6 300 "${args[@]}"
			echo "sender exit $SEND_RC after $SEND_SECS s" >>"$log"
			[ "$SEND_RC" -eq 0 ] || rc=1
		fi
		if [ "$who" = sender ]; then
			kill -KILL "$SEND_PID"
			wait_pid "$SEND_PID" 10
			echo "# killed ($mark)" >>"$SEND_LOG"
			# the receiver ends the session, keeps the partial and
			# lets go of it before the next run asks for it
			wait_for 60 session_ended "$ended" ||
				{ echo "the receiver did not end the session within 60 s" >>"$log"; rc=1; }
			alive "$RECV_PID" || { echo "the receiver is gone" >>"$log"; rc=1; }
		elif [ "$who" = receiver ]; then
			kill -KILL "$RECV_PID"
			wait_pid "$RECV_PID" 10
			echo "# killed ($mark)" >>"$RECV_LOG"
			wait_pid "$SEND_PID" 60
			echo "# exit $WAIT_RC after $WAIT_SECS s" >>"$SEND_LOG"
			echo "the sender exited $WAIT_RC $WAIT_SECS s after its receiver was killed" >>"$log"
			[ "$WAIT_RC" -eq 4 ] || rc=1
			grep_log "error: .*(receiver|connection|peer)" "$SEND_LOG" "$log" || rc=1
			restart_server "resume-$k" "$dst" --transport rdma --bind "$SRV_ADDR" ||
				{ echo "the receiver did not start again" >>"$log"; rc=1; }
		fi
		resume_state "$src" "$dst" "$log" || rc=1
		# what the receiver held and the run sent again
		resumed=$(resumed_by "$SEND_LOG")
		resent=$((held - resumed))
		bound=$slack
		[ "$after" = receiver ] && bound=$((slack + batch))
		after=$who
		sent=$(json_num bytes_sent "$SEND_LOG")
		{
			echo "before the run: $before bytes missing, $held in the partial, $complete files complete"
			echo "the receiver offered $resumed bytes of the partial: $resent sent again (bound $bound)"
			echo "after the run: $MISSING bytes missing, $HELD in the partial, $COMPLETE files complete"
			echo "sent: ${sent:-?} bytes"
		} >>"$log"
		if [ "$resent" -gt "$bound" ]; then
			echo "the receiver's partial held $resent bytes more than it offered: they were sent again" >>"$log"
			rc=1
		elif [ "$resent" -lt 0 ]; then
			echo "the receiver offered $((-resent)) bytes more than its partial holds equal to the source" >>"$log"
			rc=1
		fi
		if [ "$k" -lt 6 ]; then
			# what arrived is kept
			[ "$MISSING" -lt "$before" ] || { echo "the run left nothing the next one can use" >>"$log"; rc=1; }
			if [ -d "$dst/resume" ]; then
				finals_intact "$src" "$dst/resume" "$log" || rc=1
			fi
			if [ -n "$sent" ]; then
				lost=$((sent - resent - (before - MISSING)))
				echo "lost with the receiver: $lost bytes (bound $ring)" >>"$log"
				[ "$lost" -le "$ring" ] || rc=1
			fi
			check $rc "resume: run $k, $who killed at $mark: it sent again $resent of the $held bytes held before (bound $bound); $((before - MISSING)) of $before missing bytes arrived and are kept (${sent:-?} sent); $COMPLETE files complete, the named ones intact" \
				"$log" "$SEND_LOG" "$RECV_LOG"
			if [ "$rc" -ne 0 ] && ! alive "$RECV_PID"; then
				return
			fi
			continue
		fi
		if [ -z "$sent" ] || [ "$sent" -gt $((before + slack)) ]; then
			echo "it sent ${sent:-?} bytes for $before missing (bound: $slack more)" >>"$log"
			rc=1
		fi
		[ "$(json_num files_same "$SEND_LOG")" = "$complete" ] ||
			{ echo "$complete files were complete, $(json_num files_same "$SEND_LOG") skipped" >>"$log"; rc=1; }
		same_tree "$src/small" "$dst/resume/small" "$log" || rc=1
		same_file "$src/big" "$dst/resume/big" "$log" || rc=1
		[ -z "$(find "$dst/.pxfer/partial" -name '*.part' 2>/dev/null)" ] ||
			{ echo "partial files left: $(ls "$dst/.pxfer/partial")" >>"$log"; rc=1; }
		check $rc "resume: run 6 completes: $total bytes intact (modes, mtimes); it sent ${sent:-?} bytes for $before missing (bound $((before + slack))), $resent of the $held held sent again, $complete complete files skipped ($SEND_SECS s)" \
			"$log" "$SEND_LOG" "$RECV_LOG"
	done
	kill_leftovers
	rm -rf "$dst" "$src"
}

# ---- link-retry: the link is cut; the sender comes back when it returns -----------------

# link_cut on|off - the link carries nothing: both ends drop every
# packet they send (netem loss 100%; the veth and the rxe ports stay
# up). tc itself, not rxe-netem: a script takes seconds to start here
link_cut()
{
	local i

	for i in "$CLI_IF" "$SRV_IF"; do
		if [ "$1" = on ]; then
			tc qdisc replace dev "$i" root netem loss 100% || return 1
		else
			tc qdisc del dev "$i" root || return 1
		fi
	done
}

# The link is cut mid-transfer until the sender gives the session up,
# then comes back, and the sender must complete in the same run.
#
# How the link goes away matters on rxe 6.1. "ip link set down" fails the
# QPs' sends at once, but a device that sends a CM message while its
# interface is down (the sender's DREQ as it gives the session up) loses
# rdma_cm until it is made again (docs/testing.md), so no session could
# follow. On a link that drops every packet (netem loss 100%, or the
# peer's end down), rxe retransmits without end and never fails the QPs:
# a cut of 10 s only stalls the session, which goes on when the link is
# back. (Unreachable routes did not even stall it.) So the link stays cut until pxfer's own keepalive
# gives up (no word from the receiver for 60 s, on both sides), and comes
# back when the sender says it tries again.
case_link_retry()
{
	local dst=$W/link-retry log=$LOGS/link-retry.check.log rc=0 tcut secs sessions

	mkdir -p "$dst"
	: >"$log"
	if ! start_server link-retry "$dst" --transport rdma --bind "$SRV_ADDR"; then
		fail "link-retry: the receiver did not start" "$RECV_LOG"
		return
	fi
	wire_mark
	# --retries 6 --retry-wait 2: the first attempt comes 2 s after the
	# link is back; should the receiver's session, which also gives up
	# after 60 s, still hold the partial the next session asks for, the
	# sender tries that file again in one more session, 4 s later; the
	# other attempts are to spare
	bg_send link-retry -v --json -j 2 --retries 6 --retry-wait 2 --transport rdma \
		--bind "$CLI_ADDR" "$DATA/tree" "$DATA/kill" "$SRV_ADDR:$RECV_PORT"
	if ! wait_for 90 wire_at_least $((TREE_BYTES + (4 << 20))); then
		fail "link-retry: the 80 MiB file did not start arriving within 90 s" "$SEND_LOG" "$RECV_LOG"
		return
	fi
	tcut=$(now_ms)
	NETEM=1
	link_cut on >>"$log" 2>&1 || rc=1
	note "link-retry: cut the link after $WIRE_BYTES bytes on the wire, $(part_bytes "$dst") bytes of the 80 MiB file written"
	if ! alive "$SEND_PID" || grep -q "ACK from the receiver" "$SEND_LOG"; then
		fail "link-retry: the transfer was over before the link was cut" "$SEND_LOG"
		return
	fi
	if ! wait_for 90 grep -q "trying again" "$SEND_LOG"; then
		echo "the sender did not give the session up within 90 s of the cut" >>"$log"
		rc=1
	fi
	link_cut off >>"$log" 2>&1 && NETEM=0
	note "link-retry: the link carries again $(secs_since "$tcut") s after the cut"
	wait_pid "$SEND_PID" 180
	secs=$(secs_since "$tcut")
	echo "# exit $WAIT_RC, $secs s after the cut" >>"$SEND_LOG"
	echo "sender exit $WAIT_RC, $secs s after the cut" >>"$log"
	[ "$WAIT_RC" -eq 0 ] || rc=1
	sessions=$(json_num sessions "$SEND_LOG")
	[ "${sessions:-0}" -ge 2 ] || { echo "${sessions:-no} sessions" >>"$log"; rc=1; }
	grep_log "error: no word from the receiver .* for 60 s" "$SEND_LOG" "$log" || rc=1
	grep_log "trying again in 2 s \(retry 1 of 6\)" "$SEND_LOG" "$log" || rc=1
	same_tree "$DATA/tree" "$dst/tree" "$log" || rc=1
	same_file "$DATA/kill" "$dst/kill" "$log" || rc=1
	# the same receiver served the next session, to its end
	[ "$(grep -c 'session with ' "$RECV_LOG")" -ge 2 ] ||
		{ echo "the receiver logged fewer than 2 sessions" >>"$log"; rc=1; }
	grep_log "received [0-9]+ files .* over rdma .*: complete" "$RECV_LOG" "$log" || rc=1
	alive "$RECV_PID" || { echo "the receiver is gone" >>"$log"; rc=1; }
	check $rc "link-retry: link cut until the sender gave up: it completes in the same run, exit $WAIT_RC $secs s after the cut, ${sessions:-?} sessions ($(grep -c 'trying again' "$SEND_LOG") retries): \"$(error_line "$SEND_LOG" | cut -c 1-100)\"; tree and 80 MiB intact, the receiver served the last session" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# ---- lossy-link: loss and corruption ----------------------------------------------------------------

case_lossy_link()
{
	local spec i=0 dst log rc before after stats r0 r1

	for spec in "loss 2%" "corrupt 1%"; do
		i=$((i + 1))
		dst=$W/lossy-link$i
		log=$LOGS/lossy-link$i.check.log
		rc=0
		mkdir -p "$dst"
		: >"$log"
		NETEM=1
		# shellcheck disable=SC2086  # the netem options are words
		rxe-netem both $spec >>"$log" 2>&1 || rc=1
		before=$(retry_counters)
		r0=$(retries_total)
		if start_recv "lossy-link$i" "$dst" --transport rdma --bind "$SRV_ADDR"; then
			rdma_send "lossy-link$i" 240 -v -j 2 "$DATA/medium" "$DATA/pub" "$SRV_ADDR:$RECV_PORT"
			recv_done 30
			echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
			[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
			same_file "$DATA/medium" "$dst/medium" "$log" || rc=1
			same_tree "$DATA/pub" "$dst/pub" "$log" || rc=1
		else
			rc=1
		fi
		after=$(retry_counters)
		r1=$(retries_total)
		if [ $((r1 - r0)) -le 0 ]; then
			echo "no retransmission counted (completer_retry_err): the impairment did not bite" >>"$log"
			rc=1
		fi
		stats="$CLI_IF: $(netem_stats "$CLI_IF" | grep -o 'Sent [0-9]* bytes [0-9]* pkt (dropped [0-9]*')"
		stats+="; $SRV_IF: $(netem_stats "$SRV_IF" | grep -o 'Sent [0-9]* bytes [0-9]* pkt (dropped [0-9]*')"
		{
			echo "netem: $stats"
			echo "counters before: $before"
			echo "counters after:  $after"
		} >>"$log"
		rxe-netem both clear >>"$log" 2>&1 && NETEM=0
		check $rc "lossy-link: netem $spec both ways: 3 MiB and 3 small files intact over rdma, $((r1 - r0)) retransmissions ($SEND_SECS s)" \
			"$log" "$SEND_LOG" "$RECV_LOG"
		note "lossy-link: $stats"
		note "lossy-link: rxe counters before: $before"
		note "lossy-link: rxe counters after:  $after"
		kill_leftovers
		rm -rf "$dst"
	done
}

# ---- memlock: memlock limits ------------------------------------------------------------------

# f_recv KIB - a receiver as nobody with a memlock limit of KIB KiB, and a
# root sender: the receiver must log the memlock message with its remedy
# and exit 5; the sender must fail and point at the receiver's limit;
# nothing may be written
f_recv()
{
	local kib=$1 name=f-recv-$1 dst=$W/memlock-recv-$1 log rc=0

	log=$LOGS/$name.check.log
	mkdir -p "$dst"
	chown nobody: "$dst"
	: >"$log"
	SEND_RC=
	RECV_RC=
	RECV_WRAP=(rxe-as-user -l "$kib" --)
	if start_recv "$name" "$dst" --transport rdma --bind "$SRV_ADDR"; then
		RECV_WRAP=()
		rdma_send "$name" 60 -v -j 2 "$DATA/pub" "$SRV_ADDR:$RECV_PORT"
		# a receiver that never got as far as a transfer keeps listening
		wait_for 10 grep -q "memlock" "$RECV_LOG"
		wait_pid "$RECV_PID" 5
		RECV_RC=$WAIT_RC
		echo "# exit $RECV_RC" >>"$RECV_LOG"
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		grep_log "memlock limit is .*raise it with 'ulimit -l [0-9]+" "$RECV_LOG" "$log" || rc=1
		# and it said so when it started
		grep_log "warning: the memlock limit .* holds the rings of 0 of the 1 sessions" "$RECV_LOG" "$log" || rc=1
		[ "$RECV_RC" -eq 5 ] || { echo "the receiver exited $RECV_RC, not 5" >>"$log"; rc=1; }
	else
		RECV_WRAP=()
		rc=1
	fi
	check $rc "memlock: receiver as nobody, memlock $kib KiB: exits $RECV_RC, logs \"$(grep -m 1 -o 'cannot register.*ulimit -l [0-9]*' "$RECV_LOG" | cut -c 1-160)\"" \
		"$log" "$RECV_LOG"
	rc=0
	: >"$log"
	[ "$SEND_RC" -ne 0 ] && [ "$SEND_RC" -ne 124 ] || rc=1
	grep_log "error: .*receiver.*memlock" "$SEND_LOG" "$log" || rc=1
	dir_empty "$dst" || { echo "files were written: $(find "$dst" -mindepth 1 | head -n 5)" >>"$log"; rc=1; }
	check $rc "memlock: ... and its sender exits $SEND_RC: \"$(error_line "$SEND_LOG" | cut -c 1-160)\"; nothing written" \
		"$log" "$SEND_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# f_send KIB - a sender as nobody with a memlock limit of KIB KiB: it must
# exit 5 with the memlock message and its remedy; nothing written
f_send()
{
	local kib=$1 name=f-send-$1 dst=$W/memlock-send-$1 log rc=0

	log=$LOGS/$name.check.log
	mkdir -p "$dst"
	: >"$log"
	SEND_RC=
	if start_recv "$name" "$dst" --transport rdma --bind "$SRV_ADDR"; then
		SEND_WRAP=(rxe-as-user -l "$kib" --)
		rdma_send "$name" 60 -v -j 2 "$DATA/pub" "$SRV_ADDR:$RECV_PORT"
		SEND_WRAP=()
		wait_pid "$RECV_PID" 5
		echo "# exit $WAIT_RC" >>"$RECV_LOG"
		echo "sender exit $SEND_RC, receiver exit $WAIT_RC" >>"$log"
		[ "$SEND_RC" -eq 5 ] || { echo "the sender exited $SEND_RC, not 5" >>"$log"; rc=1; }
		grep_log "memlock limit is .*raise it with 'ulimit -l [0-9]+" "$SEND_LOG" "$log" || rc=1
		dir_empty "$dst" || { echo "files were written: $(find "$dst" -mindepth 1 | head -n 5)" >>"$log"; rc=1; }
	else
		rc=1
	fi
	check $rc "memlock: sender as nobody, memlock $kib KiB: exits $SEND_RC: \"$(error_line "$SEND_LOG" | cut -c 1-200)\"" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# 1024 KiB is less than even the control connection registers (about
# 2 MiB); 16384 KiB lets the connection up but not the -j 2 rings (34 MiB)
case_memlock()
{
	f_recv 1024
	f_recv 16384
	f_send 1024
	f_send 16384
}

# ---- slow-receiver: a slow receiver -------------------------------------------------------------------

case_slow_receiver()
{
	local dst=$W/slow-receiver log=$LOGS/slow-receiver.check.log rc=0 before after tpid cycles

	mkdir -p "$dst"
	: >"$log"
	# 1 MiB of ring for 2 workers in 64 KiB chunks: 8 slots each, so the
	# stopped receiver, not the wire, sets the pace
	if ! start_recv slow-receiver "$dst" --transport rdma --bind "$SRV_ADDR" --ring-mem 1M --max-sessions 1; then
		fail "slow-receiver: the receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	before=$(rnr_counters)
	bg_send g -v -j 2 --chunk-size 64K --transport rdma --bind "$CLI_ADDR" "$DATA/big" \
		"$SRV_ADDR:$RECV_PORT"
	# stopped 300 ms of every 400 ms until the receiver exits
	(
		n=0
		trap 'kill -CONT '"$RECV_PID"' 2>/dev/null; echo "$n" >"'"$LOGS"'/g.cycles"; exit 0' TERM
		while kill -STOP "$RECV_PID" 2>/dev/null; do
			nap 0.3
			kill -CONT "$RECV_PID" 2>/dev/null
			n=$((n + 1))
			nap 0.1
		done
		echo "$n" >"$LOGS/slow-receiver.cycles"
	) &
	tpid=$!
	track "$tpid"
	wait_pid "$SEND_PID" 300
	SEND_RC=$WAIT_RC
	SEND_SECS=$WAIT_SECS
	echo "# exit $SEND_RC after $SEND_SECS s" >>"$SEND_LOG"
	kill -TERM "$tpid" 2>/dev/null
	wait "$tpid" 2>/dev/null
	kill -CONT "$RECV_PID" 2>/dev/null
	recv_done 30
	after=$(rnr_counters)
	cycles=$(cat "$LOGS/slow-receiver.cycles" 2>/dev/null || echo '?')
	{
		echo "sender exit $SEND_RC, receiver exit $RECV_RC; $cycles stop/continue cycles"
		echo "RNR counters before: $before"
		echo "RNR counters after:  $after"
	} >>"$log"
	[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
	same_file "$DATA/big" "$dst/big" "$log" || rc=1
	check $rc "slow-receiver: receiver (1 MiB of rings) stopped 300 ms of every 400 ms ($cycles times): 30 MiB in 64 KiB chunks intact over rdma ($SEND_SECS s)" \
		"$log" "$SEND_LOG" "$RECV_LOG"

	rc=0
	if [ -z "$before" ]; then
		echo "no RNR counter found under /sys/class/infiniband/*/ports/1/hw_counters" >>"$log"
		rc=1
	elif [ "$before" != "$after" ]; then
		echo "RNR counters moved" >>"$log"
		rc=1
	fi
	check $rc "slow-receiver: no RNR on either device ($after)" "$log"

	rc=0
	wr_report "$SEND_LOG" "$log" || rc=1
	check $rc "slow-receiver: outstanding work requests within the credit bound, and that within the send queue, on all $WR_LINES data connections ($WR_SUMMARY)" \
		"$log" "$SEND_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# ---- wrong-secret: a wrong secret --------------------------------------------------------------------

case_wrong_secret()
{
	local dst=$W/wrong-secret log=$LOGS/wrong-secret.check.log rc=0

	mkdir -p "$dst"
	: >"$log"
	if start_recv wrong-secret "$dst" --transport rdma --bind "$SRV_ADDR"; then
		SEND_WRAP=(env PXFER_SECRET=not-the-right-secret-42-42-42)
		rdma_send wrong-secret 60 -v -j 2 "$DATA/pub" "$DATA/medium" "$SRV_ADDR:$RECV_PORT"
		SEND_WRAP=()
		echo "sender exit $SEND_RC" >>"$log"
		[ "$SEND_RC" -eq 3 ] || rc=1
		grep_log "error: .*(secret|authenticat)" "$SEND_LOG" "$log" || rc=1
		wait_for 5 grep -qi "authentication failed" "$RECV_LOG" ||
			{ echo "the receiver did not log the refusal" >>"$log"; rc=1; }
		dir_empty "$dst" || { echo "files were written: $(find "$dst" -mindepth 1 | head -n 5)" >>"$log"; rc=1; }
	else
		rc=1
	fi
	check $rc "wrong-secret: wrong secret over rdma: the sender exits $SEND_RC: \"$(error_line "$SEND_LOG" | cut -c 1-160)\"; nothing written" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# ---- deep-rings: the completion queue grows ---------------------------------------------------------

case_deep_rings()
{
	local dst=$W/deep-rings log=$LOGS/deep-rings.check.log rc=0

	mkdir -p "$dst"
	: >"$log"
	# 32 MiB of ring for 2 workers in 64 KiB chunks: 256 slots each, so the
	# sender reserves two work requests per slot on top of its SRQ's share
	RECV_WRAP=(env PXFER_RDMA_CQ_MIN=1)
	SEND_WRAP=(env PXFER_RDMA_CQ_MIN=1)
	if start_recv deep-rings "$dst" --transport rdma --bind "$SRV_ADDR" --ring-mem 32M --max-sessions 1; then
		rdma_send deep-rings 240 -v -j 2 --chunk-size 64K "$DATA/big" "$SRV_ADDR:$RECV_PORT"
		recv_done 30
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
		grep_log "64 KiB chunks, 256 slots each" "$SEND_LOG" "$log" || rc=1
		grep_log "completion queue grown to [0-9]+ entries" "$SEND_LOG" "$log" || rc=1
		same_file "$DATA/big" "$dst/big" "$log" || rc=1
	else
		rc=1
	fi
	RECV_WRAP=()
	SEND_WRAP=()
	check $rc "deep-rings: a completion queue started small grows for deep rings ($(grep -ohE 'completion queue grown to [0-9]+ entries' "$SEND_LOG" "$RECV_LOG" 2>/dev/null | sort -u | paste -sd ',' -)); 30 MiB in 64 KiB chunks intact ($SEND_SECS s)" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"

	# 16 KiB chunks for 4 workers in the default 32 MiB would be 512
	# slots each, 2048 receives, more than the shared queue holds (1024,
	# 128 of them for messages): the receiver offers what fits, 224 each
	# to its one session (with 8 sessions, each would get an eighth)
	log=$LOGS/deep-rings-slots.check.log
	rc=0
	: >"$log"
	mkdir -p "$dst"
	if start_recv deep-rings-slots "$dst" --transport rdma --bind "$SRV_ADDR" --max-sessions 1; then
		rdma_send deep-rings-slots 240 -v -j 4 --chunk-size 16K "$DATA/medium" "$SRV_ADDR:$RECV_PORT"
		recv_done 30
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
		grep_log "16 KiB chunks, 224 slots each" "$SEND_LOG" "$log" || rc=1
		same_file "$DATA/medium" "$dst/medium" "$log" || rc=1
	else
		rc=1
	fi
	check $rc "deep-rings: -j 4 in 16 KiB chunks: the receiver offers the slots its shared receive queue holds (224 each), intact ($SEND_SECS s)" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# ---- many: several senders at once ------------------------------------------------------

case_many()
{
	local dst=$W/many log=$LOGS/many.check.log rc=0 k pids=() n=4

	mkdir -p "$dst"
	: >"$log"
	if ! start_server many "$dst" --transport rdma --bind "$SRV_ADDR"; then
		fail "many: the receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	for ((k = 0; k < n; k++)); do
		bg_send "many$k" --transport rdma --bind "$CLI_ADDR" -j 2 \
			"$DATA/tree" "$DATA/big" "$SRV_ADDR:$RECV_PORT/s$k"
		pids+=("$SEND_PID")
	done
	for ((k = 0; k < n; k++)); do
		wait_pid "${pids[k]}" 300
		echo "sender $k exit $WAIT_RC" >>"$log"
		[ "$WAIT_RC" -eq 0 ] || rc=1
		grep_log " over rdma" "$LOGS/many$k.send.log" "$log" || rc=1
		same_tree "$DATA/tree" "$dst/s$k/tree" "$log" || rc=1
		same_file "$DATA/big" "$dst/s$k/big" "$log" || rc=1
	done
	[ "$(grep -c 'received .* over rdma .*: complete' "$RECV_LOG")" -eq "$n" ] ||
		{ echo "not $n session lines in the receiver's log" >>"$log"; rc=1; }
	kill -TERM "$RECV_PID" 2>/dev/null
	recv_done 20
	[ "$RECV_RC" -eq 130 ] || { echo "receiver exit $RECV_RC after SIGTERM, not 130" >>"$log"; rc=1; }
	check $rc "many: $n senders at once over rdma, the tree and 30 MiB each: all intact" \
		"$log" "$RECV_LOG" "$LOGS/many0.send.log"
	kill_leftovers
	rm -rf "$dst"
}

# ---- scaleout: a job of 2 ranks to 2 receivers ---------------------------------------------

case_scaleout()
{
	local dst=$W/scaleout src=$W/scaleout-src log=$LOGS/scaleout.check.log rc=0
	local p1 pid1 log1 p2 pid2 log2 out=$LOGS/scaleout.json err=$LOGS/scaleout.send.log

	command -v mpirun >/dev/null || { check 1 "scaleout: mpirun is missing in the VM" /dev/null; return; }
	mkdir -p "$dst" "$src"
	: >"$log"
	cp -a "$DATA/tree" "$src/"
	head -c $((160 << 20)) /dev/urandom >"$src/ranged"
	if ! start_server scaleout-a "$dst" --transport rdma --bind "$SRV_ADDR"; then
		fail "scaleout: the first receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	p1=$RECV_PORT pid1=$RECV_PID log1=$RECV_LOG
	if ! start_server scaleout-b "$dst" --transport rdma --bind "$SRV_ADDR2"; then
		fail "scaleout: the second receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	p2=$RECV_PORT pid2=$RECV_PID log2=$RECV_LOG
	# libpmix keeps strings past PMIx_Finalize (test/lib/lsan.supp)
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:fast_unwind_on_malloc=0 \
		timeout -k 5 300 mpirun --oversubscribe -np 2 "$PXFER" send -v -j 2 \
		--transport rdma --range-size 64M --json "$src/tree" "$src/ranged" \
		--to "$SRV_ADDR:$p1,$SRV_ADDR2:$p2" >"$out" 2>"$err"
	echo "mpirun exit $?" >>"$log"
	grep -q "mpirun exit 0" "$log" || rc=1
	same_tree "$DATA/tree" "$dst/tree" "$log" || rc=1
	same_file "$src/ranged" "$dst/ranged" "$log" || rc=1
	grep_log "received .* over rdma .*: complete" "$log1" "$log" || rc=1
	grep_log "received .* over rdma .*: complete" "$log2" "$log" || rc=1
	python3 - "$out" >>"$log" 2>&1 <<'PY' || rc=1
import json, sys
j = json.load(open(sys.argv[1]))
print("job:", j["status"], j["ranks"], "ranks,", j["transport"], [r["units"] for r in j["per_rank"]])
assert j["status"] == "ok" and j["ranks"] == 2 and j["transport"] == "rdma", j
assert all(r["units"] > 0 for r in j["per_rank"]), "a rank sent nothing"
PY
	kill -TERM "$pid1" "$pid2" 2>/dev/null
	wait "$pid1" "$pid2" 2>/dev/null
	check $rc "scaleout: 2 ranks (mpirun) to 2 receivers over rdma, the tree and 160 MiB in ranges: intact, both ranks sent" \
		"$log" "$err" "$log1" "$log2"
	kill_leftovers
	rm -rf "$dst" "$src"
}

# ---- chain: a broadcast down 2 receivers ------------------------------------------------------

case_chain()
{
	local src=$W/chain-src log=$LOGS/chain.check.log rc=0 d
	local p1 pid1 log1 p2 pid2 log2 out=$LOGS/chain.json err=$LOGS/chain.send.log

	mkdir -p "$W/chain-a" "$W/chain-b" "$src"
	: >"$log"
	cp -a "$DATA/tree" "$src/"
	head -c $((160 << 20)) /dev/urandom >"$src/big"
	if ! start_server chain-a "$W/chain-a" --transport rdma --bind "$SRV_ADDR"; then
		fail "chain: the first receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	p1=$RECV_PORT pid1=$RECV_PID log1=$RECV_LOG
	if ! start_server chain-b "$W/chain-b" --transport rdma --bind "$SRV_ADDR2"; then
		fail "chain: the second receiver did not start" "$RECV_LOG"
		kill_leftovers
		return
	fi
	p2=$RECV_PORT pid2=$RECV_PID log2=$RECV_LOG
	timeout -k 5 300 "$PXFER" send -v -j 2 --transport rdma --json \
		"$src/tree" "$src/big" --each "$SRV_ADDR:$p1,$SRV_ADDR2:$p2" >"$out" 2>"$err"
	echo "send exit $?" >>"$log"
	grep -q "send exit 0" "$log" || rc=1
	for d in chain-a chain-b; do
		same_tree "$DATA/tree" "$W/$d/tree" "$log" || rc=1
		same_file "$src/big" "$W/$d/big" "$log" || rc=1
	done
	grep_log "forwarded on its behalf to $SRV_ADDR2:$p2" "$log1" "$log" || rc=1
	grep_log "received .* over rdma .*: complete" "$log2" "$log" || rc=1
	# the first forwarded the large file from its ring: every such chunk
	# posted from the receive slot (registered on the sending side's
	# protection domain), none copied into a sending ring first
	python3 - "$log1" >>"$log" 2>&1 <<'PY' || rc=1
import re, sys
m = re.findall(r"; (\d+) bytes from the ring, (\d+) copied first\)", open(sys.argv[1]).read())
print("chain: from the ring, copied:", m)
assert m and int(m[-1][0]) >= (160 << 20) * 9 // 10 and int(m[-1][1]) == 0, m
PY
	python3 - "$out" >>"$log" 2>&1 <<'PY' || rc=1
import json, sys
j = json.load(open(sys.argv[1]))
print("chain:", j["status"], j["transport"], [r["state"] for r in j["per_receiver"]])
assert j["status"] == "ok" and j["transport"] == "rdma", j
assert [r["state"] for r in j["per_receiver"]] == ["complete", "complete"], j
PY
	kill -TERM "$pid1" "$pid2" 2>/dev/null
	wait "$pid1" "$pid2" 2>/dev/null
	check $rc "chain: --each to 2 receivers over rdma, the first forwarding to the second: both intact" \
		"$log" "$err" "$log1" "$log2"
	kill_leftovers
	rm -rf "$W/chain-a" "$W/chain-b" "$src"
}

# ---- device-gid: --device and --gid-index ---------------------------------------------------------

case_device_gid()
{
	local dst=$W/device-gid log=$LOGS/device-gid.check.log rc=0 sgid=${PXFER_RXE_SERVER_GID:-} cgid=${PXFER_RXE_CLIENT_GID:-}
	local name want args

	mkdir -p "$dst"
	: >"$log"
	if [ -z "$sgid" ] || [ -z "$cgid" ]; then
		fail "device-gid: the test bed did not say which GID index holds each address (PXFER_RXE_*_GID)"
		return
	fi
	if start_recv device-gid "$dst" --transport rdma --device "$SRV_DEV" --gid-index "$sgid"; then
		run_send device-gid 120 -v -j 2 --transport rdma --device "$CLI_DEV" --gid-index "$cgid" \
			"$DATA/pub" "$DATA/medium" "$SRV_ADDR:$RECV_PORT"
		recv_done 30
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
		grep_log "through device $CLI_DEV port 1, GID index $cgid \(RoCE v2, ::ffff:$CLI_ADDR\)" \
			"$SEND_LOG" "$log" || rc=1
		grep_log "through device $SRV_DEV port 1, GID index $sgid \(RoCE v2, ::ffff:$SRV_ADDR\)" \
			"$RECV_LOG" "$log" || rc=1
		same_tree "$DATA/pub" "$dst/pub" "$log" || rc=1
		same_file "$DATA/medium" "$dst/medium" "$log" || rc=1
	else
		rc=1
	fi
	check $rc "device-gid: --device $SRV_DEV/$CLI_DEV --gid-index $sgid/$cgid on both sides: intact, and -v names them" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"

	# bad choices: exit 2, a message naming the problem, nothing sent
	for name in nodev nogid tcp; do
		log=$LOGS/device-gid-$name.check.log
		rc=0
		: >"$log"
		mkdir -p "$dst"
		case $name in
		nodev) args=(--device no-such-dev0); want="no RDMA device named 'no-such-dev0'" ;;
		nogid) args=(--device "$CLI_DEV" --gid-index 999)
		       want="GID index 999 of $CLI_DEV does not exist or holds no IPv4 address" ;;
		tcp) args=(--transport tcp --device "$CLI_DEV")
		     want="--device and --gid-index apply to the rdma transport, not tcp" ;;
		esac
		if start_recv "device-gid-$name" "$dst" --bind "$SRV_ADDR"; then
			run_send "device-gid-$name" 60 -v "${args[@]}" "$DATA/medium" "$SRV_ADDR:$RECV_PORT"
			echo "sender exit $SEND_RC" >>"$log"
			[ "$SEND_RC" -eq 2 ] || rc=1
			grep -qF -- "$want" "$SEND_LOG" ||
				{ echo "no \"$want\" in the sender's output" >>"$log"; rc=1; }
			dir_empty "$dst" || { echo "files were written" >>"$log"; rc=1; }
		else
			rc=1
		fi
		check $rc "device-gid: sender ${args[*]}: exits $SEND_RC: \"$(error_line "$SEND_LOG" | cut -c 1-140)\"" \
			"$log" "$SEND_LOG" "$RECV_LOG"
		kill_leftovers
		rm -rf "$dst"
	done
}

# ---- srq-drain: a peer without the secret uses up the shared receives --------------------------

case_srq_drain()
{
	local dst=$W/srq-drain log=$LOGS/srq-drain.check.log rc=0 hr=$build/test/helper/hostile_rdma i taken=0 hpid

	mkdir -p "$dst"
	: >"$log"
	if [ ! -x "$hr" ]; then
		fail "srq-drain: $hr is not built (make SAN=1)"
		return
	fi
	if start_recv srq-drain "$dst" --transport rdma --bind "$SRV_ADDR"; then
		# each message that arrives uses up a receive of the shared
		# queue, which holds 128 between sessions; the receiver closes
		# such a connection after a few, so come back until 200 were
		# taken (a receiver that loses them takes none after 128)
		for i in $(seq 40); do
			timeout -k 5 60 "$hr" -b "$CLI_ADDR" -n 300 "$SRV_ADDR" "$RECV_PORT" \
				>>"$log" 2>&1 || { echo "hostile_rdma run $i failed" >>"$log"; rc=1; break; }
			taken=$(awk '$1 == "sent" && $4 == 300 { s += $2 } END { print s + 0 }' "$log")
			[ "${taken:-0}" -lt 200 ] || break
		done
		echo "$i connections, $taken messages taken" >>"$log"
		[ "${taken:-0}" -ge 128 ] || rc=1
		# a half-open connect (accepted, never established) is held
		# meanwhile: the receiver must not wait for it to serve the
		# sender, whose handshake gets 5 s (the accept would take 15)
		"$hr" -b "$CLI_ADDR" -k ctrl -H 30 "$SRV_ADDR" "$RECV_PORT" >"$W/half-open.out" 2>&1 &
		hpid=$!
		for i in $(seq 50); do
			grep -q "half-open: accepted" "$W/half-open.out" && break
			sleep 0.1
		done
		cat "$W/half-open.out" >>"$log"
		grep -q "half-open: accepted" "$W/half-open.out" ||
			{ echo "the half-open connect was not accepted" >>"$log"; rc=1; }
		rdma_send srq-drain 120 -v -j 2 --timeout 5 "$DATA/medium" "$SRV_ADDR:$RECV_PORT"
		kill "$hpid" 2>/dev/null
		wait "$hpid" 2>/dev/null
		recv_done 30
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
		same_file "$DATA/medium" "$dst/medium" "$log" || rc=1
	else
		rc=1
	fi
	check $rc "srq-drain: after $taken empty messages taken from a peer without the secret, and past a half-open connect, a sender gets through intact" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# ---- ring-forge: a peer without the secret writes into a live ring ------------------------------

# rings_seen - 0 once the receiver logged the rings of both data connections
rings_seen()
{
	[ "$(grep -c 'ring at 0x' "$RECV_LOG")" -ge 2 ] || ! alive "$RECV_PID"
}

case_ring_forge()
{
	local dst=$W/ring-forge log=$LOGS/ring-forge.check.log rc=0 hr=$build/test/helper/hostile_rdma
	local try rings ring landed=0 refused=0 live=0

	: >"$log"
	if [ ! -x "$hr" ]; then
		fail "ring-forge: $hr is not built (make SAN=1)"
		return
	fi
	# the sender must still be in its session when it is stopped: a run
	# that finished first is tried again
	for try in 1 2 3; do
		rm -rf "$dst"
		mkdir -p "$dst"
		start_recv ring-forge "$dst" --transport rdma --bind "$SRV_ADDR" --ring-mem 1M || break
		bg_send ring-forge -v -j 2 --chunk-size 64K --transport rdma --bind "$CLI_ADDR" \
			"$DATA/tree" "$DATA/big" "$SRV_ADDR:$RECV_PORT"
		wait_for 60 rings_seen
		kill -STOP "$SEND_PID" 2>/dev/null
		if alive "$SEND_PID" && alive "$RECV_PID" &&
		   [ "$(grep -c 'ring at 0x' "$RECV_LOG")" -ge 2 ]; then
			live=1
			break
		fi
		echo "try $try: the session ended before the sender was stopped" >>"$log"
		kill -CONT "$SEND_PID" 2>/dev/null
		kill_leftovers
	done
	if [ "$live" = 1 ]; then
		rings=$(sed -n 's/.*ring at \(0x[0-9a-f]*\), [0-9]* bytes, key \(0x[0-9a-f]*\).*/\1:\2/p' "$RECV_LOG")
		echo "rings: $rings" >>"$log"
		for ring in $rings; do
			timeout -k 5 60 "$hr" -b "$CLI_ADDR" -w "$ring" -n 2 "$SRV_ADDR" "$RECV_PORT" \
				>>"$log" 2>&1 || { echo "hostile_rdma -w $ring failed" >>"$log"; rc=1; }
		done
		landed=$(awk '$1 == "forged" { s += $3 } END { print s + 0 }' "$log")
		refused=$(awk '$1 == "forged" { s += $5 } END { print s + 0 }' "$log")
		[ "$landed" -eq 0 ] && [ "$refused" -ge 4 ] || rc=1
		kill -CONT "$SEND_PID" 2>/dev/null
		wait_pid "$SEND_PID" 240
		SEND_RC=$WAIT_RC
		echo "# exit $SEND_RC after $WAIT_SECS s" >>"$SEND_LOG"
		recv_done 30
		echo "sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
		[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
		same_tree "$DATA/tree" "$dst/tree" "$log" || rc=1
		same_file "$DATA/big" "$dst/big" "$log" || rc=1
		grep_log 'a window bound to its queue pair' "$RECV_LOG" "$log" || rc=1
		grep_log 'shared receive queue: [0-9]+ receives used, all put back' "$RECV_LOG" "$log" || rc=1
		! grep -q 'not put back' "$RECV_LOG" || { echo "the receiver lost shared receives" >>"$log"; rc=1; }
	else
		rc=1
	fi
	check $rc "ring-forge: $landed of $((landed + refused)) writes by a peer without the secret into live rings landed; the session completed intact" \
		"$log" "${SEND_LOG:-/dev/null}" "${RECV_LOG:-/dev/null}"
	kill_leftovers
	rm -rf "$dst"
}

# ---- doctor: pxfer doctor on the test bed -------------------------------------------------

# doctor_run NAME ARGS... - "pxfer doctor ARGS..." (DOCTOR_WRAP, an array,
# in front); DOC_LOG its output, DOC_RC its exit status
DOCTOR_WRAP=()
doctor_run()
{
	DOC_LOG=$LOGS/doctor-$1.log
	shift
	timeout -k 5 60 "${DOCTOR_WRAP[@]}" "$PXFER" doctor "$@" >"$DOC_LOG" 2>&1
	DOC_RC=$?
	echo "# exit $DOC_RC" >>"$DOC_LOG"
}

# gid_link_local DEV - the index of a link-local GID (fe80::) of DEV port
# 1, which an IPv4 peer cannot use (rxe lists one per port, made from the
# netdev's MAC address)
gid_link_local()
{
	local g v

	for g in "/sys/class/infiniband/$1/ports/1/gids/"*; do
		v=''
		read -r v 2>/dev/null <"$g"
		if [[ $v == fe80:* ]]; then
			echo "${g##*/}"
			return 0
		fi
	done
	return 1
}

# rxe1 port 1 ACTIVE, read without a fork
cli_port_active()
{
	local st=

	read -r st 2>/dev/null <"/sys/class/infiniband/$CLI_DEV/ports/1/state"
	[[ $st == *ACTIVE* ]]
}

case_doctor()
{
	local log=$LOGS/doctor.check.log rc=0 gid want tdown
	local sgid=${PXFER_RXE_SERVER_GID:-} cgid=${PXFER_RXE_CLIENT_GID:-}

	: >"$log"
	if [ -z "$sgid" ] || [ -z "$cgid" ]; then
		fail "doctor: the test bed did not say which GID index holds each address (PXFER_RXE_*_GID)"
		return
	fi
	# a healthy bed
	doctor_run healthy "$SRV_ADDR"
	[ "$DOC_RC" -eq 0 ] || { echo "exit $DOC_RC, not 0" >>"$log"; rc=1; }
	for want in "^$SRV_DEV: " "^$CLI_DEV: " "^  port 1: ACTIVE, .*Ethernet \(RoCE\).*netdev $CLI_IF \(up" \
		    "^    GID $cgid: RoCE v2, $CLI_ADDR on $CLI_IF\$" "^    GID $sgid: RoCE v2, $SRV_ADDR on $SRV_IF\$" \
		    "^ok: [0-9]+ RDMA device\(s\), ([0-9]+) of \1 port\(s\) active" "^ok: rdma_cm reaches $SRV_ADDR through " \
		    "^rail: $CLI_DEV:1 $CLI_ADDR/[0-9]+ -> $SRV_ADDR\$" "^ok: a transfer to $SRV_ADDR would use rdma" \
		    "^0 problem\(s\)"; do
		grep_log "$want" "$DOC_LOG" "$log" || rc=1
	done
	check $rc "doctor: pxfer doctor $SRV_ADDR on a healthy bed: exit $DOC_RC, \"$(grep -m 1 "^rail: $CLI_DEV" "$DOC_LOG")\"" \
		"$log" "$DOC_LOG"

	# memlock too small for the rings, as a user without CAP_IPC_LOCK
	rc=0
	: >"$log"
	DOCTOR_WRAP=(rxe-as-user -l 64 --)
	doctor_run memlock "$SRV_ADDR"
	DOCTOR_WRAP=()
	[ "$DOC_RC" -eq 1 ] || { echo "exit $DOC_RC, not 1" >>"$log"; rc=1; }
	grep_log "^problem: cannot register .* the memlock limit is 64.0 KiB \(raise it with 'ulimit -l [0-9]+'" \
		"$DOC_LOG" "$log" || rc=1
	grep_log "^  fix: .*memlock unlimited.*LimitMEMLOCK=infinity" "$DOC_LOG" "$log" || rc=1
	check $rc "doctor: as nobody with memlock 64 KiB: exit $DOC_RC, \"$(grep -m 1 -o '^problem: cannot register.*KiB' "$DOC_LOG")\"" \
		"$log" "$DOC_LOG"

	# a GID the peer cannot use
	rc=0
	: >"$log"
	gid=$(gid_link_local "$CLI_DEV")
	if [ -z "$gid" ]; then
		echo "no link-local GID on $CLI_DEV: $(grep -h . /sys/class/infiniband/"$CLI_DEV"/ports/1/gids/* | sort -u | tr '\n' ' ')" >>"$log"
		rc=1
	else
		doctor_run gid --device "$CLI_DEV" --gid-index "$gid" "$SRV_ADDR"
		[ "$DOC_RC" -eq 1 ] || { echo "exit $DOC_RC, not 1" >>"$log"; rc=1; }
		grep_log "^problem: a GID the peer cannot use: --gid-index $gid of $CLI_DEV " "$DOC_LOG" "$log" || rc=1
		grep_log "^  fix: use --gid-index $cgid \(RoCE v2, $CLI_ADDR" "$DOC_LOG" "$log" || rc=1
	fi
	check $rc "doctor: --device $CLI_DEV --gid-index ${gid:-?}: exit ${DOC_RC:-?}, \"$(grep -m 1 '^  fix: use --gid-index' "$DOC_LOG" 2>/dev/null)\"" \
		"$log" "$DOC_LOG"

	# the client's port down: ip itself, then link_restore (rxe-link up,
	# which puts the routes back and waits for the ports to be ACTIVE,
	# and rdma_cm checked as after link-down)
	rc=0
	: >"$log"
	LINK_DOWN=1
	tdown=$(now_ms)
	ip link set dev "$CLI_IF" down >>"$log" 2>&1
	doctor_run down --transport rdma --bind "$CLI_ADDR" "$SRV_ADDR"
	link_restore doctor "$tdown" "$log"
	wait_for 10 cli_port_active || { echo "$CLI_DEV port 1 not ACTIVE 10 s after the link came up" >>"$log"; rc=1; }
	[ "$DOC_RC" -eq 1 ] || { echo "exit $DOC_RC, not 1" >>"$log"; rc=1; }
	grep_log "^problem: $CLI_DEV port 1, which holds the source address, is DOWN" "$DOC_LOG" "$log" || rc=1
	grep_log "^  fix: bring its netdev up: ip link set $CLI_IF up\$" "$DOC_LOG" "$log" || rc=1
	check $rc "doctor: $CLI_IF down: exit $DOC_RC, \"$(grep -m 1 "^problem: $CLI_DEV port 1" "$DOC_LOG")\"; ACTIVE again after" \
		"$log" "$DOC_LOG"
}

# ---- protect: encryption and the plain checksum over rdma --------------------------------------

case_protect()
{
	local dst=$W/protect log=$LOGS/protect.check.log rc=0 mode name want

	: >"$log"
	for mode in "--encrypt" "--encrypt --cipher chacha20-poly1305" "--integrity checksum"; do
		name=protect-$(echo "$mode" | tr -dc 'a-z0-9')
		case $mode in
		*chacha*) want='data encrypted \(chacha20-poly1305\)' ;;
		*encrypt*) want='data encrypted \(aes-256-gcm\)' ;;
		*) want='data plain checksum \(xxh3\)' ;;
		esac
		rm -rf "$dst"
		mkdir -p "$dst"
		if start_recv "$name" "$dst" --transport rdma --bind "$SRV_ADDR"; then
			# shellcheck disable=SC2086 # the mode is two words
			rdma_send "$name" 240 -v -j 2 $mode "$DATA/tree" "$DATA/big" "$SRV_ADDR:$RECV_PORT"
			recv_done 30
			echo "$mode: sender exit $SEND_RC, receiver exit $RECV_RC" >>"$log"
			[ "$SEND_RC" -eq 0 ] && [ "$RECV_RC" -eq 0 ] || rc=1
			same_tree "$DATA/tree" "$dst/tree" "$log" || rc=1
			same_file "$DATA/big" "$dst/big" "$log" || rc=1
			grep_log "$want" "$RECV_LOG" "$log" || rc=1
		else
			rc=1
		fi
		kill_leftovers
	done
	rm -rf "$dst"
	mkdir -p "$dst"
	if start_recv protect-require "$dst" --transport rdma --bind "$SRV_ADDR" --require-encrypt; then
		rdma_send protect-require 60 -v -j 2 "$DATA/medium" "$SRV_ADDR:$RECV_PORT"
		recv_done 10
		echo "plain sender to --require-encrypt: sender exit $SEND_RC" >>"$log"
		[ "$SEND_RC" -eq 1 ] || rc=1
		grep_log "error: .*encrypt" "$SEND_LOG" "$log" || rc=1
		dir_empty "$dst" || { echo "files were written" >>"$log"; rc=1; }
	else
		rc=1
	fi
	check $rc "protect: --encrypt with both ciphers and --integrity checksum intact over rdma; --require-encrypt refuses a plain sender" \
		"$log" "$SEND_LOG" "$RECV_LOG"
	kill_leftovers
	rm -rf "$dst"
}

# ---- main ---------------------------------------------------------------------------------

note "rdma_suite: kernel $(uname -r), $PXFER"
note "server $SRV_DEV/$SRV_IF $SRV_ADDR GID ${PXFER_RXE_SERVER_GID:-?}, client $CLI_DEV/$CLI_IF $CLI_ADDR GID ${PXFER_RXE_CLIENT_GID:-?}"
note "RNR counters: $(rnr_counters)"
t0=$(now_ms)
if ! gen_data >"$LOGS/gen.log" 2>&1; then
	fail "test data could not be made" "$LOGS/gen.log"
	summary
	exit 1
fi
TREE_BYTES=$(du -sb --apparent-size "$DATA/tree" | cut -f 1)
note "test data made in $(secs_since "$t0") s (tree: $TREE_BYTES bytes)"

declare -A TOOK
for c in "${cases[@]}"; do
	t0=$(now_ms)
	note "---- case $c"
	"case_${c//-/_}"
	kill_leftovers
	if [ "$NETEM" = 1 ]; then rxe-netem both clear >/dev/null 2>&1 && NETEM=0; fi
	if [ "$LINK_DOWN" = 1 ]; then rxe-link up both >/dev/null 2>&1 && LINK_DOWN=0; fi
	TOOK[$c]=$(secs_since "$t0")
	save_logs
	note "case $c took ${TOOK[$c]} s"
done

# the sanitizers' reports, in any log (with those of an earlier boot that
# a kernel hang stopped, test/rdma/suite.sh)
rc=0
: >"$LOGS/sanitizers.log"
sanitizer_reports "$LOGS"/*.log ${PXFER_RDMA_LOGS:+"$PXFER_RDMA_LOGS"/*.log} >"$LOGS/sanitizers.log" && rc=1
check $rc "no sanitizer report in any pxfer log" "$LOGS/sanitizers.log"

line="cases:"
for c in "${cases[@]}"; do line+=" $c ${TOOK[$c]} s,"; done
note "${line%,}; suite $(secs_since "$SUITE_T0") s"
summary
