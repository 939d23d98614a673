#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_damaged: a partial file whose data was damaged on the receiver's
# disk after its journal recorded it (docs/pxfer.1, RESUMING AND
# SKIPPING). A 120 MiB file is interrupted (its sender killed once 16 MiB
# of it are on the receiver's disk), the store is kept aside, and each
# case starts from it:
#   - 4 KiB zeroed inside a range the journal holds: the receiver reads
#     its held ranges back, finds the damage, discards the partial and
#     names it in its log; the file is sent whole (nothing resumed) and
#     arrives equal, both sides exit 0
#   - the data file truncated to nothing and extended back to its size:
#     the same
#   - the partial left alone: it is resumed (bytes_resumed > 0), equal
#   - 4 KiB zeroed, with --resume trust: nothing reads the held data
#     back, so the damage is not seen and everything held is resumed, as
#     docs/pxfer.1 says of trust (what arrives is then wrong: the test
#     holds trust to skipping the read, not to the bytes)
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# rec_len FILE N - the length of the range of record N of journal FILE
rec_len()
{
	od -An -tu4 --endian=big -j $(($(journal_hdr "$1") + 32 * $2 + 8)) -N 4 "$1" |
		tr -d ' '
}

size=$((120 << 20))
src=$T/src
mkdir -p "$src" || fail "mkdir"
big=$src/big
head -c "$size" /dev/urandom >"$big" || fail "cannot write"
dst=$T/dst
mkdir "$dst" || fail "mkdir"
start_server "$dst" --json

note "a 120 MiB file, its sender killed once 16 MiB are on the receiver's disk"
n=$(recv_sessions)
bg_send -q -j 2 "$big" "$(target)"
if ! step_until 60 "$SEND_PID" arrived "$dst" 16; then
	sed 's/^/    send: /' "$SEND_ERR"
	fail "16 MiB of the file did not arrive within 60 s"
fi
kill -KILL "$SEND_PID"
wait_pid "$SEND_PID" 10
wait_for 30 sessions_over "$n" ||
	fail "the receiver did not end the killed sender's session within 30 s"
[ -z "$(finals "$dst")" ] || fail "the file was complete before its sender was killed"
wait_for 10 has_records "$dst" 2 ||
	fail "the receiver's journal holds fewer than 2 records"
j=$(journal "$dst")
key=$(basename "$j" .jnl)
part=$dst/.pxfer/partial/$key.part
off=$(journal_off "$j" 0)
len=$(rec_len "$j" 0)
[ "$len" -ge 8192 ] || fail "the journal's first record holds $len bytes, 8 KiB needed"
ok "the journal holds $(journal_records "$j") records; the first: $len bytes at $off"
snap=$T/snap
cp -a "$dst/.pxfer" "$snap" || fail "cannot copy the partial store"

# put_back - the receiver's state as the interrupted run left it
put_back()
{
	rm -rf "$dst/.pxfer" "$dst/big" || fail "cannot remove"
	cp -a "$snap" "$dst/.pxfer" || fail "cannot copy the partial store"
	mark=$(wc -l <"$RECV_LOG")
}

# discarded WHAT - check that the receiver's log, since put_back, names
# the partial it discarded, and that nothing was resumed
discarded()
{
	local lines

	lines=$(tail -n +$((mark + 1)) "$RECV_LOG")
	if grep -q "discarded.*$key\.part" <<<"$lines"; then
		ok "the receiver says: $(grep -m 1 "discarded.*$key\.part" <<<"$lines")"
	else
		printf '    recv: %s\n' "${lines//$'\n'/$'\n'    recv: }" >&2
		fail_later "$1: the receiver's log does not name the discarded partial $key.part"
	fi
	check_num "$1: bytes resumed" "${J[bytes_resumed]}" -eq 0
	check_num "$1: bytes sent" "${J[bytes_sent]}" -eq "$size"
	check_grep "failed its checks" "$SEND_ERR" "$1: the sender" &&
		ok "the sender says: $(grep -m 1 'failed its checks' "$SEND_ERR")"
}

note "4 KiB zeroed inside a held range: discarded, sent whole"
put_back
dd if=/dev/zero of="$part" bs=4096 count=1 seek=$((off / 4096 + 1)) \
	conv=notrunc status=none || fail "dd"
json_run_ok -j 2 "$big" "$(target)"
file_equal "$big" "$dst/big"
discarded "zeroed"

note "the data file truncated to nothing and extended back: the same"
put_back
truncate -s 0 "$part" || fail "truncate"
truncate -s "$size" "$part" || fail "truncate"
json_run_ok -j 2 "$big" "$(target)"
file_equal "$big" "$dst/big"
discarded "truncated"

note "the partial left alone: resumed"
put_back
json_run_ok -j 2 "$big" "$(target)"
file_equal "$big" "$dst/big"
resumed=${J[bytes_resumed]}
check_num "bytes resumed" "$resumed" -gt 0
check_num "bytes sent and resumed" $((J[bytes_sent] + resumed)) -eq "$size"
if grep -q "discarded" <(tail -n +$((mark + 1)) "$RECV_LOG"); then
	fail_later "an undamaged partial was discarded: $(grep -m 1 discarded "$RECV_LOG")"
fi

note "4 KiB zeroed, --resume trust: nothing reads the held data back"
# trust takes the receiver's disk at its journal's word (docs/pxfer.1):
# the damage is not seen, and what is held is resumed whole
put_back
dd if=/dev/zero of="$part" bs=4096 count=1 seek=$((off / 4096 + 1)) \
	conv=notrunc status=none || fail "dd"
json_run_ok -j 2 --resume trust "$big" "$(target)"
check_num "bytes resumed with --resume trust" "${J[bytes_resumed]}" -eq "$resumed"
if grep -q "discarded" <(tail -n +$((mark + 1)) "$RECV_LOG"); then
	fail_later "with --resume trust the receiver read its partial back: $(grep -m 1 discarded "$RECV_LOG")"
else
	ok "the receiver did not read its partial back"
fi
stop_recv
finish
