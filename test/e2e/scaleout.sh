#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_scaleout: one transfer made by every rank of a job (docs/scaleout.md).
#   - bad --to lists are usage errors that name the problem (an empty
#     list, a receiver file that is missing or names none, a bad port);
#   - without a launcher, --to with two receivers: each file whole on
#     exactly one of them (the large one, cut in ranges, too), every
#     directory on both with its mode and mtime, one summary;
#   - under Open MPI's 'mpirun --oversubscribe -np 4' and a real one-node
#     Slurm's 'srun -n 4 --mpi=pmix' (started and stopped here), a tree of
#     one 1 GiB file, 20 files of 50 MiB and 10,000 small ones to two
#     receivers sharing one destination: intact with modes and mtimes,
#     one summary (rank 0's), --json shows the large file's ranges sent
#     by more than one rank, every rank exits 0;
#   - the same command again sends nothing (every file is there).
# A rank or a receiver lost mid-job: e2e/nodes.sh.
# Skips what needs mpirun or Slurm when they are missing.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# the processes' environment is the launcher's alone
launcher_env
limit=300

scratch 6144
src=$SCRATCH/src

# jq_ KEY FILE - a top-level figure of the JSON object in FILE
jq_()
{
	python3 -c 'import json, sys; print(json.load(open(sys.argv[2]))[sys.argv[1]])' "$1" "$2"
}

note "bad receivers' lists"
mkdir -p "$T/one" && printf 'x\n' >"$T/one/f"
psend "$T/one" --to ''
expect_rc 2 "$SEND_RC" "--to ''"
check_grep "empty receiver|names no receiver" "$SEND_ERR" "--to ''"
psend "$T/one" --to "@$T/missing"
expect_rc 2 "$SEND_RC" "--to @missing"
check_grep "cannot read the receivers' file" "$SEND_ERR" "--to @missing"
printf '# none here\n\n' >"$T/empty.list"
psend "$T/one" --to "@$T/empty.list"
expect_rc 2 "$SEND_RC" "--to @empty"
check_grep "names no receiver" "$SEND_ERR" "--to @empty"
psend "$T/one" --to 127.0.0.1:99999,127.0.0.1
expect_rc 2 "$SEND_RC" "--to with port 99999"
check_grep "PORT of '127\\.0\\.0\\.1:99999'" "$SEND_ERR" "--to with port 99999"
ok "bad lists refused with exit 2, each naming the problem"

# Under ThreadSanitizer (make tsan) every byte costs several times more:
# the same shapes, smaller, and ranges of 64 MiB so that there are some
case $build in
*tsan*) BIG_MIB=256 MID_MIB=10 RANGE=(--range-size 64M) ;;
*) BIG_MIB=1024 MID_MIB=50 RANGE=() ;;
esac
note "making the tree: $BIG_MIB MiB, 20 x $MID_MIB MiB, 10,000 small files"
mkdir -p "$src/big" "$src/mid"
head -c $((BIG_MIB << 20)) /dev/urandom >"$src/big/one-gib" || fail "writing $BIG_MIB MiB"
for i in $(seq -w 1 20); do
	head -c $((MID_MIB << 20)) /dev/urandom >"$src/mid/m$i"
done
for a in $(seq 0 99); do
	mkdir -p "$src/small/d$a"
done
# 10,000 files of 0..4 KiB, cut from one random stream
head -c $((10000 * 2048)) /dev/urandom >"$T/stream"
awk 'BEGIN { for (i = 0; i < 10000; i++) print i, (i * 7919) % 4097 }' |
while read -r i n; do
	printf '%s\n' "$i $n"
done >"$T/sizes"
python3 - "$T/stream" "$src/small" "$T/sizes" <<'PY' || fail "writing the small files"
import sys
data = open(sys.argv[1], 'rb').read()
off = 0
for line in open(sys.argv[3]):
    i, n = map(int, line.split())
    with open(f"{sys.argv[2]}/d{i % 100}/f{i}", 'wb') as f:
        f.write(data[off:off + n])
    off = (off + n) % (len(data) - 4096)
