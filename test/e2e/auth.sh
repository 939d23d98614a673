#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_auth: the shared secret.
#   - a sender with the wrong secret exits 3 and says to check the secret;
#     the receiver writes nothing at all (not even temporary files), says
#     why, and keeps serving: a correct sender then succeeds
#   - the secret may come from --secret-file on either side (a trailing
#     newline is not part of it); a secret file that its group or others
#     may read or write is refused on either side (exit 2, saying 'chmod
#     600 FILE'), unless it comes on standard input ('-')
#   - a secret shorter than 16 characters: exit 2, on both sides
#   - a secret too weak to resist an offline guess (a 16-letter word, a
#     repeated pattern, a run: under 96 bits by the rule of 'man pxfer'),
#     from the environment or a file: exit 2, on both sides, before
#     anything is sent
#   - no secret at all: the sender exits 2 naming PXFER_SECRET; the
#     receiver makes up a token, prints it, and a sender using it succeeds
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

src=$T/src
dst=$T/dst
mkdir -p "$src/sub" "$dst" || fail "mkdir"
head -c 3000000 /dev/urandom >"$src/data"
printf 'small\n' >"$src/sub/small"

note "wrong secret"
start_server "$dst" --once
PXFER_SECRET=not-the-right-secret-at-all psend -j 2 "$src" "$(target)"
expect_rc 3 "$SEND_RC" "sender with the wrong secret"
expect_grep "secret" "$SEND_ERR" "sender with the wrong secret"
ok "the sender exits 3: $(grep -i secret "$SEND_ERR" | head -n 1)"
[ -z "$(ls -A "$dst")" ] || fail "the receiver wrote something for an unauthenticated sender: $(ls -A "$dst")"
ok "the receiver's directory is still empty"
wait_for 5 grep -qi "authentication failed" "$RECV_LOG" ||
	fail "the receiver did not say that authentication failed: $(cat "$RECV_LOG")"
ok "the receiver says: $(grep -i 'authentication failed' "$RECV_LOG")"
recv_alive || fail "the receiver (--once) stopped after a refused sender"

note "a wrong secret from a file, with several data connections asked for"
printf 'another-wrong-secret-0000\n' >"$T/wrong.key"
chmod 600 "$T/wrong.key"
psend -j 8 --secret-file "$T/wrong.key" "$src" "$(target)"
expect_rc 3 "$SEND_RC" "sender with a wrong --secret-file"
[ -z "$(ls -A "$dst")" ] || fail "the receiver wrote something: $(ls -A "$dst")"
recv_alive || fail "the receiver stopped after a second refused sender"
ok "refused again; the receiver still serves"

note "then the right secret"
send_ok -q -j 2 "$src" "$(target)"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver (--once) after refusing two senders"
tree_equal "$src" "$dst/src"

note "the secret from --secret-file on both sides (with a trailing newline)"
printf '%s\n' "$PXFER_SECRET" >"$T/right.key"
chmod 600 "$T/right.key"
rm -rf "$dst" && mkdir "$dst"
PXFER_SECRET='' start_recv "$dst" --secret-file "$T/right.key"
(unset PXFER_SECRET; exec timeout 60 "$PXFER" send -q --secret-file - "$src" "$(target)" \
	<"$T/right.key" >"$T/sf.out" 2>&1)
rc=$?
[ $rc -eq 0 ] || { cat "$T/sf.out"; fail "send with --secret-file - exited $rc"; }
wait_recv
expect_rc 0 "$WAIT_RC" "receiver with --secret-file"
tree_equal "$src" "$dst/src"

note "a secret shorter than 16 characters"
PXFER_SECRET=short-secret psend "$src" 127.0.0.1:1
expect_rc 2 "$SEND_RC" "sender with a 12-character secret"
expect_grep "too short|16" "$SEND_ERR" "sender with a short secret"
ok "sender: $(head -n 1 "$SEND_ERR")"
PXFER_SECRET=fifteen-chars-x timeout 20 "$PXFER" recv --once --port "$(free_port)" \
	--dir "$dst" >"$T/short.log" 2>&1
rc=$?
expect_rc 2 $rc "receiver with a 15-character secret"
expect_grep "too short|16" "$T/short.log" "receiver with a short secret"
ok "receiver: $(head -n 1 "$T/short.log")"
printf 'tiny\n' >"$T/tiny.key"
chmod 600 "$T/tiny.key"
psend --secret-file "$T/tiny.key" "$src" 127.0.0.1:1
expect_rc 2 "$SEND_RC" "sender with a short --secret-file"
ok "short --secret-file: $(head -n 1 "$SEND_ERR")"

