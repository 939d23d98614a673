#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Broadcast benchmark: one tree (a 1 GiB file and 1,000 files of 4 KiB)
# from one source node to 1, 2, 4 and 8 receivers with `pxfer send
# --each` (a pipelined chain: the source sends to the first receiver,
# which forwards to the next, ...), against N `pxfer send`s one after
# another, N at once, and uftp (multicast), each node a network namespace
# on a bridge with a link of its own shaped by tc (docs/benchmarks.md,
# "Broadcast").
#
#   bench/broadcast.sh [--quick] [--out FILE] [--reps N] [--rate MBIT]
#                      [--only LIST] [--keep]
#
#   --quick      a 256 MiB file instead of 1 GiB, 1 repetition
#   --out FILE   also write the results as Markdown to FILE
#   --reps N     repetitions of every run (default 3; 1 with --quick);
#                medians shown, with the lowest and highest wall time
#   --rate MBIT  each node's link, in Mbit/s each way (default 400)
#   --only LIST  run only the runs whose id matches one of the
#                comma-separated shell patterns (ids: lone, each1, each2,
#                each4, each8, seq1, seq2, seq4, seq8, sim2, sim4, sim8,
#                uftp1, uftp4, uftp8)
#   --keep       keep the work directory (data and logs)
##
# Skips (exit 0, with a note) when not root, or when ip, tc, ss or python3
# is missing, or no bridge can be made. The --each runs are skipped when
# `pxfer send --help` does not offer --each (a build before the
# broadcast); the uftp runs when uftp or uftpd is missing (Debian package
# uftp). Everything else runs.
#
# The nodes: a bridge, and per node a namespace with a veth (mtu 9000) on
# it; each veth is shaped (tc tbf) on both ends, so that a node sends and
# receives at the link rate at most, as a node's NIC does. The source is
# ${prefix}s0, the receivers ${prefix}r0-7; each receiver writes into a
# directory of its own on tmpfs, emptied after every run.
#
# Runs (ids), each measured from the start of the sends until every sender
# has exited:
#   lone     one `pxfer send` s0 -> r0, both links unshaped: the CPU's
#            ceiling (headroom = its rate / the link rate)
#   eachN    `pxfer send --each r0,...` to N receivers (a `pxfer recv`
#            in each): the broadcast
#   seq1     one `pxfer send` s0 -> r0: a plain send at the link rate
#   seqN     N `pxfer send`s one after another, to r0, r1, ...
#   simN     N `pxfer send`s at once from s0, one to each receiver
#   uftpN    uftp in s0 at the link rate (-R), multicast over the bridge,
#            to uftpd in each of N receivers
#
# CPU: user + system time of every process of the run (GNU time around
# each send, receiver, uftp and uftpd); "other" is the machine's busy
# time (/proc/stat) beyond it, in CPUs (softirq work outside the
# processes' time, other users of the machine). Peak RSS: GNU time's %M,
# the largest sender and the largest receiver.
#
# Every copy is checked: the count and the bytes of every receiver's files
# after every run, and in the first repetition `cmp` of the large file and
# `diff -r` of the small ones. Exit status: 0 when every run worked and
# every copy was right, targets met or not; 1 when a run failed or a copy
# was wrong; 2 on a bad command line or a missing binary.
set -uo pipefail

BENCH=broadcast
# shellcheck source=lib/netns.sh
. "$(dirname "$0")/lib/netns.sh"

bench_args "$@"
if [ $quick -eq 1 ]; then
	BIG_MIB=256
	reps=${reps:-1}
else
	BIG_MIB=1024
	reps=${reps:-3}
fi
SMALL_N=1000 SMALL_KIB=4
bench_check

# --- skip where it cannot run ---
bench_skip ip tc ss python3
# what is skipped, and why: also in the report
SKIPS=()
have_each=1
# (the help read whole first: grep -q ending the pipe early would fail
# it under pipefail)
help=$("$PXFER" send --help 2>&1)
if ! grep -q -- '--each' <<<"$help"; then
	have_each=0
	SKIPS+=("each1-each8 skipped: this pxfer's 'send --help' has no --each (a build before the broadcast)")