PY
chmod 0750 "$src/mid"
chmod 0600 "$src/mid/m01"
touch -d '2001-02-03 04:05:06' "$src/big/one-gib" "$src/small/d7"
[ "$(find "$src" -type f | wc -l)" -eq 10021 ] || fail "the tree does not have 10,021 files"
ok "tree made in $SCRATCH"

# --- without a launcher: two receivers, each its own directory ---
note "no launcher: --to two receivers, each file on one"
r1=$SCRATCH/r1 r2=$SCRATCH/r2
mkdir -p "$r1" "$r2"
start_server "$r1"
P1=$RECV_PORT R1PID=$RECV_PID
start_server "$r2"
P2=$RECV_PORT R2PID=$RECV_PID
send_ok -j 2 --range-size 64M --json "$src/mid" "$src/big" \
	--to "127.0.0.1:$P1,127.0.0.1:$P2"
# every file whole on exactly one receiver, and only there
n1=0 n2=0
while IFS= read -r -d '' f; do
	if [ -e "$r1/$f" ] && [ -e "$r2/$f" ]; then
		fail "$f arrived at both receivers"
	elif [ -e "$r1/$f" ]; then
		cmp -s "$src/$f" "$r1/$f" || fail "$r1/$f differs"
		n1=$((n1 + 1))
	elif [ -e "$r2/$f" ]; then
		cmp -s "$src/$f" "$r2/$f" || fail "$r2/$f differs"
		n2=$((n2 + 1))
	else
		fail "$f arrived nowhere"
	fi
done < <(cd "$src" && find mid big -type f -print0)
[ $((n1 + n2)) -eq 21 ] || fail "21 files expected, $n1 + $n2 arrived"
if [ "$n1" -eq 0 ] || [ "$n2" -eq 0 ]; then
	fail "the files were not spread: $n1 and $n2"
fi
for r in "$r1" "$r2"; do
	[ "$(stat -c %a "$r/mid")" = 750 ] || fail "$r/mid has mode $(stat -c %a "$r/mid")"
	[ "$(stat -c %Y "$r/mid")" = "$(stat -c %Y "$src/mid")" ] ||
		fail "$r/mid has another mtime than the source's"
done
check_num "files in the --json" "$(jq_ files "$SEND_OUT")" -eq 21
check_num "receivers in the --json" "$(jq_ receivers "$SEND_OUT")" -eq 2
ok "21 files spread $n1 / $n2 over the two receivers, each whole once; directories on both"
kill -TERM "$R1PID" "$R2PID"
wait_pid "$R1PID" 20
wait_pid "$R2PID" 20
rm -rf "$r1" "$r2"

# job_check DST LOG JSON WHAT - the job's copy in DST is the tree, one
# summary was printed, and the large file's ranges came from several ranks
job_check()
{
	local ranks

	tree_equal "$src" "$1/src"
	[ "$(grep -c '^pxfer: sent ' "$2")" -eq 1 ] ||
		{ cat "$2" >&2; fail "$4: not exactly one summary"; }
	ranks=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print(sum(1 for r in j["per_rank"] if r["ranges"] > 0))' "$3") ||
		{ cat "$3" >&2; fail "$4: no --json object"; }
	[ "$ranks" -ge 2 ] || { cat "$3" >&2; fail "$4: the ranges came from $ranks rank(s)"; }
	ok "$4: intact, one summary, ranges of the 1 GiB file sent by $ranks ranks"
}

# two receivers on one destination, as DTNs on a shared file system
dst=$SCRATCH/dst
start_pair()
{
	rm -rf "$dst"
	mkdir -p "$dst"
	start_server "$dst"
	P1=$RECV_PORT R1PID=$RECV_PID
	start_server "$dst"
	P2=$RECV_PORT R2PID=$RECV_PID
}
stop_pair()
{
	kill -TERM "$R1PID" "$R2PID" 2>/dev/null
	wait_pid "$R1PID" 20
	wait_pid "$R2PID" 20
}

