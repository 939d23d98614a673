#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_protect: how file data is protected, as the user chooses it.
#   - each protection (the keyed tag by default, with either cipher; the
#     plain checksum; --encrypt with either cipher) moves a tree with a
#     large file and small ones intact, and the receiver's log and --json
#     say which one the session used
#   - --integrity checksum with --encrypt, and unknown values of
#     --integrity and --cipher: exit 2 before anything is sent
#   - recv --require-encrypt: a plain sender (default or checksum) is
#     refused, exits 1 (a refused session) with the receiver's reason
#     (naming --encrypt), and nothing is written; an encrypting sender is
#     served
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

src=$T/src
dst=$T/dst
mkdir -p "$src/sub" "$dst" || fail "mkdir"
head -c 5000000 /dev/urandom >"$src/big"
for i in $(seq 1 40); do
	head -c $((i * 211)) /dev/urandom >"$src/sub/f$i"
done

check_mode()
{
	local want=$1

	shift
	rm -rf "$dst" && mkdir "$dst"
	start_recv "$dst" --json
	send_ok -j 3 --chunk-size 256K "$@" "$src" "$(target)"
	wait_recv
	expect_rc 0 "$WAIT_RC" "receiver with send $*"
	tree_equal "$src" "$dst/src"
	grep -qF "\"protection\":\"$want\"" "$RECV_LOG" ||
		fail "the receiver's --json does not say '$want': $(cat "$RECV_LOG")"
	ok "send $*: intact, $want"
}

note "every protection moves the tree intact"
check_mode "authenticated (gmac)"
check_mode "authenticated (gmac)" --cipher aes-256-gcm
check_mode "authenticated (poly1305)" --cipher chacha20-poly1305
check_mode "plain checksum (xxh3)" --integrity checksum
check_mode "encrypted (aes-256-gcm)" --encrypt
check_mode "encrypted (chacha20-poly1305)" --encrypt --cipher chacha20-poly1305
check_mode "encrypted (aes-256-gcm)" --encrypt --integrity mac

note "options that do not go together, or do not exist"
for args in "--encrypt --integrity checksum" "--integrity sha1" \
	    "--cipher aes-128-cbc" "--integrity"; do
	# shellcheck disable=SC2086
	psend $args "$src" 127.0.0.1:1
	expect_rc 2 "$SEND_RC" "send $args"
	ok "send $args: exit 2: $(head -n 1 "$SEND_ERR")"
done

note "recv --require-encrypt"
rm -rf "$dst" && mkdir "$dst"
start_server "$dst" --require-encrypt
for args in "" "--integrity checksum"; do
	# shellcheck disable=SC2086
	psend $args "$src" "$(target)"
	expect_rc 1 "$SEND_RC" "a plain sender ($args) to --require-encrypt"
	expect_grep "encrypt" "$SEND_ERR" "the refused sender"
	ok "a plain sender${args:+ ($args)} is refused: $(head -n 1 "$SEND_ERR")"
done
[ -z "$(ls -A "$dst")" ] || fail "the receiver wrote for a refused sender: $(ls -A "$dst")"
wait_for 5 grep -q "require-encrypt" "$RECV_LOG" ||
	fail "the receiver did not say why it refused: $(cat "$RECV_LOG")"
ok "the receiver says: $(grep -m1 'require-encrypt' "$RECV_LOG")"
send_ok --encrypt "$src" "$(target)"
tree_equal "$src" "$dst/src"
ok "an encrypting sender is served"
stop_recv

finish