note "a secret too weak to resist an offline guess"
for weak in internationalism passwordpassword aaaaaaaaaaaaaaaaaaaaaaaa1 Password1234!!!!; do
	PXFER_SECRET=$weak psend "$src" 127.0.0.1:1
	expect_rc 2 "$SEND_RC" "sender with the secret '$weak'"
	expect_grep "secret in \\\$PXFER_SECRET is too weak .*about [0-9]+ bits, 96 needed" \
		"$SEND_ERR" "sender with the secret '$weak'"
done
ok "sender: $(head -n 1 "$SEND_ERR")"
PXFER_SECRET=internationalism timeout 20 "$PXFER" recv --once --port "$(free_port)" \
	--dir "$dst" >"$T/weak.log" 2>&1
rc=$?
expect_rc 2 $rc "receiver with a 16-letter word as its secret"
expect_grep "too weak" "$T/weak.log" "receiver with a weak secret"
ok "receiver: $(head -n 1 "$T/weak.log")"
printf 'internationalism\n' >"$T/weak.key"
chmod 600 "$T/weak.key"
(unset PXFER_SECRET; exec timeout 20 "$PXFER" recv --once --port "$(free_port)" \
	--dir "$dst" --secret-file "$T/weak.key") >"$T/weakfile.log" 2>&1
rc=$?
expect_rc 2 $rc "receiver with a weak --secret-file"
expect_grep "secret in '$T/weak.key' is too weak" "$T/weakfile.log" "receiver with a weak --secret-file"
ok "receiver, from a file: $(head -n 1 "$T/weakfile.log")"

note "a secret file that others may read or write"
for mode in 0640 0604 0620 0666; do
	chmod "$mode" "$T/right.key"
	psend --secret-file "$T/right.key" "$src" 127.0.0.1:1
	expect_rc 2 "$SEND_RC" "sender with a secret file of mode $mode"
	expect_grep "secret file '$T/right.key' is open to others than its owner \\(mode $mode\\): run 'chmod 600 $T/right.key'" \
		"$SEND_ERR" "sender with a secret file of mode $mode"
done
ok "sender: $(head -n 1 "$SEND_ERR")"
chmod 0644 "$T/right.key"
(unset PXFER_SECRET; exec timeout 20 "$PXFER" recv --once --port "$(free_port)" \
	--dir "$dst" --secret-file "$T/right.key") >"$T/open.log" 2>&1
rc=$?
expect_rc 2 $rc "receiver with a secret file of mode 0644"
expect_grep "run 'chmod 600 $T/right.key'" "$T/open.log" "receiver with a secret file of mode 0644"
ok "receiver: $(head -n 1 "$T/open.log")"
note "... unless it comes on standard input"
rm -rf "$dst" && mkdir "$dst"
chmod 600 "$T/right.key"
PXFER_SECRET='' start_recv "$dst" --secret-file "$T/right.key"
chmod 0644 "$T/right.key"
(unset PXFER_SECRET; exec timeout 60 "$PXFER" send -q --secret-file - "$src" "$(target)" \
	<"$T/right.key" >"$T/stdin.out" 2>&1)
rc=$?
[ $rc -eq 0 ] || { cat "$T/stdin.out"; fail "send with --secret-file - from a 0644 file exited $rc"; }
wait_recv
expect_rc 0 "$WAIT_RC" "receiver with a 0600 --secret-file"
tree_equal "$src" "$dst/src"

note "no secret at all"
(unset PXFER_SECRET; exec timeout 20 "$PXFER" send "$src" 127.0.0.1:1) >"$T/none.log" 2>&1
rc=$?
expect_rc 2 $rc "sender without a secret"
expect_grep "PXFER_SECRET" "$T/none.log" "sender without a secret"
ok "sender: $(head -n 1 "$T/none.log")"

note "a receiver without a secret makes one up and prints it"
rm -rf "$dst" && mkdir "$dst"
saved=$PXFER_SECRET
unset PXFER_SECRET
start_server "$dst" --once
export PXFER_SECRET=$saved
wait_for 5 grep -q "PXFER_SECRET=" "$RECV_LOG" || fail "no token printed: $(cat "$RECV_LOG")"
token=$(sed -n 's/.*PXFER_SECRET=\([^[:space:]]*\).*/\1/p' "$RECV_LOG" | head -n 1)
[ "${#token}" -ge 16 ] || fail "the printed token '$token' is shorter than 16 characters"
ok "token printed (${#token} characters)"
PXFER_SECRET=$saved psend -q "$src" "$(target)"
expect_rc 3 "$SEND_RC" "sender with the old secret against a generated token"
PXFER_SECRET=$token send_ok -q "$src" "$(target)"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver with a generated token"
tree_equal "$src" "$dst/src"
