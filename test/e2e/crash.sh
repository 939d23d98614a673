#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_crash: what a receiver that dies (SIGKILL) loses of a large file is
# bounded by time as well as by bytes (docs/architecture.md, "Partial
# files"): a record reaches the journal about a second after its data
# arrived, even when the file gets no more data meanwhile.
#   - a 64 MiB file whose sender runs in short steps until 4 MiB of it
#     are on the receiver's disk, and is then left stopped (the
#     receiver's ring is 1 MiB, so that little more arrives), and its
#     partial gets nothing more; 2 s later the receiver is killed
#     (SIGKILL). Less than 12 MiB must have arrived, well below
#     PXFER_PARTIAL_FLUSH (16 MiB), or it is tried again (5 times at
#     most). A new receiver and the same command: bytes_resumed is 2 MiB
#     or more (what arrived reached the journal; a bound by bytes alone
#     resumed nothing), and the file arrives equal
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

src=$T/src
dst=$T/dst
mkdir -p "$src" "$dst" || fail "mkdir"
head -c 64M /dev/urandom >"$src/big" || fail "cannot write the test file"

# attempt - a receiver (1 MiB of ring: what arrives once the sender is
# stopped is what is in flight, little more), killed 2 s after 4 MiB of
# the file arrived, its sender stopped meanwhile. 1 when more than 12 MiB
# arrived (the sender's last step went far), to be tried again
attempt()
{
	rm -rf "$dst"
	mkdir "$dst" || fail "mkdir"
	start_server "$dst" --json --ring-mem 1M
	bg_send -q -j 1 --chunk-size 64K --retries 0 "$src/big" "$(target)"
	if ! creep 60 "$SEND_PID" arrived "$dst" 4; then
		sed 's/^/    send: /' "$SEND_ERR"
		fail "4 MiB of the file did not arrive within 60 s"
	fi
	sleep 2
	kill -KILL "$RECV_PID"
	wait_pid "$RECV_PID" 10
	kill -KILL "$SEND_PID"
	wait_pid "$SEND_PID" 10
	[ -e "$dst/big" ] && fail "the file has its name: it was complete"
	! arrived "$dst" 12
}

note "the receiver killed 2 s after 4 MiB of a 64 MiB file arrived, its sender stopped"
for ((try = 1; ; try++)); do
	attempt && break
	[ "$try" -lt 5 ] || fail "12 MiB or more arrived in each of 5 tries: the test needs less than PXFER_PARTIAL_FLUSH (16 MiB)"
	note "more than 12 MiB arrived: again"
done
ok "killed with $(find "$dst/.pxfer/partial" -name '*.part' -printf '%b\n' |
	head -n 1) blocks of 512 bytes on disk"

note "a new receiver: what arrived before the kill is resumed"
start_server "$dst" --json
psend --json -q -j 1 "$src/big" "$(target)"
send_stats
expect_rc 0 "$SEND_RC" "the second send"
check_num "bytes resumed after the kill" "${J[bytes_resumed]}" -ge $((2 << 20))
file_equal "$src/big" "$dst/big"
stop_recv
finish
