#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Scale-out benchmark: one pxfer job of 1, 2 and 4 sender nodes to 1, 2
# and 4 receivers, each node a network namespace on a bridge with a link
# of its own shaped by tc, against the same tree split by hand into
# independent sends and against fpsync (docs/benchmarks.md, "Scale-out").
#
#   bench/scaleout.sh [--quick] [--out FILE] [--reps N] [--rate MBIT]
#                     [--only LIST] [--keep]
#
#   --quick      a 512 MiB tree (and a 384 MiB file in the skewed one, cut
#                with --range-size 64M), 1 repetition
#   --out FILE   also write the results as Markdown to FILE
#   --reps N     repetitions of every run (default 3; 1 with --quick);
#                medians shown, with the lowest and highest wall time
#   --rate MBIT  each node's link, in Mbit/s each way (default 400)
#   --only LIST  run only the runs whose id matches one of the
#                comma-separated shell patterns (ids: lone, m1x1 ... m4x4,
#                m4x4r64, split, fpsync, skew4x4, skew4x1, nocut4x4, nocut4x1,
#                fat4x1, fatnocut4x1)
#   --keep       keep the work directory (data and logs)
##
# Skips (exit 0, with a note) when not root, or when ip, tc, mpirun or
# python3 is missing, or no bridge can be made; fpsync's run is skipped
# when fpsync or rsync is missing (Debian packages fpart, rsync).
#
# The nodes: a bridge, and per node a namespace with a veth (mtu 9000) on
# it; each veth is shaped (tc tbf) on both ends, so that a node sends and
# receives at the link rate at most, as a node's NIC does. Senders are
# ${prefix}s0-3, receivers ${prefix}r0-3; ranks are started by
# `mpirun --oversubscribe -np N` through test/lib/in_netns.sh, one rank a
# sender namespace; each receiver is a `pxfer recv` in its namespace, all
# writing into one destination directory on tmpfs (as DTNs on a parallel
# file system), cleared after every run.
#
# Runs (ids), each measured from the start of the launcher (or of the
# sends) until every sender has exited:
#   lone         one `pxfer send` (no launcher) s0 -> r0, both links
#                unshaped: the CPU's ceiling (headroom = its rate / the
#                link rate) and the memory a lone send takes
#   mSxR         the tree, S ranks to R receivers (--to lists them)
#   m4x4r64      m4x4 with --range-size 64M: the 256 MiB files cut too
#   split        the tree split by hand: 4 `pxfer send`s at once, sender
#                i sending the i-th top-level directory to receiver i
#   fpsync       fpsync -n 4 (4 rsync workers) from s0 to an rsync daemon
#                in r0 (fpsync spans several sender nodes only with ssh
#                workers: one sender node here)
#   skew4xR      one large file and the small files, 4 ranks to R
#                receivers, the large file cut into ranges
#   nocut4xR     the same with --range-size 64G (the file is not cut)
#   fat4x1, fatnocut4x1  skew4x1 and nocut4x1 with the receiver's link at
#                4 times the rate (a DTN with a faster NIC than the nodes)
#
# CPU: user + system time of every pxfer process of the run (GNU time
# around each rank, each receiver, each send), per GiB; "other" is the
# machine's busy time (/proc/stat) beyond it, in CPUs (the launcher, the
# PMIx forwarders, the kernel's softirq work outside pxfer's time, other
# users of the machine). Peak RSS: GNU time's %M of each rank and each
# receiver, the largest shown.
#
# Every copy is checked: the count and the bytes of the files after every
# run, and `diff -r` in the first repetition. Exit status: 0 when every run
# worked and every copy was right, targets met or not; 1 when a run failed
# or a copy was wrong; 2 on a bad command line or a missing binary.
set -uo pipefail

BENCH=scaleout
# shellcheck source=lib/netns.sh
. "$(dirname "$0")/lib/netns.sh"
WRAP=$top/test/lib/in_netns.sh

bench_args "$@"
if [ $quick -eq 1 ]; then
	BIG_N=3 BIG_MIB=96 MID_N=10 SMALL_N=2000 HUGE_MIB=384 SKEW_RANGE=64M
	reps=${reps:-1}
else
	BIG_N=6 BIG_MIB=256 MID_N=20 SMALL_N=10000 HUGE_MIB=1536 SKEW_RANGE=''
	reps=${reps:-3}