fi
have_uftp=1
for t in uftp uftpd; do
	command -v $t >/dev/null && continue
	have_uftp=0
	SKIPS+=("uftp1-uftp8 skipped: $t is missing (Debian package uftp)")
	break
done
for t in "${SKIPS[@]}"; do
	note "$t"
done

IDS=(lone)
[ $have_each -eq 1 ] && IDS+=(each1 each2 each4 each8)
IDS+=(seq1 seq2 seq4 seq8 sim2 sim4 sim8)
[ $have_uftp -eq 1 ] && IDS+=(uftp1 uftp4 uftp8)
RUNS=()
for id in "${IDS[@]}"; do
	picked "$id" && RUNS+=("$id")
done
[ ${#RUNS[@]} -gt 0 ] || { note "no run matches --only '$only'"; exit 0; }
# receivers: as many as the largest run takes
NRECV=1
for id in "${RUNS[@]}"; do
	n=${id//[!0-9]/}
	[ -n "$n" ] && [ "$n" -gt "$NRECV" ] && NRECV=$n
done

bench_env

# --- the work directory, on tmpfs ---
tree_mib=$((BIG_MIB + SMALL_N * SMALL_KIB / 1024 + 1))
work_dir $(((NRECV + 1) * tree_mib + 512))
SRC=$WORK/data/tree DST=$WORK/dst LOGS=$WORK/logs
mkdir -p "$SRC" "$DST" "$LOGS"

# --- the nodes; everything made is undone on every exit ---
# (the bridge has no address: nothing of this shows in the host's routes)
nodes_start pc
node "${pfx}s0" "$net.11" || { echo "broadcast: cannot make the source node" >&2; exit 2; }
for ((i = 0; i < NRECV; i++)); do
	node "${pfx}r$i" "$net.$((21 + i))" || { echo "broadcast: cannot make node r$i" >&2; exit 2; }
done
note "bridge ${pfx}b: the source at $net.11, receivers at $net.21-$((20 + NRECV)), each link $rate Mbit/s each way ($LINK_MIBS MiB/s)"

# --- the tree: one large file, and small ones in 10 directories ---
note "writing the tree in $SRC"
head -c $((BIG_MIB << 20)) /dev/urandom >"$SRC/big.dat" || exit 2
python3 - "$SRC/small" "$SMALL_N" $((SMALL_KIB << 10)) <<'PY' || exit 2
import os, sys
root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 10))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d.dat" % i), "wb") as f:
        f.write(os.urandom(size))
PY
read -r TREE_FILES TREE_BYTES < <(tree_sum "$SRC")
note "tree: $TREE_FILES files, $((TREE_BYTES >> 20)) MiB"

# free page reporting (bench/bench.sh): fault memory in before each run
WARM_ON=0
warm_mem_on && WARM_ON=1

# --- helpers ---
# start_recvs N [uftpd] - a pxfer recv (or uftpd) in each of the first N
# receiver namespaces, receiving into DST/rI
start_recvs() {
	local i n p
	RPIDS=()
	for ((i = 0; i < $1; i++)); do
		n=${pfx}r$i
		mkdir -p "$DST/r$i"
		if [ "${2:-}" = uftpd ]; then
			# -d: in the foreground, its log on stderr; -U: the
			# client id uftp's -H names
			ip netns exec "$n" "$TIME" -f "$TFMT" -o "$RUN.recv$i.time" \
				uftpd -d -x 1 -q -U "$(uftp_id "$i")" -I "${n}n" -B 8388608 \
				-D "$DST/r$i" >"$RUN.recv$i.log" 2>&1 &
			p=$!
			PIDS+=("$p") RPIDS+=("$p")
			wait_listen "$n" u 1044 "$p" ||
				{ echo "uftpd $i did not listen" >>"$RUN.err"; return 1; }
		else
			recv_start "$i" "$DST/r$i" || return 1
		fi
	done
}
uftp_id() { printf '0x%08x' $((0x100 + $1)); }

# send_to I [K] - one `pxfer send` of the tree from s0 to receiver I (its
# GNU time file and logs numbered K), in the background; its pid in SPID
send_to() {
	local k=${2:-$1}
	timeout -k 5 $RUN_TIMEOUT ip netns exec "${pfx}s0" \
		"$TIME" -f "$TFMT" -o "$RUN.send.$k" \
		"$PXFER" send --json "$SRC" "$net.$((21 + $1))" \
		</dev/null >"$RUN.out$k" 2>"$RUN.err$k" &
	SPID=$!
	PIDS+=("$SPID")
}
# gather - the sends' stderr in RUN.err
gather() {
	local f
	for f in "$RUN".err[0-9]*; do
		[ -s "$f" ] && { echo "${f##*.}:"; cat "$f"; }
	done >>"$RUN.err" 2>/dev/null
}
# run_lone - one pxfer send, s0 -> r0, unshaped
run_lone() {
	shape "${pfx}s0" 0
	shape "${pfx}r0" 0
	RC=1 T0=$EPOCHREALTIME T1=$EPOCHREALTIME
	if start_recvs 1; then
		T0=$EPOCHREALTIME
		send_to 0
		wait "$SPID"
		RC=$?
		T1=$EPOCHREALTIME
		gather
	fi
	stop_recvs
	shape "${pfx}s0" "$rate"
	shape "${pfx}r0" "$rate"
}
# run_seq N - N pxfer sends one after another, to r0 ... rN-1
run_seq() {
	local i rc
	RC=1 T0=$EPOCHREALTIME T1=$EPOCHREALTIME
	start_recvs "$1" || { stop_recvs; return 0; }
	T0=$EPOCHREALTIME
	RC=0
	for ((i = 0; i < $1; i++)); do
		send_to "$i"
		wait "$SPID"
		rc=$?
		[ $rc -eq 0 ] || RC=$rc
	done
	T1=$EPOCHREALTIME
	gather
	stop_recvs
}
# run_sim N - N pxfer sends at once from s0, one to each receiver
run_sim() {
	local i p=()
	RC=1 T0=$EPOCHREALTIME T1=$EPOCHREALTIME
	start_recvs "$1" || { stop_recvs; return 0; }
	T0=$EPOCHREALTIME
	for ((i = 0; i < $1; i++)); do
		send_to "$i"
		p+=("$SPID")
	done
	wait_all "${p[@]}"
	T1=$EPOCHREALTIME
	gather
	stop_recvs
}
# run_each N - the broadcast: one pxfer send --each to N receivers
run_each() {
	RC=1 T0=$EPOCHREALTIME T1=$EPOCHREALTIME
	start_recvs "$1" || { stop_recvs; return 0; }
	T0=$EPOCHREALTIME
	timeout -k 5 $RUN_TIMEOUT ip netns exec "${pfx}s0" \
		"$TIME" -f "$TFMT" -o "$RUN.send.0" \
		"$PXFER" send --json --each "$(recv_list "$1")" "$SRC" \
		</dev/null >"$RUN.out" 2>"$RUN.err"
	RC=$?
	T1=$EPOCHREALTIME
	stop_recvs
	[ $RC -eq 0 ] || return 0
	# the summary names every receiver
	python3 - "$RUN.out" "$1" <<'PY' >>"$RUN.err" 2>&1 || RC=1
import json, sys
j = json.load(open(sys.argv[1]))
n = len(j.get("per_receiver", []))
if n != int(sys.argv[2]):
    sys.exit("the summary lists %d receivers, not %s" % (n, sys.argv[2]))
PY
}
# run_uftp N - uftp from s0 at the link rate, multicast over the bridge
# (its default groups, 230.4.4.1 to announce and 230.5.5.x for the data),
# to uftpd in N receivers, the group closed to their ids (-H) so that it
# starts once all of them have answered; blocks of 8800 bytes (the jumbo
# frames' payload, as uftp's manual advises for an MTU of 9000)
run_uftp() {
	local i ids=''
	RC=1 T0=$EPOCHREALTIME T1=$EPOCHREALTIME
	start_recvs "$1" uftpd || { stop_recvs; return 0; }
	for ((i = 0; i < $1; i++)); do
		ids=$ids${ids:+,}$(uftp_id "$i")
	done
	T0=$EPOCHREALTIME
	timeout -k 5 $RUN_TIMEOUT ip netns exec "${pfx}s0" \
		"$TIME" -f "$TFMT" -o "$RUN.send.0" \
		uftp -R $((rate * 1000)) -b 8800 -B 8388608 -I "${pfx}s0n" -x 1 -q \
		-H "$ids" -S "$RUN.status" "$SRC" </dev/null >"$RUN.out" 2>"$RUN.err"
	RC=$?
	T1=$EPOCHREALTIME
	stop_recvs
}

# verify N - every receiver's copy: count and bytes; in repetition 1, cmp
# of the large file and diff -r of the small ones
# shellcheck disable=SC2317  # run by run_ok
verify() {
	local i n b c bad=0
	for ((i = 0; i < $1; i++)); do
		c=$DST/r$i/$(basename "$SRC")
		if [ ! -d "$c" ]; then
			echo "receiver $i: no copy at $c" >>"$RUN.err"
			bad=1
			continue
		fi
		read -r n b < <(tree_sum "$c")
		if [ "$n" -ne "$TREE_FILES" ] || [ "$b" -ne "$TREE_BYTES" ]; then
			echo "receiver $i: $n files of $b bytes, not $TREE_FILES of $TREE_BYTES" >>"$RUN.err"
			bad=1
			continue
		fi
		[ "$REP" -eq 1 ] || continue
		if ! cmp "$SRC/big.dat" "$c/big.dat" >>"$RUN.err" 2>&1 ||
			! diff -r -q "$SRC/small" "$c/small" >>"$RUN.err" 2>&1; then
			echo "receiver $i: the copy differs" >>"$RUN.err"
			bad=1
		fi
	done
	return "$bad"
}

# one ID - run ID once; a line in RESULTS:
# id rep ok wall receivers snd_cpu rcv_cpu snd_rss rcv_rss other_cpu
one() {
	local id=$1 r b0 b1 wall snd rcv srss rrss other ok=1

	r=${id//[!0-9]/}
	r=${r:-1}
	RUN=$LOGS/$id.$REP
	rm -rf "${DST:?}"/*
	sync
	[ "$WARM_ON" -eq 1 ] && "$WARM" $((r * tree_mib + 512)) >/dev/null
	b0=$(cpu_busy)
	case $id in
	lone) run_lone;;
	each*) run_each "$r";;
	seq*) run_seq "$r";;
	sim*) run_sim "$r";;
	uftp*) run_uftp "$r";;
	*) echo "broadcast: no run '$id'" >&2; exit 2;;
	esac
	b1=$(cpu_busy)
	run_ok "$id" 'a copy is wrong' verify "$r" || ok=0
	read -r wall snd srss rcv rrss other < <(figures send "$b0" "$b1")
	printf '%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n' "$id" "$REP" $ok "$wall" \
		"$r" "$snd" "$rcv" "$srss" "$rrss" "$other" >>"$RESULTS"
	printf '    %-6s %7.2f s %8.1f MiB/s to each  CPU %s + %s s  RSS %s / %s MiB  other %s CPUs%s\n' \
		"$id" "$wall" "$(calc "$TREE_BYTES / 1048576 / $wall" .1f)" "$snd" "$rcv" \
		"$srss" "$rrss" "$other" "$([ $ok -eq 1 ] || echo '  FAILED')"
	rm -rf "${DST:?}"/*
}

run_reps "${RUNS[@]}"

# --- the report ---
label() {
	local n=${1//[!0-9]/}
	case $1 in
	lone) echo "lone pxfer send, links unshaped";;
	each*) echo "pxfer send --each, $n receiver(s)";;
	seq1) echo "one pxfer send";;
	seq*) echo "$n pxfer sends, one after another";;
	sim*) echo "$n pxfer sends at once";;
	uftp*) echo "uftp (multicast), $n receiver(s)";;
	esac
}
declare -A RATE_OF WALL_OF
report() {
	local id wall lo hi n r snd rcv srss rrss other mibs gib s
	report_head
	echo "tree $TREE_FILES files, $(calc "$TREE_BYTES / 1048576" .0f) MiB (one $BIG_MIB MiB file, $SMALL_N of $SMALL_KIB KiB);"
	echo "median of $reps ($(nproc) CPUs, $(uname -r))."
	for s in "${SKIPS[@]}"; do
		echo
		echo "Note: $s."
	done
	echo
	echo "| run | receivers | wall s (min-max) | MiB/s to each | of a link | MiB/s delivered | CPU s send / recv | CPU s/GiB delivered | peak RSS send / recv MiB | other CPUs | runs |"
	echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	for id in "${RUNS[@]}"; do
		read -r wall lo hi n < <(stats "$id" 4)
		[ "$n" -gt 0 ] || continue
		r=$(stats "$id" 5 | cut -d' ' -f1)
		snd=$(stats "$id" 6 | cut -d' ' -f1)
		rcv=$(stats "$id" 7 | cut -d' ' -f1)
		srss=$(stats "$id" 8 | cut -d' ' -f3)
		rrss=$(stats "$id" 9 | cut -d' ' -f3)
		other=$(stats "$id" 10 | cut -d' ' -f1)
		mibs=$(calc "$TREE_BYTES / 1048576 / $wall" .1f)
		gib=$(calc "($snd + $rcv) / ($r * $TREE_BYTES / 1073741824)" .2f)
		RATE_OF[$id]=$mibs WALL_OF[$id]=$wall
		printf '| %s | %d | %.2f (%.2f-%.2f) | %s | %s | %s | %.2f / %.2f | %s | %.1f / %.1f | %.2f | %d/%d |\n' \
			"$(label "$id")" "$r" "$wall" "$lo" "$hi" "$mibs" \
			"$([ "$id" = lone ] && echo - || echo "$(calc "$mibs / $LINK_MIBS" .2f)x")" \
			"$(calc "$r * $mibs" .1f)" "$snd" "$rcv" "$gib" "$srss" "$rrss" "$other" "$n" "$reps"
	done
}
# ratio A B - WALL_OF[A] / WALL_OF[B], or nothing when either is missing
ratio() {
	[ -n "${WALL_OF[$1]:-}" ] && [ -n "${WALL_OF[$2]:-}" ] || return 1
	calc "${WALL_OF[$1]} / ${WALL_OF[$2]}" .2f
}
judge() {
	local x n p one ideal
	headroom
	ideal=$(calc "$TREE_BYTES / 1048576 / $LINK_MIBS" .2f)
	echo "the tree over one link at its rate: $ideal s"
	if [ $have_each -eq 0 ]; then
		echo "not judged: time(each4) / time(each1) <= 1.1 (no --each in this build)"
	fi
	if x=$(ratio each4 each1); then
		verdict "$(calc "$x <= 1.1" d)" "time(each4) / time(each1) <= 1.1 (${WALL_OF[each4]} / ${WALL_OF[each1]} s: ${x})"
	fi
	if x=$(ratio each8 each1); then
		echo "time(each8) / time(each1): $x (${WALL_OF[each8]} / ${WALL_OF[each1]} s)"
	fi
	if x=$(ratio each1 seq1); then
		echo "time(each1) / one plain send: $x (${WALL_OF[each1]} / ${WALL_OF[seq1]} s)"
	fi
	# against each peer: how much longer the peer takes than the broadcast
	for p in seq sim uftp; do
		for n in 2 4 8; do
			x=$(ratio "$p$n" "each$n") || continue
			echo "time($p$n) / time(each$n): $x (${WALL_OF[$p$n]} / ${WALL_OF[each$n]} s)"
		done
	done
	# the peers against their own one receiver: N sends from one link
	# take N times as long, multicast should not
	for p in seq sim uftp; do
		for n in 2 4 8; do
			one=${p}1
			[ "$p" = uftp ] || one=seq1
			x=$(ratio "$p$n" "$one") || continue
			echo "time($p$n) / time($one): $x (${WALL_OF[$p$n]} / ${WALL_OF[$one]} s)"
		done
	done
}

bench_end