if command -v mpirun >/dev/null; then
	note "mpirun --oversubscribe -np 4"
	start_pair
	timeout -k 5 $limit mpirun --oversubscribe -np 4 "$PXFER" send -j 2 "${RANGE[@]}" --json \
		"$src" --to "127.0.0.1:$P1,127.0.0.1:$P2" >"$T/mpirun.json" 2>"$T/mpirun.err" ||
		{ cat "$T/mpirun.err" >&2; fail "mpirun -np 4 pxfer send: exit $?"; }
	timeout -k 5 $limit mpirun --oversubscribe -np 4 "$PXFER" send -j 2 \
		"$src" --to "127.0.0.1:$P1,127.0.0.1:$P2" >"$T/mpirun2.out" 2>"$T/mpirun2.err" ||
		{ cat "$T/mpirun2.err" >&2; fail "mpirun -np 4 pxfer send, again: exit $?"; }
	grep -q '^pxfer: sent 0 files' "$T/mpirun2.err" ||
		{ cat "$T/mpirun2.err" >&2; fail "mpirun, again: files were sent again"; }
	stop_pair
	# what a job refuses: --bind (one host's address), and ranks given
	# other PATHs than rank 0's
	timeout -k 5 $limit mpirun --oversubscribe -np 2 "$PXFER" send --bind 127.0.0.1 \
		"$T/one" --to "127.0.0.1:$P1" >"$T/bind.out" 2>"$T/bind.err" &&
		fail "mpirun, --bind: the job ran"
	check_grep "--bind names one address of one host" "$T/bind.err" "mpirun, --bind"
	# (rank 1 is given one PATH more, named "1")
	# shellcheck disable=SC2016
	timeout -k 5 $limit mpirun --oversubscribe -np 2 bash -c \
		'exec "$0" send ${OMPI_COMM_WORLD_RANK/#0/} "$@"' "$PXFER" "$T/one" \
		--to "127.0.0.1:$P1" >"$T/other.out" 2>"$T/other.err" &&
		fail "mpirun, ranks given other paths: the job ran"
	check_grep "other paths or receivers than rank 0" "$T/other.err" "mpirun, other paths"
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/mpirun.json" ||
		fail "mpirun: not one JSON object on stdout"
	# the summary is rank 0's: run once more for it, on the tree there
	job_check "$dst" "$T/mpirun2.err" "$T/mpirun.json" "mpirun -np 4"
else
	note "mpirun is missing: its case is skipped"
fi

# --- Slurm ---
if ! command -v srun >/dev/null; then
	note "Slurm is missing: its cases are skipped"
	finish
fi
# shellcheck source=../lib/slurm.sh
. "$(dirname "$0")/../lib/slurm.sh"
start_slurm

note "srun -n 4 --mpi=pmix"
start_pair
timeout -k 5 $limit srun -n 4 --mpi=pmix -t 5 "$PXFER" send -j 2 "${RANGE[@]}" --json \
	"$src" --to "127.0.0.1:$P1,127.0.0.1:$P2" >"$T/srun.json" 2>"$T/srun.err" ||
	{ cat "$T/srun.err" >&2; fail "srun -n 4 pxfer send: exit $?"; }
timeout -k 5 $limit srun -n 4 --mpi=pmix -t 5 "$PXFER" send -j 2 \
	"$src" --to "127.0.0.1:$P1,127.0.0.1:$P2" >"$T/srun2.out" 2>"$T/srun2.err" ||
	{ cat "$T/srun2.err" >&2; fail "srun -n 4 pxfer send, again: exit $?"; }
grep -q '^pxfer: sent 0 files' "$T/srun2.err" ||
	{ cat "$T/srun2.err" >&2; fail "srun, again: files were sent again"; }
job_check "$dst" "$T/srun2.err" "$T/srun.json" "srun -n 4 --mpi=pmix"

stop_pair
stop_slurm || fail "processes of the test's Slurm were left running"
finish