fi
MID_MIB=20
bench_check

# --- skip where it cannot run ---
bench_skip ip tc mpirun python3 ss
have_fpsync=1
for t in fpsync rsync; do
	command -v $t >/dev/null || { have_fpsync=0; note "$t is missing: fpsync's run is skipped"; }
done

bench_env
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# --- the work directory, on tmpfs ---
tree_mib=$((BIG_N * BIG_MIB + MID_N * MID_MIB + SMALL_N * 4 / 1024))
work_dir $((2 * tree_mib + HUGE_MIB + 1024))
SRC=$WORK/data/tree SKEW=$WORK/data/skew DST=$WORK/dst LOGS=$WORK/logs
mkdir -p "$SRC" "$SKEW" "$DST" "$LOGS"

# --- the nodes; everything made is undone on every exit ---
GW=$net.1
nodes_start pb "$GW"
for i in 0 1 2 3; do
	node "${pfx}s$i" "$net.$((11 + i))" || { echo "scaleout: cannot make node s$i" >&2; exit 2; }
	node "${pfx}r$i" "$net.$((21 + i))" || { echo "scaleout: cannot make node r$i" >&2; exit 2; }
done
note "bridge $GW/24: senders at $net.11-14, receivers at $net.21-24, each link $rate Mbit/s each way ($LINK_MIBS MiB/s)"

# --- the trees ---
# tree: as a data set is laid out, top-level directories of uneven sizes
# (the hand split sends one each): raw/ two thirds of the large files,
# processed/ the other large files and half the 20 MiB ones, analysis/
# the other 20 MiB ones, logs/ the small files (0-8 KiB) in 100 directories
note "writing the trees in $WORK/data"
mkdir -p "$SRC/raw" "$SRC/processed" "$SRC/analysis" "$SRC/logs"
for ((i = 0; i < BIG_N; i++)); do
	d=raw
	[ $i -lt $((BIG_N * 2 / 3)) ] || d=processed
	head -c $((BIG_MIB << 20)) /dev/urandom >"$SRC/$d/big$i.dat" || exit 2
done
for ((i = 0; i < MID_N; i++)); do
	d=processed
	[ $i -lt $((MID_N / 2)) ] || d=analysis
	head -c $((MID_MIB << 20)) /dev/urandom >"$SRC/$d/mid$i.dat" || exit 2
done
python3 - "$SRC/logs" "$SMALL_N" <<'PY' || exit 2
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(27)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.log" % i), "wb") as f:
        f.write(os.urandom(rnd.randrange(0, 8193)))
PY
# skew: one large file and the same small files (hard links)
head -c $((HUGE_MIB << 20)) /dev/urandom >"$SKEW/huge.dat" || exit 2
cp -al "$SRC/logs" "$SKEW/logs" || exit 2
read -r TREE_FILES TREE_BYTES < <(tree_sum "$SRC")
read -r SKEW_FILES SKEW_BYTES < <(tree_sum "$SKEW")
HUGE_BYTES=$((HUGE_MIB << 20))
note "tree: $TREE_FILES files, $((TREE_BYTES >> 20)) MiB; skewed tree: $SKEW_FILES files, $((SKEW_BYTES >> 20)) MiB"
for d in raw processed analysis logs; do
	note "  tree/$d: $(du -sm --apparent-size "$SRC/$d" | cut -f1) MiB"
done

# free page reporting (bench/bench.sh): fault memory in before each run
WARM_MIB=0
warm_mem_on && WARM_MIB=$(((TREE_BYTES >> 20) + 512))

# --- helpers ---
# start_recvs N - a pxfer recv in each of the first N receiver namespaces
start_recvs() {
	local i
	RPIDS=()
	for ((i = 0; i < $1; i++)); do
		recv_start "$i" "$DST" || return 1
	done
}

