#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_forge: nothing forged gets through. A man in the middle that does
# not know the secret (test/helper/relay) sits between pxfer send and
# pxfer recv on loopback, forwards every connection (the control one and
# the data ones, which the sender opens to the same address), and
# tampers with one chunk or message per run. For each way and each
# protection (the keyed tag by default, --encrypt, and the plain checksum
# where it tells something):
#   - pass: nothing is changed, the tree arrives intact (the control)
#   - rewrite (a chunk's payload replaced, the plain checksum recomputed),
#     flip (a bit of a chunk, or of a sealed control message), replay (a
#     FILE_DONE sent twice), swap (two sealed messages in turn), and a
#     chunk sent twice or dropped: both sides exit 7 and say "integrity
#     error"
#   - rewrite with --integrity checksum is accepted: both sides exit 0 and
#     the relay's bytes are in the files. This is what docs/security.md
#     says the plain checksum gives up, and the test holds it to that
#   - cut a data connection mid-transfer: the other connections take
#     its chunks (failover): both sides exit 0, the sender says which
#     connection failed, and every file arrives
#   - drop (a CREDIT) and cut the control connection mid-transfer: both
#     sides exit non-zero within 60 s; a dropped
#     FILE_END, after which both sides wait, is found by the next PING
#     (5 s): both exit 7; a dropped last chunk of a data connection, which
#     no later chunk reveals, is found from the sender's DATA_SENT within
#     40 s: both exit 7
#   - downgrade (the HELLO asks for the plain checksum instead of
#     --encrypt): the receiver refuses the sender, nothing is written
#   - whatever happened, no file under the receiver's directory differs
#     from its source (some may be missing) and no temporary file is left
#     (except the accepted rewrite, whose files must differ)
#   - every byte that crossed, captured: with --encrypt it holds no run of
#     32 bytes of any source file; without, it does (so the check can
#     fail)
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

RELAY=$HELPERS/relay
[ -x "$RELAY" ] || skip "$RELAY is not built"

# how long a run may take, however it ends
LIMIT=60

src=$T/src
dst=$T/dst
mkdir -p "$src/sub/deep" || fail "mkdir"
# the big one spans many chunks of 256 KiB, the small ones share chunks
head -c 3000000 /dev/urandom >"$src/big"
head -c 700000 /dev/urandom >"$src/sub/mid"
for i in 1 2 3 4 5 6; do
	head -c $((i * 7001)) /dev/urandom >"$src/sub/f$i"
done
head -c 333 /dev/urandom >"$src/sub/deep/small"
# a tree of one file, for the quiet after a dropped FILE_END
mkdir -p "$T/one" || fail "mkdir"
head -c 1000000 /dev/urandom >"$T/one/file"
# the tree tamper sends
tree=$src

# nothing_wrong WHAT - every file under $dst has its source's bytes, and
# no temporary file is left
nothing_wrong()
{
	local f n=0

	while IFS= read -r -d '' f; do
		case ${f##*/} in
		.pxfer-*)
			fail_later "$1: a temporary file is left: $f"
			continue;;
		esac
		if [ ! -f "$T/$f" ]; then
			fail_later "$1: '$f' has no source"
		elif ! cmp -s -- "$T/$f" "$dst/$f"; then
			fail_later "$1: '$dst/$f' differs from its source"
		else
			n=$((n + 1))
		fi
	done < <(cd "$dst" && find . -path ./.pxfer -prune -o \( -type f -o -type l \) -printf '%P\0')
	ok "$1: $n file(s) arrived, none with wrong bytes"
}

# tamper MODE WANT [-n N] [-c CAPTURE] [-- SEND_ARGS...] - a receiver, a
# relay in MODE and a sender through it; WANT is the exit status both
# sides must have, or "fail" for any but 0 (and a timeout). Sets SECS.
tamper()
{
	local mode=$1 want=$2 what rargs=() rc

	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		rargs+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	what="$mode${rargs[*]:+ ${rargs[*]##*/}}${*:+ ($*)}"
	rm -rf "$dst" && mkdir "$dst"
	start_recv "$dst"
	start_relay "$mode" "${rargs[@]}"
	timer_start
	SEND_WRAP=(timeout -k 5 "$LIMIT")
	# a tampered session is to fail, not to be retried
	psend -j 3 --chunk-size 256K --retries 0 "$@" "$tree" "127.0.0.1:$RELAY_PORT"
	SEND_WRAP=()
	wait_recv "$LIMIT"
	SECS=$(timer_secs)
	stop_relay
	if [ "$mode" != pass ] && ! grep -q . "$RELAY_LOG"; then
		fail_later "$what: the relay did nothing (too few chunks or messages?)"
		return 1
	fi
	for rc in "send:$SEND_RC" "recv:$WAIT_RC"; do
		case $want:${rc#*:} in
		fail:0 | fail:124 | fail:137)
			fail_later "$what: ${rc%:*} exited ${rc#*:} after $SECS s, expected a failure within $LIMIT s";;
		fail:*) ;;
		*)
			[ "${rc#*:}" = "$want" ] ||
				fail_later "$what: ${rc%:*} exited ${rc#*:} after $SECS s, expected $want";;
		esac
	done
	if [ "$want" = 7 ]; then
		check_grep "integrity error" "$SEND_ERR" "$what: the sender"
		check_grep "integrity error" "$RECV_LOG" "$what: the receiver"
	fi
	ok "$what: the relay: $(tr '\n' ' ' <"$RELAY_LOG")"
	ok "$what: send exited $SEND_RC, recv $WAIT_RC, after $SECS s: $(head -n 1 "$SEND_ERR")"
}

