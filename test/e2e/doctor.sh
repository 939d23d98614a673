#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_doctor: pxfer doctor on a host without RDMA (test/rdma/cases.sh,
# case doctor, checks it on Soft-RoCE).
#   - no RDMA device, --transport auto: exit 0, a note that says so with
#     the fix (modprobe rdma_rxe, rdma link add, --transport tcp), one
#     section per topic and the summary line
#   - --transport rdma 127.0.0.1: exit 1, the problem named (no RDMA
#     device); --transport tcp 127.0.0.1: exit 0
#   - a HOST that does not resolve: exit 1, "cannot resolve"
#   - memlock 64 KiB without CAP_IPC_LOCK and --transport rdma: exit 1,
#     the memlock problem with the 'ulimit -l' fix; with CAP_IPC_LOCK
#     (root) the limit is no problem, and the report says why
#   - io_uring refused (test/helper/no_io_uring): a note that pxfer falls
#     back to pread/pwrite, exit 0
#   - bad usage (two hosts, an unknown option, an option doctor does not
#     take, --device with --transport tcp): exit 2; --help: exit 0
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

OUT=$T/out
ERR=$T/err

# doctor ARGS... - run pxfer doctor; DOC_RC its status, OUT and ERR its
# output
doctor()
{
	"$PXFER" doctor "$@" >"$OUT" 2>"$ERR"
	DOC_RC=$?
	sed 's/^/    | /' "$OUT"
}

if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
	have_rdma=1
	echo "note: this host has RDMA devices; the checks of a host without them are skipped"
else
	have_rdma=0
fi

if [ $have_rdma = 0 ]; then
	note "no RDMA device, --transport auto: exit 0 with a note and the fix"
	doctor
	expect_rc 0 "$DOC_RC" "pxfer doctor without RDMA devices"
	check_grep "^note: no RDMA device on this host" "$OUT" "the no-device note"
	check_grep "^  fix: .*modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IF; or use --transport tcp" \
		"$OUT" "the no-device fix"
	for s in "RDMA devices" memlock io_uring "open files"; do
		check_grep "^$s\$" "$OUT" "the section '$s'"
	done
	check_grep "^0 problem\(s\), [0-9]+ note\(s\): nothing found would stop a transfer\$" \
		"$OUT" "the summary line"
	[ -s "$ERR" ] && fail_later "pxfer doctor wrote to stderr: $(cat "$ERR")"
	ok "exit 0: $(grep -m 1 '^note:' "$OUT")"

	note "--transport rdma 127.0.0.1: exit 1, naming the problem"
	doctor --transport rdma 127.0.0.1
	expect_rc 1 "$DOC_RC" "pxfer doctor --transport rdma 127.0.0.1 without RDMA devices"
	check_grep "^problem: no RDMA device on this host\$" "$OUT" "the problem" &&
		ok "exit 1: $(grep -m 1 '^problem:' "$OUT")"
	check_grep "^[1-9][0-9]* problem\(s\), .*a transfer would stop" "$OUT" "the summary line"

	note "--transport tcp 127.0.0.1: exit 0"
	doctor --transport tcp 127.0.0.1
	expect_rc 0 "$DOC_RC" "pxfer doctor --transport tcp 127.0.0.1"
	check_grep "^ok: --transport tcp: a transfer to 127.0.0.1 does not use RDMA" "$OUT" "tcp"
fi

note "a HOST that does not resolve: exit 1"
doctor no-such-host.invalid
expect_rc 1 "$DOC_RC" "pxfer doctor no-such-host.invalid"
check_grep "^problem: cannot resolve no-such-host.invalid" "$OUT" "the unresolved HOST"

note "memlock 64 KiB, --transport rdma: the memlock problem and its fix"
# as root, CAP_IPC_LOCK pins beyond any limit: drop it
nocap=()
if [ "$(id -u)" = 0 ]; then
	command -v setpriv >/dev/null ||
		skip "setpriv (util-linux) is needed to drop CAP_IPC_LOCK as root"
	nocap=(setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock --)
fi
(ulimit -S -l 64 && exec "${nocap[@]}" "$PXFER" doctor --transport rdma) >"$OUT" 2>"$ERR"
DOC_RC=$?
sed -n '/^memlock$/,/^$/p' "$OUT" | sed 's/^/    | /'
expect_rc 1 "$DOC_RC" "pxfer doctor --transport rdma with memlock 64 KiB"
check_grep "^problem: cannot register .* the memlock limit is 64.0 KiB \(raise it with 'ulimit -l [0-9]+' or more" \
	"$OUT" "the memlock problem" && ok "$(grep -m 1 -o 'problem: cannot register.*KiB' "$OUT")"
check_grep "^  fix: .*memlock unlimited.*/etc/security/limits.conf.*LimitMEMLOCK=infinity" \
	"$OUT" "the memlock fix"

if [ "$(id -u)" = 0 ]; then
	note "memlock 64 KiB as root: CAP_IPC_LOCK pins beyond it"
	(ulimit -S -l 64 && exec "$PXFER" doctor --transport tcp) >"$OUT" 2>"$ERR"
	DOC_RC=$?
	expect_rc 0 "$DOC_RC" "pxfer doctor --transport tcp as root with memlock 64 KiB"
	check_grep "^ok: the memlock limit is 64.0 KiB, but this process may pin beyond it \(CAP_IPC_LOCK\)" \
		"$OUT" "memlock with CAP_IPC_LOCK"
fi

NOURING=$HELPERS/no_io_uring
if [ -x "$NOURING" ] && "$NOURING" true 2>/dev/null; then
	note "io_uring refused: a note, pread/pwrite, exit 0"
	"$NOURING" "$PXFER" doctor --transport tcp >"$OUT" 2>"$ERR"
	DOC_RC=$?
	sed -n '/^io_uring$/,/^$/p' "$OUT" | sed 's/^/    | /'
	expect_rc 0 "$DOC_RC" "pxfer doctor without io_uring"
	check_grep "^note: io_uring is unavailable here \(Function not implemented\): pxfer reads and writes files with pread/pwrite" \
		"$OUT" "the io_uring note"
	check_grep "^  fix: .*seccomp" "$OUT" "the io_uring fix names the filter"
else
	echo "note: no_io_uring cannot run here; io_uring's note is not checked"
fi

note "bad usage: exit 2; --help: exit 0"
for args in "10.0.0.1 10.0.0.2" "--no-such-option" "--port 7471" "--secret-file /dev/null" \
	    "--transport tcp --device rxe0" "--transport carrier-pigeon" "--gid-index x"; do
	# shellcheck disable=SC2086 # the arguments are words
	doctor $args
	expect_rc 2 "$DOC_RC" "pxfer doctor $args"
	[ -s "$ERR" ] || fail_later "pxfer doctor $args: exit 2 and nothing on stderr"
	ok "pxfer doctor $args: exit 2: $(head -n 1 "$ERR")"
done
"$PXFER" doctor --help >"$OUT" 2>"$ERR"
expect_rc 0 $? "pxfer doctor --help"
check_grep "^usage: pxfer doctor \[options\] \[HOST\]" "$OUT" "the usage"
check_grep "^  1  a problem" "$OUT" "the exit statuses"
"$PXFER" --help >"$OUT" 2>"$ERR"
check_grep "^  doctor  check this host" "$OUT" "pxfer --help lists doctor"
finish