# run_job S R TREE [ARGS...] - the tree through S ranks to R receivers
run_job() {
	local s=$1 r=$2 tree=$3

	shift 3
	RC=1 T0=$EPOCHREALTIME T1=$EPOCHREALTIME
	start_recvs "$r" || return 1
	T0=$EPOCHREALTIME
	# shellcheck disable=SC2016  # expanded by the rank's shell
	timeout -k 5 $RUN_TIMEOUT mpirun --oversubscribe -np "$s" "$WRAP" "${pfx}s" "$GW" \
		bash -c 'exec "$0" -f "$1" -o "$2.$OMPI_COMM_WORLD_RANK" "${@:3}"' \
		"$TIME" "$TFMT" "$RUN.rank" \
		"$PXFER" send --json "$@" "$tree" --to "$(recv_list "$r")" \
		</dev/null >"$RUN.out" 2>"$RUN.err"
	RC=$?
	T1=$EPOCHREALTIME
	stop_recvs
}
# run_lone - one pxfer send, no launcher, s0 -> r0 unshaped
run_lone() {
	shape "${pfx}s0" 0
	shape "${pfx}r0" 0
	if start_recvs 1; then
		T0=$EPOCHREALTIME
		timeout -k 5 $RUN_TIMEOUT ip netns exec "${pfx}s0" \
			"$TIME" -f "$TFMT" -o "$RUN.rank.0" \
			"$PXFER" send --json "$SRC" "$net.21" </dev/null >"$RUN.out" 2>"$RUN.err"
		RC=$?
		T1=$EPOCHREALTIME
	else
		RC=1
	fi
	stop_recvs
	shape "${pfx}s0" "$rate"
	shape "${pfx}r0" "$rate"
}
# run_split - the tree's top-level directories, one `pxfer send` each, at once
run_split() {
	local i d p=()
	RC=1 T0=$EPOCHREALTIME T1=$EPOCHREALTIME
	start_recvs 4 || return 1
	T0=$EPOCHREALTIME
	i=0
	for d in raw processed analysis logs; do
		timeout -k 5 $RUN_TIMEOUT ip netns exec "${pfx}s$i" \
			"$TIME" -f "$TFMT" -o "$RUN.rank.$i" \
			"$PXFER" send --json "$SRC/$d" "$net.$((21 + i))/tree" \
			</dev/null >"$RUN.out$i" 2>"$RUN.err$i" &
		p+=($!)
		PIDS+=($!)
		i=$((i + 1))
	done
	wait_all "${p[@]}"
	T1=$EPOCHREALTIME
	cat "$RUN".err? >"$RUN.err" 2>/dev/null
	stop_recvs
}
# run_fpsync - fpsync, 4 rsync workers in s0, to an rsync daemon in r0
run_fpsync() {
	local dpid conf=$WORK/rsyncd.conf i

	cat >"$conf" <<EOF
pid file = $WORK/rsyncd.pid
use chroot = false
[dst]
	path = $DST
	read only = false
	uid = root
	gid = root
EOF
	rm -f "$WORK/rsyncd.pid"
	RC=1 T0=$EPOCHREALTIME T1=$EPOCHREALTIME
	ip netns exec "${pfx}r0" "$TIME" -f "$TFMT" -o "$RUN.recv0.time" \
		rsync --daemon --no-detach --port 8873 --config="$conf" \
		--log-file="$RUN.recv0.log" &
	dpid=$!
	PIDS+=("$dpid")
	wait_listen "${pfx}r0" t 8873 "$dpid" || { echo "rsync daemon did not listen" >"$RUN.err"; return 1; }
	rm -rf "$WORK/fpsync"
	mkdir -p "$WORK/fpsync"
	T0=$EPOCHREALTIME
	timeout -k 5 $RUN_TIMEOUT ip netns exec "${pfx}s0" \
		"$TIME" -f "$TFMT" -o "$RUN.rank.0" \
		fpsync -n 4 -f 2000 -s $((TREE_BYTES / 16)) -t "$WORK/fpsync" \
		"$SRC/" "rsync://$net.21:8873/dst/tree/" </dev/null >"$RUN.out" 2>"$RUN.err"
	RC=$?
	T1=$EPOCHREALTIME
	# the daemon's connection processes end once their client has
	for ((i = 0; i < 500; i++)); do
		[ -s "$WORK/rsyncd.pid" ] && [ -z "$(pgrep -P "$(cat "$WORK/rsyncd.pid")")" ] && break
		sleep 0.01
	done
	stop_timed $dpid
}

# job_shares JSON - the largest share of the bytes one rank sent, and one
# receiver took, and the job's own seconds (rank 0's, from its start to
# its summary), from rank 0's --json summary
job_shares() {
	python3 - "$1" <<'PY' 2>/dev/null || echo '- - -'
import json, sys
j = json.load(open(sys.argv[1]))
b = j["bytes"] or 1
print("%.2f %.2f %.3f" % (max(r["bytes_sent"] for r in j["per_rank"]) / b,
                          max(r["bytes"] for r in j["per_receiver"]) / b, j["seconds"]))
PY
}