# every file of the source, for --find-runs
mapfile -d '' sources < <(find "$src" -type f -print0)

note "pass: nothing changed, every byte captured"
for prot in "" "--encrypt" "--integrity checksum"; do
	# shellcheck disable=SC2086
	tamper pass 0 -c "$T/capture" -- $prot
	tree_equal "$src" "$dst/src"
	if "$RELAY" --find-runs "$T/capture" "${sources[@]}" >"$T/runs"; then
		found=0
	else
		found=$?
	fi
	case $prot:$found in
	--encrypt:0)
		ok "with --encrypt no run of 32 bytes of plaintext crossed: $(tail -n 1 "$T/runs")";;
	--encrypt:*)
		fail_later "with --encrypt, plaintext crossed the wire (status $found): $(tr '\n' '|' <"$T/runs")";;
	*:1)
		ok "${prot:-the default}: the plaintext crossed, as it should: $(tail -n 1 "$T/runs")";;
	*)
		fail_later "${prot:-the default}: the checker found no plaintext in the capture (status $found): it cannot be trusted";;
	esac
done

note "rewrite a chunk's payload"
tamper rewrite 7
nothing_wrong "rewrite"
tamper rewrite 7 -- --encrypt
nothing_wrong "rewrite, --encrypt"
# the plain checksum is unkeyed: the relay fixes it up, and the receiver
# cannot tell (docs/security.md, "What the plain checksum gives up")
tamper rewrite 0 -- --integrity checksum
if grep -rqa "FORGED-BY-RELAY" "$dst"; then
	ok "rewrite, --integrity checksum: accepted, the relay's bytes are in the files, as documented"
else
	fail_later "rewrite, --integrity checksum: the relay's bytes are in no file"
fi

note "flip a bit of a chunk, or of a sealed control message"
for prot in "" "--encrypt" "--integrity checksum"; do
	# shellcheck disable=SC2086
	tamper flip 7 -- $prot
	nothing_wrong "flip${prot:+, $prot}"
done
# the control messages stay sealed whatever protects the chunks
for prot in "" "--integrity checksum"; do
	# shellcheck disable=SC2086
	tamper flip-ctl 7 -n 2 -- $prot
	nothing_wrong "flip-ctl${prot:+, $prot}"
done

note "replay a FILE_DONE, swap two sealed messages"
for prot in "" "--integrity checksum"; do
	# shellcheck disable=SC2086
	tamper replay 7 -- $prot
	nothing_wrong "replay${prot:+, $prot}"
done
for prot in "" "--encrypt"; do
	# shellcheck disable=SC2086
	tamper swap 7 -- $prot
	nothing_wrong "swap${prot:+, $prot}"
done

note "replay a chunk, drop one: the next is out of sequence"
# one data connection, so that the chunk after the third is on its
# connection
tamper replay 7 -t CHUNK -n 3 -- -j 1
nothing_wrong "replay CHUNK"
tamper drop 7 -t CHUNK -n 3 -- -j 1 --encrypt
nothing_wrong "drop CHUNK, --encrypt"

note "cut a data connection: the others take its chunks"
tamper cut 0 -n 3
nothing_wrong "cut"
check_grep "data connection [0-9] \(.*\) failed: .*go again over the 2 left" \
	"$SEND_ERR" "cut: the sender"
# (DIR/.pxfer, the receiver's store and its key, is not a file that arrived)
arrived=$(find "$dst" -path "$dst/.pxfer" -prune -o -type f -print | wc -l)
[ "$arrived" -eq "$(find "$tree" -type f | wc -l)" ] ||
	fail_later "cut: $arrived of $(find "$tree" -type f | wc -l) files arrived"

note "drop a CREDIT, cut the control connection: both sides fail in bounded time"
tamper drop fail
nothing_wrong "drop"
tamper drop fail -n 2 -- --encrypt
nothing_wrong "drop, --encrypt"
tamper cut-ctl fail -n 3
nothing_wrong "cut-ctl"
# both sides wait: the sender for FILE_DONE, the receiver for FILE_END
tree=$T/one
tamper drop 7 -t FILE_END
nothing_wrong "drop FILE_END"
# the last of the file's four chunks: no chunk after it shows the gap,
# but the sender says how many it sent (DATA_SENT) once its connection
# is quiet, and the receiver waits 20 s for them, not its idle timeout
tamper drop 7 -t CHUNK -n 4 -- -j 1
nothing_wrong "drop the last CHUNK"
check_num "seconds to fail after the last chunk was dropped" "${SECS%.*}" -le 40
check_grep "nothing more for [0-9]+ s: the last were dropped" "$RECV_LOG" \
	"drop the last CHUNK: the receiver"
tree=$src

note "downgrade: the HELLO asks for the plain checksum, not --encrypt"
rm -rf "$dst" && mkdir "$dst"
start_server "$dst"
start_relay downgrade
psend --encrypt "$src" "127.0.0.1:$RELAY_PORT"
stop_relay
grep -q . "$RELAY_LOG" || fail_later "downgrade: the relay did nothing"
expect_rc 3 "$SEND_RC" "downgrade: the sender"
ok "downgrade: the sender is refused: $(head -n 1 "$SEND_ERR")"
[ -z "$(ls -A "$dst")" ] || fail_later "downgrade: the receiver wrote: $(ls -A "$dst")"
recv_alive || fail_later "downgrade: the receiver is gone"
stop_recv

finish