# verify ROOT_SRC COPY FILES BYTES - count and bytes; diff -r in repetition 1
# shellcheck disable=SC2317  # run by run_ok
verify() {
	local n b
	[ -d "$2" ] || { echo "no copy at $2" >>"$RUN.err"; return 1; }
	read -r n b < <(tree_sum "$2")
	if [ "$n" -ne "$3" ] || [ "$b" -ne "$4" ]; then
		echo "copy has $n files of $b bytes, not $3 of $4" >>"$RUN.err"
		return 1
	fi
	if [ "$REP" -eq 1 ]; then
		diff -r -q "$1" "$2" >>"$RUN.err" 2>&1 || { echo "copy differs" >>"$RUN.err"; return 1; }
	fi
}

# one ID - run ID once; a line in RESULTS:
# id rep ok wall bytes links snd_cpu rcv_cpu snd_rss rcv_rss other_cpu
one() {
	local id=$1 s=0 r=0 links=0 tree=$SRC bytes=$TREE_BYTES files=$TREE_FILES copy
	local b0 b1 wall snd rcv srss rrss other ok=1 shares

	picked "$id" || return 0
	RUN=$LOGS/$id.$REP
	rm -rf "${DST:?}"/* "$DST"/.pxfer
	sync
	[ "$WARM_MIB" -gt 0 ] && "$WARM" "$WARM_MIB" >/dev/null
	b0=$(cpu_busy)
	case $id in
	lone) run_lone;;
	m[124]x[124])
		s=${id:1:1} r=${id:3:1}
		run_job "$s" "$r" "$SRC";;
	m4x4r64) s=4 r=4; run_job 4 4 "$SRC" --range-size 64M;;
	split) s=4 r=4; run_split;;
	fpsync) s=1 r=1; run_fpsync;;
	skew4x[14]|nocut4x[14]|fat4x1|fatnocut4x1)
		s=4 r=${id: -1} tree=$SKEW bytes=$SKEW_BYTES files=$SKEW_FILES
		case $id in fat*) shape "${pfx}r0" $((4 * rate));; esac
		case $id in
		*nocut*) run_job "$s" "$r" "$SKEW" --range-size 64G;;
		*) run_job "$s" "$r" "$SKEW" ${SKEW_RANGE:+--range-size "$SKEW_RANGE"};;
		esac
		case $id in fat*) shape "${pfx}r0" "$rate";; esac;;
	*) echo "scaleout: no run '$id'" >&2; exit 2;;
	esac
	b1=$(cpu_busy)
	links=$((s < r ? s : r))
	case $id in fat*) links=4;; esac
	copy=$DST/$(basename "$tree")
	run_ok "$id" 'the copy is wrong' verify "$tree" "$copy" "$files" "$bytes" || ok=0
	read -r wall snd srss rcv rrss other < <(figures rank "$b0" "$b1")
	# a job's busiest rank and receiver: the share of the bytes each moved
	shares='- - -'
	case $id in m*|skew*|nocut*|fat*) shares=$(job_shares "$RUN.out");; esac
	printf '%s\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$REP" $ok "$wall" \
		"$bytes" $links "$snd" "$rcv" "$srss" "$rrss" "$other" "${shares// /$'\t'}" >>"$RESULTS"
	printf '    %-12s %7.2f s %8.1f MiB/s  CPU %s + %s s  RSS %s / %s MiB  other %s CPUs%s\n' \
		"$id" "$wall" "$(calc "$bytes / 1048576 / $wall" .1f)" "$snd" "$rcv" \
		"$srss" "$rrss" "$other" "$([ $ok -eq 1 ] || echo '  FAILED')"
	rm -rf "${DST:?}"/* "$DST"/.pxfer
}

IDS=(lone m1x1 m1x2 m1x4 m2x1 m2x2 m2x4 m4x1 m4x2 m4x4 m4x4r64 split)
[ $have_fpsync -eq 1 ] && IDS+=(fpsync)
IDS+=(skew4x4 skew4x1 nocut4x4 nocut4x1 fat4x1 fatnocut4x1)
run_reps "${IDS[@]}"

# --- the report ---
label() {
	case $1 in
	lone) echo "lone pxfer send, links unshaped";;
	m4x4r64) echo "pxfer job, 4 ranks -> 4 receivers, --range-size 64M";;
	m*) echo "pxfer job, ${1:1:1} rank(s) -> ${1:3:1} receiver(s)";;
	split) echo "4 pxfer sends, split by hand by directory";;
	fpsync) echo "fpsync -n 4 (rsync) -> rsync daemon";;
	skew4x*) echo "skewed tree, 4 ranks -> ${1: -1} receiver(s)";;
	nocut4x*) echo "skewed, --range-size 64G, 4 -> ${1: -1}";;
	fat4x1) echo "skewed, 4 -> 1 receiver of 4x the rate";;
	fatnocut4x1) echo "skewed, --range-size 64G, 4 -> 1 of 4x";;
	esac
}
declare -A RATE_OF WALL_OF RSS_OF SHARE_OF JOB_OF
report() {
	local id wall lo hi n bytes links snd rcv srss rrss other mibs bound frac gib sr sv
	report_head
	echo "tree $TREE_FILES files, $(calc "$TREE_BYTES / 1048576" .0f) MiB; skewed tree $SKEW_FILES files,"
	echo "$(calc "$SKEW_BYTES / 1048576" .0f) MiB; median of $reps ($(nproc) CPUs, $(uname -r))."
	echo
	echo "| run | links | wall s (min-max) | MiB/s | of the links | CPU s ranks / recv | CPU s/GiB | peak RSS rank / recv MiB | other CPUs | busiest rank / recv | runs |"
	echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	for id in "${IDS[@]}"; do
		read -r wall lo hi n < <(stats "$id" 4)
		[ "$n" -gt 0 ] || continue
		bytes=$(stats "$id" 5 | cut -d' ' -f1)
		links=$(stats "$id" 6 | cut -d' ' -f1)
		snd=$(stats "$id" 7 | cut -d' ' -f1)
		rcv=$(stats "$id" 8 | cut -d' ' -f1)
		srss=$(stats "$id" 9 | cut -d' ' -f3)
		rrss=$(stats "$id" 10 | cut -d' ' -f3)
		other=$(stats "$id" 11 | cut -d' ' -f1)
		sr=$(stats "$id" 12 | cut -d' ' -f1)
		sv=$(stats "$id" 13 | cut -d' ' -f1)
		mibs=$(calc "$bytes / 1048576 / $wall" .1f)
		gib=$(calc "($snd + $rcv) / ($bytes / 1073741824)" .2f)
		if [ "$links" -gt 0 ]; then
			bound=$(calc "$links * $LINK_MIBS" .1f)
			frac=$(calc "$mibs / $bound" .2f)x
		else
			frac='-'
			links='(none)'
		fi
		RATE_OF[$id]=$mibs WALL_OF[$id]=$wall RSS_OF[$id]=$srss
		SHARE_OF[$id]=$sv JOB_OF[$id]=$(stats "$id" 14 | cut -d' ' -f1)
		printf '| %s | %s | %.2f (%.2f-%.2f) | %s | %s | %.2f / %.2f | %s | %.1f / %.1f | %.2f | %s / %s | %d/%d |\n' \
			"$(label "$id")" "$links" "$wall" "$lo" "$hi" "$mibs" "$frac" "$snd" "$rcv" \
			"$gib" "$srss" "$rrss" "$other" "$sr" "$sv" "$n" "$reps"
	done
}
# what bounds the 4x4 job: every file goes whole to one receiver, so the
# receiver with the most bytes sets the end; the launcher's start is the
# wall time outside the job's own (rank 0's) time
floor4x4() {
	local tree_mib best got launch ideal
	[ -n "${SHARE_OF[m4x4]:-}" ] && [ "${SHARE_OF[m4x4]}" != - ] || return 0
	[ -n "${JOB_OF[m4x4]:-}" ] && [ "${JOB_OF[m4x4]}" != - ] || return 0
	tree_mib=$(calc "$TREE_BYTES / 1048576" .1f)
	ideal=$(calc "$tree_mib / (4 * $LINK_MIBS)" .2f)
	# the best placement: the large files dealt evenly (2, 2, 1, 1 of six)
	# or the tree's quarter, whichever is more
	best=$(calc "int(($BIG_N + 3) / 4) * $BIG_MIB" .1f)
	best=$(calc "$best > $tree_mib / 4 ? $best : $tree_mib / 4" .1f)
	got=$(calc "${SHARE_OF[m4x4]} * $tree_mib" .1f)
	launch=$(calc "${WALL_OF[m4x4]} - ${JOB_OF[m4x4]}" .2f)
	echo "4x4: 4 links would take $ideal s; the busiest receiver took $got MiB ($(calc "$got / $LINK_MIBS" .2f) s of its link; the best placement of whole files gives $best MiB, $(calc "$best / $LINK_MIBS" .2f) s); the launcher's start took $launch s of the ${WALL_OF[m4x4]} s, the job's own time ${JOB_OF[m4x4]} s"
	echo "4x4 floor: best placement + launcher = $(calc "$best / $LINK_MIBS + $launch" .2f) s, at most $(calc "$ideal / ($best / $LINK_MIBS + $launch)" .2f)x; the job's own time against 4 links: $(calc "$ideal / ${JOB_OF[m4x4]}" .2f)x"
}
judge() {
	local x ideal big links
	headroom
	if [ -n "${RATE_OF[m4x4]:-}" ]; then
		x=$(calc "${RATE_OF[m4x4]} / (4 * $LINK_MIBS)" .2f)
		verdict "$(calc "$x >= 0.9" d)" "4 ranks -> 4 receivers >= 0.9x 4 links (${RATE_OF[m4x4]} MiB/s, ${x}x)"
		floor4x4
	fi
	if [ -n "${RATE_OF[m4x4r64]:-}" ]; then
		x=$(calc "${RATE_OF[m4x4r64]} / (4 * $LINK_MIBS)" .2f)
		verdict "$(calc "$x >= 0.9" d)" "the same with --range-size 64M >= 0.9x 4 links (${RATE_OF[m4x4r64]} MiB/s, ${x}x)"
	fi
	if [ -n "${RATE_OF[split]:-}" ] && [ -n "${RATE_OF[m4x4]:-}" ]; then
		echo "4x4 job / hand split: $(calc "${RATE_OF[m4x4]} / ${RATE_OF[split]}" .2f)x (${RATE_OF[m4x4]} / ${RATE_OF[split]} MiB/s)"
	fi
	if [ -n "${RATE_OF[fpsync]:-}" ] && [ -n "${RATE_OF[m1x1]:-}" ]; then
		echo "1x1 job / fpsync: $(calc "${RATE_OF[m1x1]} / ${RATE_OF[fpsync]}" .2f)x (${RATE_OF[m1x1]} / ${RATE_OF[fpsync]} MiB/s)"
	fi
	for x in skew4x4 skew4x1 nocut4x4 nocut4x1 fat4x1 fatnocut4x1; do
		[ -n "${WALL_OF[$x]:-}" ] || continue
		# the links the job has, and the one link the large file goes
		# through: its receiver's (each file goes whole to one), or with
		# the file not cut, the one rank's that sends it
		case $x in *4x4|fat*) links=4;; *) links=1;; esac
		case $x in fat4x1) big=4;; *) big=1;; esac
		ideal=$(calc "$SKEW_BYTES / 1048576 / ($links * $LINK_MIBS)" .2f)
		big=$(calc "$HUGE_BYTES / 1048576 / ($big * $LINK_MIBS)" .2f)
		verdict "$(calc "${WALL_OF[$x]} <= 1.2 * $ideal" d)" \
			"$(label $x): wall <= 1.2x its bytes over the links (${WALL_OF[$x]} s, ideal $ideal s: $(calc "${WALL_OF[$x]} / $ideal" .2f)x; the large file over one link alone: $big s)"
	done
	# a rank holds a session per receiver, each as a lone send does
	# (docs/scaleout.md, "Memory")
	if [ -n "${RSS_OF[lone]:-}" ]; then
		for x in m1x1 m4x1 m1x4 m4x4 skew4x4; do
			[ -n "${RSS_OF[$x]:-}" ] || continue
			big=${x: -1}
			verdict "$(calc "${RSS_OF[$x]} <= 1.25 * $big * ${RSS_OF[lone]}" d)" \
				"peak RSS of a rank ($(label $x)) <= 1.25x $big lone send(s)' (${RSS_OF[$x]} MiB, $(calc "${RSS_OF[$x]} / ${RSS_OF[lone]}" .1f)x a lone send's ${RSS_OF[lone]} MiB)"
		done
	fi
}

bench_end
